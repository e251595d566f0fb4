/**
 * Work given to a live sub-agent after its spawn (ARCHITECTURE.md section 6): steer (a message into its active run),
 * follow-up (Codex's followup_task: a new run of the same child, reopening a finished one) and interrupt (Codex's
 * interrupt_agent: its run stopped, with or without a new task). docs/subagents.md maps Codex's tools.
 */
import { SwitchboardError } from '../../core/errors.js';
import { isSettled } from '../../core/subagent.js';
import { childLimitRefusal } from '../../core/spawn-policy.js';
import type { NewToolCall, SubagentRecord } from '../../ports/index.js';
import { waitUntil } from '../../kit/wait-until.js';
import type { SubagentLifecycle } from './subagent-lifecycle.js';
import { spawnerLimits, type SubagentDeps } from './subagent-types.js';

/** How long a follow-up waits for the sub-agent's last completion to leave the outbox. */
const DELIVERY_WAIT_MS = 10_000;

/** Steers, follows up and interrupts sub-agents: the work a parent gives or takes from a child it spawned. */
export class SubagentControl {
  constructor(
    private readonly deps: Pick<
      SubagentDeps,
      | 'config'
      | 'store'
      | 'agents'
      | 'clock'
      | 'ids'
      | 'accept'
      | 'wake'
      | 'abortRun'
      | 'validateMessage'
      | 'wakeups'
      | 'isStopping'
      | 'afterWrite'
    >,
    private readonly lifecycle: Pick<SubagentLifecycle, 'kill'>,
  ) {}

  /** Sends a message into a running sub-agent's active run (mode steer). */
  async steer(
    record: SubagentRecord,
    from: { sessionKey: string; agentId: string },
    message: unknown,
    idempotencyKey: string,
  ): Promise<{ status: 'steered'; inputId: string }> {
    const text = this.deps.validateMessage(message);
    if (isSettled(record.state)) {
      throw new SwitchboardError(
        'SUBAGENT_NOT_RUNNING',
        `sub-agent ${record.sessionKey} has already ${record.state === 'succeeded' ? 'finished' : `ended (${record.state})`}; spawn a new one for more work`,
      );
    }
    const input = await this.deps.accept({
      id: this.deps.ids.next(),
      sessionKey: record.sessionKey,
      idempotencyKey: `steer:${record.id}:${idempotencyKey}`,
      mode: 'steer',
      text,
      provenance: {
        kind: 'inter_session',
        channel: 'internal',
        sourceSession: from.sessionKey,
        sourceAgent: from.agentId,
        sourceTool: 'subagents',
      },
    });
    return { status: 'steered', inputId: input.id };
  }

  /**
   * A follow-up task for one of the caller's sub-agents (Codex's followup_task): a new run of the same child, with its
   * history, after its current run (mode `followup`) or instead of it (`interrupt`: the current run is aborted and
   * recorded interrupted, the sub-agent goes on with this). A finished child is live again and reports back with a new
   * completion event, as after its first task. Stored with the call's ledger row in one transaction, under an
   * idempotency key of the call's, so a retried run sends it once.
   */
  async followup(
    record: SubagentRecord,
    from: { sessionKey: string; agentId: string; idempotencyKey: string; call?: NewToolCall },
    message: unknown,
    mode: 'followup' | 'interrupt' = 'followup',
    signal?: AbortSignal,
  ): Promise<{ status: 'accepted'; inputId: string; childSessionKey: string; previousState: SubagentRecord['state']; reopened: boolean }> {
    const { store, clock } = this.deps;
    if (this.deps.isStopping())
      throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send the follow-up again once it has restarted');
    const text = this.deps.validateMessage(message);
    if (record.runtime !== null)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `sub-agent ${record.sessionKey} runs on an external runtime (${record.runtime}), whose every run starts a new process that knows nothing of the last; spawn a new one with the whole task`,
      );
    const parent = await store.subagents.getBySession(from.sessionKey);
    if (parent && isSettled(parent.state))
      throw new SwitchboardError(
        'SUBAGENT_NOT_RUNNING',
        `sub-agent ${parent.sessionKey} has already ended (${parent.state}); it cannot give its sub-agents more work`,
      );
    const limits = this.limitsFor(record);
    const task = {
      id: this.deps.ids.next(),
      sessionKey: record.sessionKey,
      idempotencyKey: `followup:${record.id}:${from.idempotencyKey}`,
      mode,
      text,
      provenance: {
        kind: 'subagent_task' as const,
        channel: 'internal',
        sourceSession: from.sessionKey,
        sourceAgent: from.agentId,
        sourceTool: 'subagents',
        subagent: { id: record.id },
      },
    };
    const reopen = () => store.subagents.reopen(record.id, task, clock.now(), { maxLive: limits.maxChildrenPerAgent, call: from.call });
    // Its last completion is on its way to the parent (the outbox delivers it in a moment): wait for it, then reopen.
    const wake = { keys: [`subagent:${record.id}`], test: () => true };
    const outcome = await waitUntil(
      clock.now() + DELIVERY_WAIT_MS,
      async () => {
        const tried = await reopen();
        return 'delivering' in tried ? undefined : tried;
      },
      this.deps.wakeups,
      wake,
      signal,
    );
    if (!outcome)
      throw new SwitchboardError(
        'SUBAGENT_NOT_RUNNING',
        `the last result of sub-agent ${record.sessionKey} is still being delivered to you (switchboard outbox list shows it); send the follow-up again once it has arrived`,
      );
    if ('refused' in outcome) throw childLimitRefusal(outcome.refused.live, limits);
    if ('closed' in outcome)
      throw new SwitchboardError(
        'SUBAGENT_NOT_RUNNING',
        outcome.closed === 'cancelled'
          ? `sub-agent ${record.sessionKey} was cancelled (killed) and takes no more work; spawn a new one`
          : `sub-agent ${record.sessionKey} was archived ${limits.archiveAfterMinutes} minutes after it finished (${limits.source('archiveAfterMinutes')}) and its worktree removed; spawn a new one`,
      );
    if (outcome.created) {
      this.deps.afterWrite();
      this.deps.wake(record.sessionKey);
    }
    return {
      status: 'accepted',
      inputId: outcome.input.id,
      childSessionKey: record.sessionKey,
      previousState: outcome.reopened ? (outcome.subagent.history.at(-2)?.state as SubagentRecord['state']) : outcome.subagent.state,
      reopened: outcome.reopened,
    };
  }

  /**
   * Interrupts a sub-agent's work and keeps it (Codex's interrupt_agent): with `message`, its active run is aborted
   * (recorded interrupted) and it goes on at once with that task (a follow-up in mode `interrupt`); without, it is
   * recorded `interrupted` with `reason`, its queued inputs dropped, its active run aborted and its live descendants
   * cancelled, and it can take a follow-up later. Its parent is told only if it is not the caller. A sub-agent that is
   * not working is left as it is. The settling is a compare-and-set, so a retried call interrupts once.
   */
  async interrupt(
    record: SubagentRecord,
    by: { sessionKey: string; agentId: string; idempotencyKey: string; call?: NewToolCall },
    options: { message?: unknown; reason?: string; signal?: AbortSignal },
  ): Promise<
    | Awaited<ReturnType<SubagentControl['followup']>>
    | { status: 'interrupted' | 'not_running'; childSessionKey: string; previousState: SubagentRecord['state']; cancelled: string[] }
  > {
    if (options.message !== undefined) return this.followup(record, by, options.message, 'interrupt', options.signal);
    const current = (await this.deps.store.subagents.get(record.id)) ?? record;
    const previousState = current.state;
    const idle = { status: 'not_running' as const, childSessionKey: record.sessionKey, previousState, cancelled: [] };
    if (isSettled(current.state)) return idle;
    const why = `interrupted by ${by.sessionKey}${options.reason ? `: ${options.reason}` : ''}`;
    const cancelled: string[] = [];
    for (const child of await this.deps.store.subagents.list({ parentSession: record.sessionKey, states: ['pending', 'running'] })) {
      cancelled.push(...(await this.lifecycle.kill(child, `its parent ${record.sessionKey} was interrupted`, false)));
    }
    const settled = await this.deps.store.subagents.settle(
      record.id,
      {
        state: 'interrupted',
        diagnostic: why,
        text: null,
        dropNote: `dropped: the sub-agent was interrupted (${why})`,
        // A parent that did not ask for it (an orchestrator whose worker its own parent interrupted) is told, or it would wait for good.
        notifyParent: record.parentSession !== by.sessionKey,
        maxResultChars: this.limitsFor(record).maxResultChars,
      },
      this.deps.clock.now(),
    );
    this.deps.afterWrite();
    // It settled meanwhile (its run ended, or another call interrupted it first).
    if (!settled) return { ...idle, previousState: (await this.deps.store.subagents.get(record.id))?.state ?? previousState, cancelled };
    if (settled.runId) await this.deps.abortRun(settled.runId);
    return { status: 'interrupted', childSessionKey: record.sessionKey, previousState, cancelled };
  }

  /** The limits a sub-agent lives under: its spawning agent's. */
  private limitsFor(record: SubagentRecord) {
    return spawnerLimits(this.deps.config, this.deps.agents, record.parentSession);
  }
}
