/**
 * What happens to sub-agents after their runs: completion events delivered into the parent (held back
 * while a waiting orchestrator has other children out, and waking it when the last is in), a completion
 * that could not be delivered told to the parent, a killed sub-agent cancelled with its descendants (and its
 * descendants stopped when it ends badly), crash recovery, and archiving (ARCHITECTURE.md section 6).
 */
import type { QueueMode } from '../../core/queue-mode.js';
import type { TerminalRunStatus } from '../../core/run-status.js';
import { isSpawnedKind, parseSessionKey } from '../../core/session-key.js';
import { LIVE_SUBAGENT_STATES, isSettled, renderCompletion, replyInstruction, type CompletionEvent } from '../../core/subagent.js';
import type { OutboxRecord, SubagentRecord } from '../../ports/index.js';
import type { SubagentQueries } from './subagent-queries.js';
import { spawnerLimits, type SubagentDeps } from './subagent-types.js';
import { removeWorktree } from './worktrees.js';

/**
 * Carries sub-agents from the end of their runs to the end of their lives: completions delivered to the parent,
 * cascade stops (kill), crash recovery and archiving.
 */
export class SubagentLifecycle {
  constructor(
    private readonly deps: Pick<
      SubagentDeps,
      'config' | 'store' | 'agents' | 'clock' | 'ids' | 'wake' | 'abortRun' | 'journal' | 'afterWrite' | 'log'
    >,
    private readonly queries: Pick<SubagentQueries, 'descendants'>,
  ) {}

  /** Outbox handler for `subagent.completion`: the event becomes one input of the parent session. */
  async deliverCompletion(row: OutboxRecord): Promise<void> {
    const { store, clock } = this.deps;
    const event = row.payload as CompletionEvent;
    const record = await store.subagents.get(event.subagentId);
    if (!record) throw new Error(`sub-agent ${event.subagentId} does not exist`);
    if (record.completion === 'delivered' || record.completion === 'skipped') return;
    const parent = await store.subagents.getBySession(event.parentSessionKey);
    if (parent && isSettled(parent.state)) {
      // Nobody will read it: the parent sub-agent has ended (it was cancelled, failed or interrupted).
      await store.subagents.markCompletion(record.id, 'skipped', clock.now());
      await this.deps.journal({
        type: 'subagent.updated',
        sessionKey: event.parentSessionKey,
        payload: {
          subagentId: record.id,
          childSessionKey: record.sessionKey,
          completion: 'skipped',
          why: `parent sub-agent ${parent.state}`,
        },
      });
      return;
    }
    // Decided and stored in the store's transaction: a run of the parent committing meanwhile must not see the
    // completion still on its way once its input is there, or it waits for it for good.
    const { input, created } = await store.subagents.handOver(record.id, 'delivered', clock.now(), ({ waiting, others }) => {
      // A waiting orchestrator reads the results together, in one wake run once the last one is in.
      const wake = waiting && others === 0;
      const mode: QueueMode = waiting ? (wake ? 'followup' : 'notify') : this.limitsFor(record).completionMode;
      return {
        id: this.deps.ids.next(),
        sessionKey: event.parentSessionKey,
        idempotencyKey: row.idempotencyKey,
        mode,
        text: renderCompletion(event, replyInstruction(event, parent !== undefined, others, wake)),
        provenance: {
          kind: 'subagent_completion',
          channel: 'internal',
          sourceSession: event.childSessionKey,
          sourceAgent: event.agentId,
          sourceTool: 'sessions_spawn',
          subagent: { id: event.subagentId, ...(event.runId ? { runId: event.runId } : {}), ...(wake ? { wake: true } : {}) },
        },
      };
    });
    if (created) this.deps.wake(input.sessionKey);
    await this.deps.journal({
      type: 'subagent.updated',
      sessionKey: event.parentSessionKey,
      payload: { subagentId: record.id, childSessionKey: record.sessionKey, completion: 'delivered', mode: input.mode },
    });
  }

  /**
   * A completion whose delivery gave up (its outbox row went dead): the parent is told the truth in a
   * message of its own, and an orchestrator waiting for it is woken once nothing else is out.
   */
  async onCompletionDead(row: OutboxRecord, error: string): Promise<void> {
    const { store, clock } = this.deps;
    const event = row.payload as CompletionEvent;
    const record = await store.subagents.get(event.subagentId);
    if (record?.completion !== 'pending') return;
    const { input, created } = await store.subagents.handOver(record.id, 'dead', clock.now(), ({ waiting, others }) => {
      const wake = waiting && others === 0;
      return {
        id: this.deps.ids.next(),
        sessionKey: event.parentSessionKey,
        idempotencyKey: `${row.idempotencyKey}:dead`,
        mode: waiting && !wake ? 'notify' : 'followup',
        text: `Your sub-agent ${event.childSessionKey} ended ${record.state}, but its completion event could not be delivered (${error}). Read its result with subagents (action "result") if you need it.`,
        provenance: {
          kind: 'system',
          channel: 'internal',
          sourceSession: event.childSessionKey,
          sourceTool: 'sessions_spawn',
          subagent: { id: record.id, ...(wake ? { wake: true } : {}) },
        },
      };
    });
    if (created) this.deps.wake(input.sessionKey);
    await this.deps.journal({
      type: 'subagent.updated',
      sessionKey: event.parentSessionKey,
      payload: { subagentId: record.id, childSessionKey: record.sessionKey, completion: 'dead', error },
    });
  }

  /** After a run in a sub-agent's session commits: a sub-agent that ended badly takes its descendants with it. */
  async onRunCommitted(sessionKey: string, status: TerminalRunStatus): Promise<void> {
    if (status === 'succeeded' || status === 'interrupted' || !isSpawnedKind(parseSessionKey(sessionKey)?.kind)) return;
    const record = await this.deps.store.subagents.getBySession(sessionKey);
    if (!record || !isSettled(record.state)) return;
    for (const child of await this.deps.store.subagents.list({ parentSession: sessionKey, states: [...LIVE_SUBAGENT_STATES] })) {
      await this.kill(child, `its parent ${sessionKey} ended (${record.state})`, false);
    }
  }

  /**
   * Crash recovery (before any lane is woken): a sub-agent whose run a stop or crash cut short is
   * `interrupted` and its parent is told; it is not run again unless `retryInterrupted` allows one retry.
   */
  async recover(): Promise<void> {
    const { store, clock } = this.deps;
    for (const record of await store.subagents.list({ states: ['running'] })) {
      // Its retry is noted already: the run to judge is the retry's, once it starts.
      if (record.waiting || !record.runId || record.retryOf === record.runId) continue;
      const run = await store.runs.get(record.runId);
      // A suspended run resumes from its last step: the sub-agent goes on.
      if (!run || run.status === 'running' || run.status === 'suspended') continue;
      // Its run was superseded by an input in mode `interrupt` (subagents interrupt with a message, a follow-up) that
      // had not run yet when the gateway stopped: the sub-agent goes on with it, as it would have without the stop.
      if (run.status === 'interrupted' && (await store.inputs.listQueued(record.sessionKey)).some((input) => input.mode === 'interrupt'))
        continue;
      const diagnostic = run.errorMessage ?? `its run ended ${run.status} without finishing`;
      const limits = this.limitsFor(record);
      // An external runtime's child is never run again by itself: its work outside the gateway may be half done.
      const retry = limits.retryInterrupted && record.runtime === null && record.attempts < 1;
      if (retry && (await store.inputs.listQueued(record.sessionKey)).length > 0) {
        // Of two recoveries at once (two gateways), one notes the retry; the other leaves it.
        await store.subagents.noteRetry(record.id, record.runId, diagnostic, clock.now());
        continue;
      }
      const settled = await store.subagents.settle(
        record.id,
        {
          state: 'interrupted',
          diagnostic,
          text: null,
          dropNote: `dropped: the sub-agent was interrupted (${diagnostic}) and is not run again (agents.defaults.subagents.retryInterrupted)`,
          notifyParent: true,
          maxResultChars: limits.maxResultChars,
        },
        clock.now(),
      );
      if (!settled) continue;
      this.deps.log(`sub-agent ${record.sessionKey} was interrupted: ${diagnostic}`);
      for (const child of await store.subagents.list({ parentSession: record.sessionKey, states: ['pending'] })) {
        await this.kill(child, `its parent ${record.sessionKey} was interrupted`, false);
      }
    }
  }

  /** Archives sub-agents settled longer ago than their `archiveAfterMinutes`, removing their worktrees. */
  async archive(): Promise<number> {
    const { store, clock } = this.deps;
    const now = clock.now();
    const shortest = Math.min(
      this.deps.config.agents.defaults.subagents.archiveAfterMinutes,
      ...this.deps.config.agents.list.map((agent) => agent.subagents?.archiveAfterMinutes ?? Infinity),
    );
    let archived = 0;
    for (const record of await store.subagents.list({ settledBefore: now - shortest * 60_000 })) {
      const window = this.limitsFor(record).archiveAfterMinutes;
      if ((record.settledAt ?? now) > now - window * 60_000) continue;
      if (record.worktree) await removeWorktree(record.worktree).catch((error) => this.deps.log(String(error)));
      await store.subagents.markArchived(record.id, now);
      archived += 1;
    }
    return archived;
  }

  /**
   * Cancels a sub-agent and every descendant (cascade stop), each recorded `cancelled`, their queued
   * inputs dropped and their active runs aborted. The parent is told unless it asked for the kill itself.
   */
  async kill(record: SubagentRecord, why: string, notifyParent: boolean): Promise<string[]> {
    const tree = [record, ...(await this.queries.descendants(record.sessionKey))];
    const cancelled: string[] = [];
    for (const node of tree.reverse()) {
      const settled = await this.deps.store.subagents.settle(
        node.id,
        {
          state: 'cancelled',
          diagnostic: why,
          text: null,
          dropNote: `dropped: the sub-agent was cancelled (${why})`,
          notifyParent: notifyParent && node.id === record.id,
          maxResultChars: this.limitsFor(node).maxResultChars,
        },
        this.deps.clock.now(),
      );
      if (!settled) continue;
      cancelled.push(node.sessionKey);
      if (settled.runId) await this.deps.abortRun(settled.runId);
    }
    this.deps.afterWrite();
    return cancelled.reverse();
  }

  /** The limits a sub-agent lives under: its spawning agent's. */
  private limitsFor(record: Pick<SubagentRecord, 'parentSession'>) {
    return spawnerLimits(this.deps.config, this.deps.agents, record.parentSession);
  }
}
