/**
 * The approval requests of an editor's session, asked in the editor (docs/runtimes.md, "Switchboard in your editor"):
 * while a prompt is in flight, each pending request of its session becomes a `session/request_permission`, and the
 * editor's choice is the answer (`POST /v1/approvals/<id>/approve` or `/deny`, by `acp:<agentId>`).
 *
 * Contract: a request is asked at most once per prompt. A `cancelled` outcome leaves it pending, for the CLI, the
 * console or the next prompt. An answer given elsewhere first withdraws the question (`$/cancel_request`, which an
 * editor may ignore); the editor's later answer then changes nothing, as the gateway keeps the first one.
 */
import type { AgentContext, PermissionOption, ToolCallContent, ToolCallUpdate, ToolKind } from '@agentclientprotocol/sdk';
import { SwitchboardError } from '../core/errors.js';
import type { ApprovalRecord } from '../ports/index.js';

/** The control API calls this needs (the CLI's ControlClient has them). */
export interface ApprovalsControl {
  request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
}

const APPROVE = 'approve';
const DENY = 'deny';
const OPTIONS: PermissionOption[] = [
  { optionId: APPROVE, name: 'Allow once', kind: 'allow_once' },
  { optionId: DENY, name: 'Reject', kind: 'reject_once' },
];

const KINDS: Record<string, ToolKind> = {
  exec: 'execute',
  write_file: 'edit',
  edit_file: 'edit',
  read_file: 'read',
  list_files: 'read',
  search_files: 'read',
};

export class EditorApprovals {
  /** Every request this prompt has looked at, so that the list and the event stream do not ask twice. */
  private readonly seen = new Set<string>();
  /** The questions still open in the editor (or about to be asked): aborting one withdraws it. */
  private readonly open = new Map<string, AbortController>();
  private closed = false;

  constructor(
    private readonly control: ApprovalsControl,
    private readonly client: AgentContext,
    private readonly session: { sessionId: string; agentId: string },
    /** Called with the tool call id of each request asked, so that the run's own report of the call updates it. */
    private readonly asked: (toolCallId: string) => void,
    /** Stdout is the protocol: what goes wrong is said here (stderr). */
    private readonly warn: (message: string) => void,
  ) {}

  /** Once the prompt's event stream is open: requests made before it are asked too. */
  async askPending(): Promise<void> {
    const query = `/v1/approvals?status=pending&session=${encodeURIComponent(this.session.sessionId)}`;
    const listed = await this.control.request<{ approvals: ApprovalRecord[] }>('GET', query).catch((error: unknown) => {
      this.warn(`could not list the session's approval requests: ${messageOf(error)}`);
      return { approvals: [] };
    });
    await Promise.all(listed.approvals.map((approval) => this.ask(approval.id, approval)));
  }

  /** An event of the session's stream: `approval.requested` asks, `approval.decided` withdraws the question. */
  onEvent(type: string, payload: Record<string, unknown>): void {
    const id = payload.approvalId;
    if (typeof id !== 'string') return;
    if (type === 'approval.requested') void this.ask(id);
    else if (type === 'approval.decided') {
      this.seen.add(id);
      this.open.get(id)?.abort();
    }
  }

  /** The prompt ended: questions still open are withdrawn and their requests stay pending. */
  close(): void {
    this.closed = true;
    for (const question of this.open.values()) question.abort();
  }

  /** Never rejects: what goes wrong is warned about, and the request stays pending. */
  private async ask(id: string, known?: ApprovalRecord): Promise<void> {
    if (this.seen.has(id) || this.closed) return;
    this.seen.add(id);
    const question = new AbortController();
    this.open.set(id, question);
    try {
      // The event carries only the request's id and subject: the rest (the command, the diff) is read. A replayed
      // event of a request answered long ago reads as answered and is not asked.
      const approval = known ?? (await this.read(id));
      if (approval?.status !== 'pending' || question.signal.aborted) return;
      const toolCallId = approval.toolCallId ?? `approval:${approval.id}`;
      this.asked(toolCallId);
      let optionId: string | undefined;
      try {
        const { outcome } = await this.client.request(
          'session/request_permission',
          { sessionId: this.session.sessionId, toolCall: toolCallOf(approval, toolCallId), options: OPTIONS },
          { cancellationSignal: question.signal, stopWaitingOnCancel: true },
        );
        if (outcome.outcome === 'selected') optionId = outcome.optionId;
      } catch (error) {
        if (!question.signal.aborted)
          this.warn(`the editor did not answer approval request ${approval.id}: ${messageOf(error)}; it stays pending`);
        return;
      }
      // Cancelled (the editor's prompt was cancelled, or its dialog closed): someone else may still answer.
      if (optionId === undefined || question.signal.aborted) return;
      const verb = optionId === APPROVE ? 'approve' : optionId === DENY ? 'deny' : undefined;
      if (!verb) {
        this.warn(`the editor answered approval request ${approval.id} with an option it was not given ("${optionId}")`);
        return;
      }
      await this.control
        .request('POST', `/v1/approvals/${encodeURIComponent(approval.id)}/${verb}`, { by: `acp:${this.session.agentId}` })
        .catch((error: unknown) => {
          // Another answer came first (the CLI, the console, another editor): it stands, and that is no failure.
          if (SwitchboardError.isInstance(error) && error.code === 'APPROVAL_ANSWERED') return;
          this.warn(`could not ${verb} approval request ${approval.id}: ${messageOf(error)}`);
        });
    } catch (error) {
      this.warn(`could not ask the editor about approval request ${id}: ${messageOf(error)}`);
    } finally {
      this.open.delete(id);
    }
  }

  private async read(id: string): Promise<ApprovalRecord | undefined> {
    try {
      const { approval } = await this.control.request<{ approval: ApprovalRecord }>('GET', `/v1/approvals/${encodeURIComponent(id)}`);
      return approval;
    } catch (error) {
      this.warn(`could not read approval request ${id}: ${messageOf(error)}`);
      return undefined;
    }
  }
}

/** The request as the tool call the editor shows in its question: what would run, where, and why it asks. */
function toolCallOf(approval: ApprovalRecord, toolCallId: string): ToolCallUpdate {
  const details = approval.details as { subject?: unknown; cwd?: unknown; path?: unknown; diff?: unknown; note?: unknown };
  const lines: string[] = [];
  if (approval.kind === 'budget') lines.push(`Budget ${approval.subject}: ${JSON.stringify(approval.details)}`);
  else if (approval.subject === 'exec') {
    lines.push(`Run: ${String(details.subject ?? JSON.stringify(approval.args))}`);
    if (typeof details.cwd === 'string') lines.push(`In: ${details.cwd}`);
  }
  // A unified diff is all the request has (no old and new text whole), so it goes as text.
  if (typeof details.diff === 'string') lines.push(details.diff);
  if (typeof details.note === 'string') lines.push(`${String(details.path ?? approval.subject)}: ${details.note}`);
  // A budget's reason is the question itself ("... is used up; raise it to ...?").
  lines.push(approval.kind === 'budget' ? approval.reason : `Asked because ${approval.reason}.`);
  const content: ToolCallContent[] = [{ type: 'content', content: { type: 'text', text: lines.join('\n') } }];
  const what = typeof details.subject === 'string' ? details.subject : undefined;
  return {
    toolCallId,
    title: approval.kind === 'budget' ? `raise budget ${approval.subject}` : what ? `${approval.subject}: ${what}` : approval.subject,
    kind: approval.kind === 'budget' ? 'other' : (KINDS[approval.subject] ?? 'other'),
    status: 'pending',
    rawInput: approval.args,
    content,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
