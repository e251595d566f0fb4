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
import type { ApprovalRecord, ApprovalStore, Clock, EventRecord, NewApproval } from '../../ports/index.js';
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

/**
 * The id of the request for a call at this place of this run, asking about `what` (the tool and its arguments): the same
 * on every attempt of the run (a resumed step replays the same call), another for another call at the same place.
 */
export function approvalId(runId: string, step: number, index: number, what: unknown): string {
  return `apr_${nodeHashing.sha256(`${runId}:${step}:${index}:${JSON.stringify(what)}`).slice(0, 24)}`;
}

/**
 * Asks a person: the request `approval` describes (found again when it was made before, so that a resumed call never asks
 * twice), then the wait for its answer (awaitAnswer).
 */
export async function askPerson(
  deps: Pick<ApprovalGateDeps, 'store' | 'clock' | 'wakeups' | 'published'>,
  approval: Omit<NewApproval, 'details'> & { details: () => Promise<Record<string, unknown>> },
  signal: AbortSignal,
  settledElsewhere?: SettledElsewhere,
): Promise<ApprovalRecord | undefined> {
  let asked = await deps.store.get(approval.id);
  if (!asked) {
    // The details (a diff, a file read) are made only for a new request.
    const made = await deps.store.request({ ...approval, details: await approval.details() }, deps.clock.now());
    if (made.event) deps.published([made.event]);
    asked = made.approval;
  }
  return awaitAnswer(deps, asked, signal, settledElsewhere);
}

/** Something else that ends a wait for an answer: events on `keys`, after which `settled` says whether it did. */
export interface SettledElsewhere {
  keys: readonly string[];
  settled: () => Promise<boolean>;
}

/**
 * Waits for a request's answer, or expires it once its time has passed on the database's clock. In a run that may
 * suspend, the wait suspends the run at once (a person takes minutes): it resumes on the answer's event or the expiry.
 */
export async function awaitAnswer(
  deps: Pick<ApprovalGateDeps, 'store' | 'clock' | 'wakeups' | 'published'>,
  approval: ApprovalRecord,
  signal: AbortSignal,
  /** Undefined is answered when this settles the wait first. */
  elsewhere?: SettledElsewhere,
): Promise<ApprovalRecord | undefined> {
  const { store, clock } = deps;
  const answered = await waitUntil<ApprovalRecord | 'elsewhere'>(
    approval.expiresAt + EXPIRY_SLACK_MS,
    async () => {
      const now = await store.get(approval.id);
      if (!now) throw new Error(`approval request ${approval.id} is gone from the store`);
      if (now.status !== 'pending') return now;
      if (elsewhere && (await elsewhere.settled())) return 'elsewhere';
      if (clock.now() < now.expiresAt) return undefined;
      const expired = await store.expire(approval.id, clock.now());
      if (!expired) return undefined;
      deps.published([expired.event]);
      return expired.approval;
    },
    deps.wakeups,
    {
      keys: [`approval:${approval.id}`, ...(elsewhere?.keys ?? [])],
      test: (_payload, _session, type) => type === 'approval.decided',
      suspendAfterMs: 0,
    },
    signal,
  );
  if (answered === 'elsewhere') return undefined;
  if (answered) return answered;
  if (signal.aborted || deps.wakeups.stopping()) throw new Error('the run stopped while it waited for approval');
  // Past the slack and the database still says pending (its clock is far from ours): the request is withdrawn, so that
  // no later answer takes effect, and the call is refused as an expired request that denies.
  const withdrawn = await store.withdraw(approval.id, "the database's clock had not reached the expiry", clock.now());
  if (withdrawn) deps.published([withdrawn.event]);
  return { ...(withdrawn?.approval ?? approval), status: 'expired', onExpiry: 'deny', decidedBy: 'expiry', decidedAt: clock.now() };
}

/** The gate of one run: its session's policy layers decide which calls ask. */
export class ApprovalGate implements ToolGate {
  constructor(
    private readonly deps: ApprovalGateDeps,
    private readonly run: {
      runId: string;
      sessionKey: string;
      agentId: string;
      workspace: string | undefined;
      /** A resumed attempt: its calls look for the requests the earlier attempts made. */
      resumed: boolean;
    },
    private readonly layers: readonly ToolPolicyLayer[],
  ) {}

  async check(
    tool: GatewayTool,
    args: Record<string, unknown>,
    call: { position: { step: number; index: number }; toolCallId: string; signal: AbortSignal },
  ): Promise<GateVerdict> {
    const subject = tool.approval?.subject(args, this.run) ?? '';
    const rule = askingRule(tool.name, subject, this.layers);
    const id = approvalId(this.run.runId, call.position.step, call.position.index, { tool: tool.name, args });
    if (!rule) {
      // A resumed call keeps the request it made, answered or not, even if a reload took its pattern away since.
      const earlier = this.run.resumed ? await this.deps.store.get(id) : undefined;
      if (!earlier) return { run: args };
    }
    const { config } = this.deps;
    const answered = await askPerson(
      this.deps,
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
        details: async () => ({
          ...(subject ? { subject } : {}),
          ...((await tool.approval?.details?.(args, this.run).catch(() => ({}))) ?? {}),
        }),
        reason: rule ? `${rule.source} has ${JSON.stringify(rule.pattern)}` : 'asked before a reload',
        editable: tool.approval?.editable === true,
        ttlMs: config.approvals.expiresAfterSeconds * 1000,
        onExpiry: config.approvals.onExpiry,
      },
      call.signal,
    );
    return this.verdict(tool, args, answered!);
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
          error: `nobody answered approval request ${approval.id} for this ${tool.name} call within ${Math.round((approval.expiresAt - approval.requestedAt) / 1000)}s (approvals.expiresAfterSeconds), and an expired request is denied (approvals.onExpiry): the call was not run.`,
        },
      };
    if (approval.editedArgs === null || approval.editedArgs === undefined) return { run: args, approval };
    const edited = parseToolArgs(tool.parameters, approval.editedArgs);
    if (!edited.ok)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `the arguments ${who} approved for ${tool.name} do not fit its schema: ${edited.error}`,
      );
    return { run: edited.value, approval };
  }
}
