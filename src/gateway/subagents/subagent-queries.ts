/**
 * Reading sub-agents (ARCHITECTURE.md section 6): finding one by id, child session key or label within a session's tree,
 * its view (state, tokens, elapsed time without the gateway's downtime), a session's children or descendants, the frozen
 * result for whoever holds its signed handle, and waiting until a set of them has settled.
 */
import { SwitchboardError } from '../../core/errors.js';
import { elapsedWithoutDowntime, isSettled, verifyHandle } from '../../core/subagent.js';
import type { SubagentRecord } from '../../ports/index.js';
import type { SubagentView, WaitOutcome } from '../../ports/gateway.js';
import { waitUntil } from '../../kit/wait-until.js';
import { nodeHashing } from '../../kit/hashing.js';
import type { SubagentDeps } from './subagent-types.js';

const PREVIEW_CHARS = 500;

const FAILED_STATES = ['failed', 'timed_out', 'cancelled', 'interrupted'];

/** Finds and shows sub-agents, and waits for them to settle; it never changes one. */
export class SubagentQueries {
  constructor(private readonly deps: Pick<SubagentDeps, 'store' | 'clock' | 'secret' | 'wakeups'>) {}

  /** The frozen result, for whoever holds the handle. A forged or altered handle is refused. */
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
