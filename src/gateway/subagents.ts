/**
 * Sub-agents (ARCHITECTURE.md section 6, seeds 000, 002 and 003): one mechanism for Pi and Claude
 * subagents, Hermes delegate_task, OpenClaw sessions_spawn and Codex spawn_agent / wait_agent.
 *
 * A spawn stores the child session, its sub-agent record and its task in one transaction and returns a
 * signed handle at once. The child runs in the subagent lane. The run that ends it settles the record
 * and writes the completion event to the outbox in its own commit; what happens after (delivery into
 * the parent, recovery, archiving) is in subagent-lifecycle.ts, the spawn in subagent-spawn.ts. Here: find, view, wait, kill,
 * steer, follow-up and interrupt (Codex's followup_task and interrupt_agent; docs/subagents.md maps Codex's tools) and
 * the handle's result.
 */
import { SwitchboardError } from '../core/errors.js';
import { elapsedWithoutDowntime, isSettled, verifyHandle } from '../core/subagent.js';
import { childLimitRefusal } from '../core/spawn-policy.js';
import type { NewToolCall, SubagentRecord } from '../ports/index.js';
import { waitUntil } from '../kit/wait-until.js';
import { nodeHashing } from '../hashing.js';
import { SubagentSpawning } from './subagent-spawn.js';
import type { SubagentDeps, SubagentView, WaitOutcome } from './subagent-types.js';

export type { Spawner, SpawnRequest, SpawnResult, SubagentDeps, SubagentView, WaitOutcome } from './subagent-types.js';
export { spawnerLimits } from './subagent-spawn.js';

const PREVIEW_CHARS = 500;

const FAILED_STATES = ['failed', 'timed_out', 'cancelled', 'interrupted'];

/** How long a follow-up waits for the sub-agent's last completion to leave the outbox. */
const DELIVERY_WAIT_MS = 10_000;

export class Subagents extends SubagentSpawning {
  constructor(protected readonly deps: SubagentDeps) {
    super();
  }

  async result(handle: unknown) {
    const invalid = () =>
      new SwitchboardError(
        'CAPABILITY_INVALID',
        'the handle is not one sessions_spawn gave out (its capability does not match its fields); pass the handle exactly as you received it',
      );
    if (!verifyHandle(nodeHashing, this.deps.secret, handle)) throw invalid();
    const record = await this.deps.store.subagents.get(handle.subagentId);
    if (
      !record ||
      record.parentSession !== handle.parentSessionKey ||
      record.correlationId !== handle.correlationId ||
      record.createdAt !== handle.createdAt
    )
      throw invalid();
    const view = await this.view(record);
    if (!isSettled(record.state))
      return { ...view, result: null, note: 'still working; its result arrives as a message when it finishes (or use subagents wait)' };
    return {
      ...view,
      result: record.result,
      resultHash: record.resultHash,
      truncated: (record.resultChars ?? 0) > (record.result?.length ?? 0),
      usage: record.usage,
    };
  }

  async view(record: SubagentRecord): Promise<SubagentView> {
    let tokens = { input: record.usage?.inputTokens ?? 0, output: record.usage?.outputTokens ?? 0 };
    // Its runs tell the tokens of a live one, and the time a gateway was down for one a crash interrupted.
    const interrupted = record.state === 'interrupted' || record.history.some((step) => step.state === 'interrupted');
    const runs = !record.usage || interrupted ? await this.deps.store.runs.list({ sessionKey: record.sessionKey, limit: 1000 }) : [];
    if (!record.usage) {
      tokens = {
        input: runs.reduce((sum, run) => sum + run.usage.inputTokens, 0),
        output: runs.reduce((sum, run) => sum + run.usage.outputTokens, 0),
      };
    }
    return {
      subagentId: record.id,
      childSessionKey: record.sessionKey,
      parentSessionKey: record.parentSession,
      agentId: record.agentId,
      label: record.label,
      depth: record.depth,
      role: record.role,
      state: record.state,
      waitingForSubagents: record.waiting,
      elapsedMs: elapsedWithoutDowntime(record.createdAt, record.settledAt ?? this.deps.clock.now(), runs),
      tokens,
      diagnostic: record.diagnostic,
      runId: record.runId,
      history: record.history,
      resultChars: record.resultChars,
      worktree: record.worktree ? { path: record.worktree.path, branch: record.worktree.branch } : null,
      runtime: record.runtime,
      model: record.model,
    };
  }

  /** A session's children (and, with `recursive`, all its descendants), oldest first. */
  async list(sessionKey: string, options: { recursive?: boolean } = {}): Promise<SubagentView[]> {
    const records = options.recursive
      ? await this.descendants(sessionKey)
      : await this.deps.store.subagents.list({ parentSession: sessionKey });
    return Promise.all(records.map((record) => this.view(record)));
  }

  /** Every sub-agent below a session, parents before their children. */
  async descendants(sessionKey: string): Promise<SubagentRecord[]> {
    const out: SubagentRecord[] = [];
    const queue = [sessionKey];
    while (queue.length > 0) {
      const children = await this.deps.store.subagents.list({ parentSession: queue.shift()! });
      out.push(...children);
      queue.push(...children.map((child) => child.sessionKey));
    }
    return out;
  }

  /** A sub-agent by id, child session key or label; with `below`, only among that session's descendants. */
  async find(target: string, below?: string): Promise<SubagentRecord> {
    const { store } = this.deps;
    let record = (await store.subagents.get(target)) ?? (await store.subagents.getBySession(target));
    if (!record && below) {
      const labelled = (await this.descendants(below)).filter((candidate) => candidate.label === target);
      if (labelled.length > 1)
        throw new SwitchboardError(
          'LABEL_AMBIGUOUS',
          `label "${target}" names ${labelled.length} sub-agents (${labelled.map((s) => s.sessionKey).join(', ')}); pass the childSessionKey`,
        );
      record = labelled[0];
    }
    if (record && below && !(await this.isBelow(record, below))) record = undefined;
    if (!record) {
      throw new SwitchboardError(
        'SUBAGENT_NOT_FOUND',
        `no sub-agent "${target}"${below ? ' among the ones this session spawned' : ''} (subagents list shows them)`,
      );
    }
    return record;
  }

  private async isBelow(record: SubagentRecord, ancestor: string): Promise<boolean> {
    let current: SubagentRecord | undefined = record;
    for (let hops = 0; current && hops < 8; hops += 1) {
      if (current.parentSession === ancestor) return true;
      current = await this.deps.store.subagents.getBySession(current.parentSession);
    }
    return false;
  }

  /**
   * Cancels a sub-agent and every descendant (cascade stop), each recorded `cancelled`, their queued
   * inputs dropped and their active runs aborted. The parent is told unless it asked for the kill itself.
   */
  async kill(record: SubagentRecord, why: string, notifyParent: boolean): Promise<string[]> {
    const tree = [record, ...(await this.descendants(record.sessionKey))];
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
    | Awaited<ReturnType<Subagents['followup']>>
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
      cancelled.push(...(await this.kill(child, `its parent ${record.sessionKey} was interrupted`, false)));
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

  /**
   * Waits until all (or any) of the given sub-agents have settled, the deadline passes, or more than
   * `maxFailures` of them failed. One child failing never fails the others.
   */
  async wait(
    records: SubagentRecord[],
    options: { mode: 'all' | 'any'; timeoutMs: number; maxFailures?: number; signal?: AbortSignal },
  ): Promise<WaitOutcome> {
    const { store, clock } = this.deps;
    const watched = new Set(records.map((record) => record.id));
    // The outcome as it stands; before the deadline only once it is final (all or any settled, or too many failed).
    const outcome = async (final: boolean): Promise<WaitOutcome | undefined> => {
      const current = (await Promise.all(records.map((record) => store.subagents.get(record.id)))).filter(
        (record): record is SubagentRecord => record !== undefined,
      );
      const settled = current.filter((record) => isSettled(record.state));
      const failed = settled.filter((record) => FAILED_STATES.includes(record.state));
      const tooMany = options.maxFailures !== undefined && failed.length > options.maxFailures;
      const done = options.mode === 'all' ? settled.length === current.length : settled.length > 0;
      if (!final && !done && !tooMany) return undefined;
      const status: WaitOutcome['status'] = tooMany
        ? 'failed'
        : !done
          ? 'timeout'
          : failed.length === 0
            ? 'ok'
            : failed.length === settled.length
              ? 'failed'
              : 'partial';
      return {
        status,
        children: await Promise.all(
          current.map(async (record) => ({ ...(await this.view(record)), resultPreview: preview(record.result) })),
        ),
        succeeded: settled.length - failed.length,
        running: current.length - settled.length,
        failed: failed.map((record) => ({
          childSessionKey: record.sessionKey,
          label: record.label,
          state: record.state,
          why: record.diagnostic,
        })),
      };
    };
    const wake = {
      keys: [...watched].map((id) => `subagent:${id}`),
      test: (payload: Record<string, unknown>) => watched.has(String(payload.subagentId)),
    };
    const ended = await waitUntil(clock.now() + options.timeoutMs, () => outcome(false), this.deps.wakeups, wake, options.signal);
    return ended ?? (await outcome(true))!;
  }
}

function preview(text: string | null): string | null {
  if (text === null) return null;
  return text.length > PREVIEW_CHARS
    ? `${text.slice(0, PREVIEW_CHARS)}… (${text.length - PREVIEW_CHARS} more characters; the full result comes as a message)`
    : text;
}
