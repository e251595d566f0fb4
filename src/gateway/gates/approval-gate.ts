/**
 * The approval gate (docs/gates.md): a tool call an `ask` pattern of the tool policy matches waits for a person's answer
 * before it runs. The request is a row, written once per run and call place, so that a run resumed after a crash or a
 * suspension finds its own request again, answered or not; the wait is the one wait (kit/wait-until.ts), so that in a
 * run with durable steps it suspends the run (no lane slot, no memory) until the answer's journal event, or the expiry.
 */
import { askingRule, type ToolPolicyLayer } from '../../core/tool-policy.js';
import { SwitchboardError } from '../../core/errors.js';
import { waitUntil, type Wakeups } from '../../kit/wait-until.js';
import { nodeHashing } from '../../kit/hashing.js';
import { parseToolArgs } from '../../tools/tool-contract.js';
import type { ApprovalRecord, ApprovalStore, Clock, EventRecord } from '../../ports/index.js';
import type { GatewayTool } from '../../ports/tools.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { GateVerdict, ToolGate } from '../tooling/run-tools.js';

/**
 * How long past a request's expiry its wait goes on, for the database's clock to agree that it expired (the gateway's
 * clock follows the database's to within half a round trip: postgres/db-clock.ts).
 */
const EXPIRY_SLACK_MS = 1000;

export interface ApprovalGateDeps {
  config: SwitchboardConfig;
  store: ApprovalStore;
  clock: Clock;
  wakeups: Wakeups;
  /** Publishes the events a request or an expiry committed. */
  published: (events: readonly EventRecord[]) => void;
}

/** The id of the request for the call at this place of this run: the same on every attempt of the run. */
export function approvalId(runId: string, step: number, index: number): string {
  return `apr_${nodeHashing.sha256(`${runId}:${step}:${index}`).slice(0, 24)}`;
}

/**
 * Waits for a request's answer, or expires it once its time has passed on the database's clock. In a run that may
 * suspend, the wait suspends the run at once (a person takes minutes): it resumes on the answer's event or the expiry.
 */
export async function awaitAnswer(
  deps: Pick<ApprovalGateDeps, 'store' | 'clock' | 'wakeups' | 'published'>,
  approval: ApprovalRecord,
  signal: AbortSignal,
): Promise<ApprovalRecord> {
  const { store, clock } = deps;
  const answered = await waitUntil(
    approval.expiresAt + EXPIRY_SLACK_MS,
    async () => {
      const now = await store.get(approval.id);
      if (!now) throw new Error(`approval request ${approval.id} is gone from the store`);
      if (now.status !== 'pending') return now;
      if (clock.now() < now.expiresAt) return undefined;
      const expired = await store.expire(approval.id, clock.now());
      if (!expired) return undefined;
      deps.published([expired.event]);
      return expired.approval;
    },
    deps.wakeups,
    { keys: [`approval:${approval.id}`], test: (_payload, _session, type) => type === 'approval.decided', suspendAfterMs: 0 },
    signal,
  );
  if (answered) return answered;
  if (signal.aborted || deps.wakeups.stopping()) throw new Error('the run stopped while it waited for approval');
  // Past the slack and the database still says pending: its clock is far from ours; the request counts as expired.
  return { ...approval, status: 'expired', decidedBy: 'expiry', decidedAt: clock.now() };
}

/** The gate of one run: its session's policy layers decide which calls ask. */
export class ApprovalGate implements ToolGate {
  constructor(
    private readonly deps: ApprovalGateDeps,
    private readonly run: { runId: string; sessionKey: string; agentId: string; workspace: string | undefined },
    private readonly layers: readonly ToolPolicyLayer[],
  ) {}

  async check(
    tool: GatewayTool,
    args: Record<string, unknown>,
    call: { position: { step: number; index: number }; toolCallId: string; signal: AbortSignal },
  ): Promise<GateVerdict> {
    const subject = tool.approval?.subject(args) ?? '';
    const rule = askingRule(tool.name, subject, this.layers);
    if (!rule) return { run: args };
    const { config, store, clock } = this.deps;
    const id = approvalId(this.run.runId, call.position.step, call.position.index);
    // A resumed call finds its request: the details are made only for a new one.
    let approval = await store.get(id);
    if (!approval) {
      const made = await store.request(
        {
          id,
          kind: 'tool',
          agentId: this.run.agentId,
          sessionKey: this.run.sessionKey,
          runId: this.run.runId,
          step: call.position.step,
          index: call.position.index,
          toolCallId: call.toolCallId,
          subject: tool.name,
          args,
          details: { ...(subject ? { subject } : {}), ...((await tool.approval?.details?.(args, this.run).catch(() => ({}))) ?? {}) },
          reason: `${rule.source} has ${JSON.stringify(rule.pattern)}`,
          editable: tool.approval?.editable === true,
          ttlMs: config.approvals.expiresAfterSeconds * 1000,
          onExpiry: config.approvals.onExpiry,
        },
        clock.now(),
      );
      if (made.event) this.deps.published([made.event]);
      approval = made.approval;
    }
    const answered = await awaitAnswer(this.deps, approval, call.signal);
    return this.verdict(tool, args, answered);
  }

  private verdict(tool: GatewayTool, args: Record<string, unknown>, approval: ApprovalRecord): GateVerdict {
    const who = approval.decidedBy ?? 'a person';
    const because = approval.note ? `: ${approval.note}` : '';
    // Only an approval (or an expiry that allows) runs the call; anything else is a refusal.
    const runs = approval.status === 'approved' || (approval.status === 'expired' && approval.onExpiry === 'allow');
    if (!runs && approval.status !== 'expired')
      return {
        answer: {
          status: 'denied',
          code: 'APPROVAL_DENIED',
          approvalId: approval.id,
          decidedBy: who,
          error: `${who} denied this ${tool.name} call${because}. It was not run; do not make it again unchanged. Go on without it, or ask why.`,
        },
      };
    if (!runs)
      return {
        answer: {
          status: 'denied',
          code: 'APPROVAL_EXPIRED',
          approvalId: approval.id,
          error: `nobody answered approval request ${approval.id} for this ${tool.name} call within ${this.deps.config.approvals.expiresAfterSeconds}s (approvals.expiresAfterSeconds), and an expired request is denied (approvals.onExpiry): the call was not run.`,
        },
      };
    if (approval.editedArgs === null || approval.editedArgs === undefined) return { run: args, approval };
    const edited = tool.shownSchema
      ? { ok: true as const, value: approval.editedArgs as Record<string, unknown> }
      : parseToolArgs(tool.parameters, approval.editedArgs);
    if (!edited.ok)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `the arguments ${who} approved for ${tool.name} do not fit its schema: ${edited.error}`,
      );
    return { run: edited.value, approval };
  }
}
