/**
 * One session, live: its transcript with each model step, each tool call and its result (collapsible), provenance
 * lines and run boundaries with status, usage, attempt and steps (run-steps.ts); runs going or suspended; the reply
 * streaming in; a composer with a queue mode; its label and archive mark.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, clip, duration, enc, time } from '../api.js';
import { html } from '../html.js';
import { useLive } from '../live.js';
import { attemptNote, RunSteps, runState, SuspendedRun } from './run-steps.js';
import type {
  AnnotatedSessionAnswer,
  CancelAnswer,
  HistoryAnswer,
  RunsAnswer,
  SendAnswer,
  SessionAnswer,
} from '../../../src/http/answers.js';
import type { RunRecord } from '../../../src/ports/runs.js';
import type { Provenance, TranscriptEntry } from '../../../src/ports/sessions.js';

const MODES = ['followup', 'steer', 'collect', 'interrupt', 'notify'];
/** The newest entries a session page reads. */
const HISTORY = 2000;

/** A part of an entry's content (the AI SDK's message parts), as far as the page shows one; a note's content is a string. */
interface ContentPart {
  type?: string;
  text?: string;
  toolName?: string;
  input?: unknown;
  /** A tool's result: `{ type, value }`, or the value itself in older transcripts. */
  output?: unknown;
}

function provenanceLine(provenance: Provenance | null): string | null {
  if (!provenance) return null;
  const from = provenance.sourceAgent ? ` from ${provenance.sourceAgent}` : provenance.peer ? ` from ${provenance.peer}` : '';
  const via = provenance.channel ? ` via ${provenance.channel}` : '';
  const step = provenance.exchange ? ` (exchange ${provenance.exchange.step})` : provenance.subagent ? ' (sub-agent)' : '';
  return `${provenance.kind}${from}${via}${step}`;
}

function Part({ part }: { part: string | ContentPart }) {
  if (typeof part === 'string') return html`<div class="text">${part}</div>`;
  switch (part.type) {
    case 'text':
      return html`<div class="text">${part.text}</div>`;
    case 'tool-call':
      return html`<details class="tool"><summary>tool call <b>${part.toolName}</b> ${clip(JSON.stringify(part.input ?? {}), 80)}</summary><pre>${JSON.stringify(part.input, null, 2)}</pre></details>`;
    case 'tool-result': {
      const output = (part.output as { value?: unknown } | null | undefined)?.value ?? part.output;
      return html`<details class="tool result"><summary>result of <b>${part.toolName}</b> ${clip(JSON.stringify(output ?? null), 80)}</summary><pre>${JSON.stringify(output, null, 2)}</pre></details>`;
    }
    default:
      return html`<pre class="muted">${JSON.stringify(part)}</pre>`;
  }
}

function EntryView({ entry }: { entry: TranscriptEntry }) {
  const parts = (Array.isArray(entry.content) ? entry.content : [entry.content]) as (string | ContentPart)[];
  const line = provenanceLine(entry.provenance);
  return html`
    <div class=${`entry ${entry.role}`} data-testid="entry">
      <div class="meta">
        <b>${entry.role}</b> <span class="muted">${time(entry.createdAt)}</span>
        ${line && html` <span class="provenance">${line}</span>`}
        ${entry.inputId && html` <a class="muted" href=${`#/path/${enc(entry.inputId)}`}>path</a>`}
      </div>
      ${parts.map((part) => html`<${Part} part=${part} />`)}
    </div>
  `;
}

/** A message sent from this page, shown at once and until its entry is in the transcript. */
interface Pending {
  inputId: string;
  text: string;
  mode: string;
}

/** Whether the page is scrolled to (near) its end, so that new entries keep it there. */
const atEnd = () => innerHeight + scrollY >= document.documentElement.scrollHeight - 80;

export function SessionPage({ sessionKey }: { sessionKey: string }) {
  const [session, setSession] = useState<SessionAnswer | null>(null);
  // True when the session does not exist yet: the page offers the composer, whose first message starts it.
  const [fresh, setFresh] = useState(false);
  const [entries, setEntries] = useState<TranscriptEntry[]>([]);
  const [runs, setRuns] = useState<Map<string, RunRecord>>(new Map());
  const [live, setLive] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending[]>([]);
  // The label being typed: kept apart from the record, so that a live refresh does not wipe it.
  const [labelDraft, setLabelDraft] = useState<string | null>(null);
  const [stopping, setStopping] = useState<string | null>(null);
  const followEnd = useRef(true);
  useLive(
    {
      query: { sessionKey, deltas: true },
      resumeKey: `session:${sessionKey}`,
      refresh: async () => {
        try {
          const [described, history, runList] = await Promise.all([
            api<SessionAnswer>(`/v1/sessions/${enc(sessionKey)}`),
            api<HistoryAnswer>(`/v1/sessions/${enc(sessionKey)}/history?limit=${HISTORY}`),
            api<RunsAnswer>(`/v1/runs?sessionKey=${enc(sessionKey)}&limit=1000`),
          ]);
          followEnd.current = followEnd.current || atEnd();
          setSession(described);
          setFresh(false);
          setEntries(history.entries);
          setRuns(new Map(runList.runs.map((run) => [run.id, run])));
          const shown = new Set(history.entries.map((entry) => entry.inputId));
          setPending((list) => list.filter((item) => !shown.has(item.inputId)));
        } catch (failure) {
          if (failure instanceof ApiError && failure.code === 'SESSION_NOT_FOUND' && /^agent:[^:]+:/.test(sessionKey)) setFresh(true);
          else setError((failure as Error).message);
        }
      },
      onEvent: (event) => {
        if (event.type === 'run.completed' || event.type === 'run.interrupted') setLive('');
      },
      onDelta: (delta) => setLive((text) => text + delta.text),
      everyMs: 200,
    },
    [sessionKey],
  );
  // The page opens at the newest entries, and stays at the end as entries come while it is there.
  useEffect(() => {
    if (!followEnd.current || (!session && !fresh)) return;
    followEnd.current = false;
    scrollTo(0, document.documentElement.scrollHeight);
  }, [entries, pending, live, session, fresh]);
  const send = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    const message = data.get('message') as string;
    try {
      const answer = await api<SendAnswer>('/v1/send', {
        method: 'POST',
        body: { target: sessionKey, message, mode: data.get('mode') },
      });
      setSent(`accepted (${answer.mode})`);
      followEnd.current = true;
      setPending((list) => [...list, { inputId: answer.inputId, text: message, mode: answer.mode }]);
      (form.elements.namedItem('message') as HTMLTextAreaElement).value = '';
    } catch (failure) {
      setSent((failure as Error).message);
    }
  };
  const stop = async (runId: string) => {
    setStopping(runId);
    try {
      const answer = await api<CancelAnswer>(`/v1/runs/${enc(runId)}/cancel`, { method: 'POST' });
      setSent(answer.cancelled ? 'stopping the run' : 'the run had ended already');
    } catch (failure) {
      setSent((failure as Error).message);
      setStopping(null);
    }
  };
  const annotate = async (change: { label?: string | null; archived?: boolean }) => {
    try {
      const answer = await api<AnnotatedSessionAnswer>(`/v1/sessions/${enc(sessionKey)}`, { method: 'PATCH', body: change });
      // The toolbar that annotates is shown only with the session read.
      setSession({ ...session!, session: answer.session });
      if ('label' in change) setLabelDraft(null);
    } catch (failure) {
      setSent((failure as Error).message);
    }
  };
  if (error) return html`<p class="error">${error}</p>`;
  if (!session && !fresh) return html`<p>Loading…</p>`;
  const record = session?.session;
  const running = [...runs.values()].filter((run) => run.status === 'running');
  const suspended = [...runs.values()].filter((run) => run.status === 'suspended');
  let lastRun: string | null = null;
  return html`
    <h1>${sessionKey}</h1>
    ${
      record
        ? html`<div class="toolbar">
      <span>agent <b>${record.agentId}</b></span>
      <span>state <b data-testid="session-state">${record.state}</b></span>
      ${record.parentKey && html`<a href=${`#/session/${enc(record.parentKey)}`}>parent</a>`}
      <input aria-label="label" placeholder="label" value=${labelDraft ?? record.label ?? ''} onInput=${(e: Event) => setLabelDraft((e.target as HTMLInputElement).value)} onChange=${(e: Event) => annotate({ label: (e.target as HTMLInputElement).value.trim() || null })} />
      <button onClick=${() => annotate({ archived: !record.archivedAt })}>${record.archivedAt ? 'unarchive' : 'archive'}</button>
    </div>`
        : html`<p class="muted" data-testid="fresh">No message in this session yet: the first one you send starts the conversation.</p>`
    }
    ${entries.length === HISTORY && html`<p class="muted">The newest ${HISTORY} entries are shown; <code>switchboard sessions history</code> reads older ones.</p>`}
    <div class="transcript" data-testid="transcript">
      ${entries.map((entry) => {
        const boundary = entry.runId && entry.runId !== lastRun ? runs.get(entry.runId) : null;
        lastRun = entry.runId ?? lastRun;
        return html`${boundary && html`<div class="run" data-testid="run">run ${boundary.id.slice(0, 8)} · <b data-testid="run-state">${runState(boundary)}</b> · ${boundary.model} · ${boundary.endedAt ? duration(boundary.endedAt - boundary.startedAt) : 'running'} · ${boundary.usage.inputTokens}+${boundary.usage.outputTokens} tokens, ${boundary.usage.steps} steps${attemptNote(boundary)}<${RunSteps} run=${boundary} /></div>`}<${EntryView} entry=${entry} />`;
      })}
      ${pending.map(
        (item) =>
          html`<div class="entry user pending" data-testid="pending"><div class="meta"><b>user</b> <span class="muted">${item.mode} · ${running.length > 0 ? 'in the run' : 'waiting for a run'}</span></div><div class="text">${item.text}</div></div>`,
      )}
      ${suspended.map((run) => html`<${SuspendedRun} run=${run} />`)}
      ${running.map(
        (run) =>
          html`<div class="run working" data-testid="working">run ${run.id.slice(0, 8)} · <b>working</b> on ${run.model}${attemptNote(run)}
          <button class="danger" disabled=${stopping === run.id} onClick=${() => stop(run.id)}>${stopping === run.id ? 'Stopping…' : 'Stop'}</button><${RunSteps} run=${run} /></div>`,
      )}
      ${live && html`<div class="entry assistant live" data-testid="live"><div class="meta"><b>assistant</b> <span class="muted">streaming</span></div><div class="text">${live}</div></div>`}
    </div>
    <form class="composer" onSubmit=${send}>
      <textarea name="message" rows="3" placeholder="a message to this session" aria-label="message" required></textarea>
      <select name="mode" aria-label="queue mode">${MODES.map((mode) => html`<option value=${mode}>${mode}</option>`)}</select>
      <button type="submit">Send</button>
      ${sent && html`<span class="muted" data-testid="sent">${sent}</span>`}
    </form>
  `;
}
