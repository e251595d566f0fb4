/**
 * Approvals (docs/console.md, docs/gates.md): the tool calls and budget raises waiting for a person, pending first, and
 * one request whole (its arguments, the command or the diff, why it asked) with Approve, Deny and, where the request
 * is editable, approve with edited arguments. The count of pending requests is shown in the navigation, live.
 */
import { useState } from 'preact/hooks';
import { api, clip, dollars, duration, enc, time } from '../api.js';
import { html } from '../html.js';
import { useLive, useNow, useVisible } from '../live.js';
import type { ApprovalRecord } from '../../../src/ports/gates.js';

/** `GET /v1/approvals`. */
interface ApprovalsAnswer {
  approvals: ApprovalRecord[];
  pending: number;
}

/** `GET /v1/approvals/<id>` and the answer of approve and deny. */
interface ApprovalAnswer {
  approval: ApprovalRecord;
}

/** The most requests the list reads. */
const LIST_LIMIT = 200;

/** Requests come and go with `approval.requested` and `approval.decided`. */
const useApprovalEvents = (refresh: () => unknown, resumeKey: string, deps: unknown[] = []) =>
  useLive({ query: { type: 'approval.' }, resumeKey, refresh }, deps);

/**
 * The count of pending requests in the navigation: read when the console opens, and again after each approval event.
 * Its stream is open only while the tab is shown (and the count read again when it is shown again): a browser allows
 * six connections to a host over HTTP/1.1, and every console tab already holds its page's stream.
 */
export function PendingBadge() {
  const [pending, setPending] = useState(0);
  const visible = useVisible();
  return html`${visible && html`<${PendingFollower} onCount=${setPending} />`}${
    pending > 0 && html` <span class="badge" data-testid="pending-count" title=${`${pending} waiting for an answer`}>${pending}</span>`
  }`;
}

function PendingFollower({ onCount }: { onCount: (pending: number) => void }) {
  useApprovalEvents(
    () =>
      api<ApprovalsAnswer>('/v1/approvals?limit=1').then(
        (answer) => onCount(answer.pending),
        () => undefined,
      ),
    'pending-badge',
  );
  return null;
}

/** What the request is about, in a line: the command, the path, the remote agent, or the budget's key. */
function what(approval: ApprovalRecord): string {
  const details = approval.details as Record<string, unknown>;
  if (approval.kind === 'budget') return `raise ${approval.subject} to ${amount(approval.args)}`;
  for (const key of ['subject', 'path', 'agent', 'url', 'task'])
    if (typeof details[key] === 'string' && details[key]) return details[key] as string;
  return JSON.stringify(approval.args ?? {});
}

/** Tokens and dollars (`costMicros` is in millionths of a US dollar) of a budget's figures. */
function amount(value: unknown): string {
  if (value === null || typeof value !== 'object') return String(value ?? '');
  const { tokens, costMicros } = value as { tokens?: number; costMicros?: number };
  const parts: string[] = [];
  if (typeof tokens === 'number') parts.push(`${tokens.toLocaleString('en-US')} tokens`);
  if (typeof costMicros === 'number') parts.push(dollars(costMicros));
  return parts.length > 0 ? parts.join(' · ') : JSON.stringify(value);
}

/** "in 59 min 58 s", or "due now" once its time passed (the gateway marks it expired when it next looks). */
function expiresIn(approval: ApprovalRecord, now: number): string {
  if (approval.status !== 'pending') return '';
  return approval.expiresAt > now ? `in ${duration(approval.expiresAt - now)}` : 'due now';
}

function answerLine(approval: ApprovalRecord): string {
  if (approval.status === 'pending') return 'pending';
  return `${approval.status} by ${approval.decidedBy ?? '?'} ${time(approval.decidedAt)}${approval.note ? `: ${approval.note}` : ''}`;
}

function Asker({ approval }: { approval: ApprovalRecord }) {
  return html`<b>${approval.agentId}</b><br /><a href=${`#/session/${enc(approval.sessionKey)}`}>${approval.sessionKey}</a><br /><span class="muted" title=${approval.runId}>run ${approval.runId.slice(0, 8)}${approval.step >= 0 ? `, step ${approval.step}` : ''}</span>`;
}

export function ApprovalsPage() {
  const [answered, setAnswered] = useState(false);
  const [data, setData] = useState<ApprovalsAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const now = useNow();
  useApprovalEvents(
    () =>
      api<ApprovalsAnswer>(`/v1/approvals?status=${answered ? 'all' : 'pending'}&limit=${LIST_LIMIT}`).then(
        (answer) => {
          setData(answer);
          setError(null);
        },
        (failure: Error) => setError(failure.message),
      ),
    `approvals:${answered ? 'all' : 'pending'}`,
    [answered],
  );
  if (error && !data) return html`<p class="error">${error}</p>`;
  if (!data) return html`<p>Loading…</p>`;
  // Pending first (oldest first: the one that waits longest, and expires first), then the answered ones, newest first.
  const pending = data.approvals.filter((approval) => approval.status === 'pending').sort((a, b) => a.requestedAt - b.requestedAt);
  const rest = data.approvals.filter((approval) => approval.status !== 'pending');
  const rows = [...pending, ...rest];
  return html`
    <h1>Approvals</h1>
    <div class="toolbar">
      <span><b data-testid="approvals-pending">${data.pending}</b> pending</span>
      <label><input type="checkbox" checked=${answered} onChange=${(e: Event) => setAnswered((e.target as HTMLInputElement).checked)} /> show answered ones</label>
      <a href="#/budgets">budgets</a>
      ${error && html`<span class="error">${error}</span>`}
    </div>
    ${
      rows.length === 0
        ? html`<p data-testid="no-approvals">${answered ? 'No approval request yet.' : 'Nothing waits for an answer.'} A call is asked about when a <code>tools.ask</code> pattern matches it, and a budget raise when <code>budgets.onLimit</code> is <code>ask</code> (docs/gates.md).</p>`
        : html`<table>
            <thead><tr><th>asked by</th><th>what</th><th>why</th><th>asked</th><th>expires</th><th>status</th></tr></thead>
            <tbody>${rows.map(
              (approval) => html`<tr data-testid="approval" class=${approval.status === 'pending' ? 'pending' : 'answered'}>
                <td><${Asker} approval=${approval} /></td>
                <td><a href=${`#/approvals/${enc(approval.id)}`} data-testid="approval-open"><b>${approval.kind === 'tool' ? approval.subject : 'budget'}</b></a> <code>${clip(what(approval), 120)}</code></td>
                <td>${approval.reason}</td>
                <td>${time(approval.requestedAt)}</td>
                <td>${approval.status === 'pending' ? html`<span title=${time(approval.expiresAt)}>${expiresIn(approval, now)}</span> <span class="muted">(then ${approval.onExpiry})</span>` : ''}</td>
                <td>${answerLine(approval)}</td>
              </tr>`,
            )}</tbody>
          </table>`
    }
    ${data.approvals.length === LIST_LIMIT && html`<p class="muted">The newest ${LIST_LIMIT} are shown; <code>switchboard approvals list --limit</code> reads more.</p>`}
  `;
}

/** A unified diff, a line each: added lines green, removed ones red, the headers and hunks apart. */
export function Diff({ text }: { text: string }) {
  const kind = (line: string) =>
    line.startsWith('+++ ') || line.startsWith('--- ')
      ? 'file'
      : line.startsWith('@@')
        ? 'hunk'
        : line.startsWith('+')
          ? 'add'
          : line.startsWith('-')
            ? 'del'
            : 'same';
  return html`<pre class="diff" data-testid="diff">${text.split('\n').map((line) => html`<span class=${kind(line)}>${`${line}\n`}</span>`)}</pre>`;
}

/** The request's details as a person reads them: each field a row, a budget's figures in tokens and dollars. */
function Details({ approval }: { approval: ApprovalRecord }) {
  const { diff, ...rest } = approval.details as { diff?: unknown } & Record<string, unknown>;
  const shown = (value: unknown) =>
    typeof value === 'string'
      ? value
      : value !== null && typeof value === 'object' && ('tokens' in value || 'costMicros' in value)
        ? amount(value)
        : JSON.stringify(value);
  return html`
    <table class="details" data-testid="details">
      <tbody>${Object.entries(rest).map(([key, value]) => html`<tr><th>${key}</th><td><code>${shown(value)}</code></td></tr>`)}</tbody>
    </table>
    ${typeof diff === 'string' && (diff ? html`<h2>Change</h2><${Diff} text=${diff} />` : html`<p class="muted">The write changes nothing in the file as it is now.</p>`)}
  `;
}

export function ApprovalPage({ id }: { id: string }) {
  const [approval, setApproval] = useState<ApprovalRecord | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [answerError, setAnswerError] = useState<string | null>(null);
  const [note, setNote] = useState('');
  // The edited arguments being typed: kept apart from the record, so that a live refresh does not wipe them.
  const [draft, setDraft] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const now = useNow();
  useApprovalEvents(
    () =>
      api<ApprovalAnswer>(`/v1/approvals/${enc(id)}`).then(
        (answer) => setApproval(answer.approval),
        (failure: Error) => setError(failure.message),
      ),
    `approval:${id}`,
    [id],
  );
  const answer = async (verb: 'approve' | 'deny', edited?: boolean) => {
    const body: { note?: string; args?: unknown } = {};
    if (note.trim()) body.note = note.trim();
    if (edited) {
      try {
        body.args = JSON.parse(draft ?? JSON.stringify(approval!.args));
      } catch (failure) {
        setAnswerError(`The edited arguments are not JSON: ${(failure as Error).message}`);
        return;
      }
      if (body.args === null || typeof body.args !== 'object' || Array.isArray(body.args)) {
        setAnswerError('The edited arguments must be a JSON object, e.g. {"command": "ls"}.');
        return;
      }
    }
    setBusy(true);
    try {
      const decided = await api<ApprovalAnswer>(`/v1/approvals/${enc(id)}/${verb}`, { method: 'POST', body });
      setApproval(decided.approval);
      setAnswerError(null);
    } catch (failure) {
      // Answered already (by another person, or the expiry), or edited arguments the tool's schema refuses.
      setAnswerError((failure as Error).message);
      void api<ApprovalAnswer>(`/v1/approvals/${enc(id)}`).then(
        (fresh) => setApproval(fresh.approval),
        () => undefined,
      );
    } finally {
      setBusy(false);
    }
  };
  if (!approval) return error ? html`<p class="error">${error}</p>` : html`<p>Loading…</p>`;
  const pending = approval.status === 'pending';
  return html`
    <p><a href="#/approvals">← approvals</a></p>
    <h1>${approval.kind === 'tool' ? `${approval.subject} call` : `Raise budget ${approval.subject}`}</h1>
    <p>
      <span data-testid="approval-status" class=${pending ? 'warn' : ''}>${answerLine(approval)}</span>
      ${pending && html` · expires ${expiresIn(approval, now)} (${time(approval.expiresAt)}), then ${approval.onExpiry === 'deny' ? 'denied' : 'allowed'}`}
    </p>
    <table class="details">
      <tbody>
        <tr><th>asked by</th><td>agent <b>${approval.agentId}</b> in <a href=${`#/session/${enc(approval.sessionKey)}`}>${approval.sessionKey}</a>, run <span title=${approval.runId}>${approval.runId.slice(0, 8)}</span>${approval.step >= 0 ? `, step ${approval.step}` : ''}</td></tr>
        <tr><th>why</th><td data-testid="approval-reason">${approval.reason}</td></tr>
        <tr><th>asked</th><td>${time(approval.requestedAt)}</td></tr>
        <tr><th>id</th><td><code>${approval.id}</code></td></tr>
      </tbody>
    </table>
    <h2>${approval.kind === 'tool' ? 'What it would run' : 'The budget'}</h2>
    <${Details} approval=${approval} />
    <h2>${approval.kind === 'tool' ? 'Arguments' : 'Proposed limit'}</h2>
    <pre data-testid="approval-args">${JSON.stringify(approval.args, null, 2)}</pre>
    ${approval.editedArgs !== null && html`<h2>Ran with</h2><pre data-testid="approval-edited">${JSON.stringify(approval.editedArgs, null, 2)}</pre>`}
    ${
      pending &&
      html`<form class="decide" onSubmit=${(e: Event) => e.preventDefault()}>
        <div class="toolbar">
          <input class="note" aria-label="reason" placeholder="reason (the model reads it on a deny)" value=${note} onInput=${(e: Event) => setNote((e.target as HTMLInputElement).value)} />
          <button type="button" class="active" disabled=${busy} onClick=${() => answer('approve')}>Approve</button>
          <button type="button" class="danger" disabled=${busy} onClick=${() => answer('deny')}>Deny</button>
        </div>
        ${
          approval.editable &&
          html`<details class="edit">
            <summary>approve with edited arguments</summary>
            <textarea aria-label="edited arguments" rows="8" spellcheck="false" value=${draft ?? JSON.stringify(approval.args, null, 2)} onInput=${(e: Event) => setDraft((e.target as HTMLTextAreaElement).value)}></textarea>
            <div class="toolbar"><button type="button" disabled=${busy} onClick=${() => answer('approve', true)}>Approve with these arguments</button>
            <span class="muted">checked against the tool's schema before it runs</span></div>
          </details>`
        }
      </form>`
    }
    ${answerError && html`<p class="error" data-testid="answer-error">${answerError}</p>`}
  `;
}
