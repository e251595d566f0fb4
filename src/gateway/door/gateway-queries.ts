/**
 * What the gateway answers about its state: inputs, sessions, runs, exchanges, sub-agents, A2A tasks and
 * the outbox, read from the store. The gateway extends this; fronts reach it through GatewayApi.
 */
import { SwitchboardError } from '../../core/errors.js';
import { isTerminalRunStatus, type RunStatus } from '../../core/run-status.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type {
  Clock,
  IdKind,
  EventRecord,
  ExchangeRecord,
  InputRecord,
  OutboxRecord,
  OutboxStatus,
  RunRecord,
  SessionFilter,
  SessionRecord,
  Store,
  SubagentRecord,
  TranscriptEntry,
  UsageSlice,
  UsageTotal,
} from '../../ports/index.js';
import type { LinkSource } from '../../core/collaboration.js';
import { gatewayLinks } from '../insight/collaboration.js';
import { messagePath } from '../insight/message-path.js';
import { traceView } from '../insight/trace-view.js';
import type { MessagePath, Queries, RunCompletions, RunStepView, RunToolCall, TraceQuery, TraceView } from '../../ports/gateway.js';

export type { RunToolCall };
import type { AgentRegistry } from '../agents/registry.js';
import type { OfferedTools } from '../tooling/offered-tools.js';
import type { Subagents } from '../subagents/subagents.js';
import type { SubagentView } from '../../ports/gateway.js';

const MIN_ID_PREFIX = 4;
const ID_NOUNS: Record<IdKind, string> = {
  run: 'run ids',
  subagent: 'sub-agent ids',
  outbox: 'outbox row ids',
  exchange: 'exchange ids',
  a2a_task: 'A2A task ids',
  input: 'input ids',
  board_task: 'board task ids',
  approval: 'approval ids',
};

export interface QueriesDeps {
  config: SwitchboardConfig;
  clock: Clock;
  store: Store;
  agents: AgentRegistry;
  subagents: Subagents;
  offered: OfferedTools;
  /** The journal's newest event published live (JournalTail.publishedSeq). */
  publishedSeq(): number;
}

/** The door's Queries role: what the gateway holds, read-only, answered from the store. */
export class GatewayQueries implements Queries {
  constructor(private readonly deps: QueriesDeps) {}

  /**
   * A full id from what a person typed: the id itself, or a unique prefix of at least 4 characters (as
   * git takes commits). An ambiguous prefix lists its matches; one that matches nothing is returned as
   * given, so the lookup that follows says what was not found.
   */
  async resolveId(kind: IdKind, given: string): Promise<string> {
    if (given.length < MIN_ID_PREFIX || given.startsWith('agent:')) return given;
    const matches = await this.deps.store.matchIds(kind, given, 11);
    if (matches.length === 0 || matches.includes(given)) return given;
    if (matches.length === 1) return matches[0];
    const shown = matches.slice(0, 10).join(', ');
    throw new SwitchboardError(
      'ID_AMBIGUOUS',
      `"${given}" is the start of ${matches.length > 10 ? 'more than 10' : matches.length} ${ID_NOUNS[kind]}: ${shown}; give more characters`,
      { matches: matches.slice(0, 10) },
    );
  }

  listSessions(filter: Pick<SessionFilter, 'agentId' | 'archived' | 'limit'> = {}): Promise<SessionRecord[]> {
    if (filter.agentId) this.deps.agents.get(filter.agentId);
    return this.deps.store.sessions.list(filter);
  }

  /** Tokens per agent and model over the runs started since a time (the console's cost figures). */
  usageSince(since: number): Promise<UsageTotal[]> {
    return this.deps.store.runs.usageSince(since);
  }

  /** The same in slices of `bucketMs` from `since` (the console's charts). */
  usageByTime(since: number, bucketMs: number): Promise<UsageSlice[]> {
    return this.deps.store.runs.usageByTime(since, bucketMs);
  }

  /** The sessions with queued inputs, and when the oldest of each was queued (the console's queue-age chart). */
  async inputQueues(): Promise<{ sessionKey: string; oldestQueuedAt: number }[]> {
    return (await this.deps.store.sessions.listWithQueuedInputs()).map(({ key, oldestQueuedAt }) => ({ sessionKey: key, oldestQueuedAt }));
  }

  /** One collaboration's spans, drawn from the store (insight/trace-view.ts). */
  traceView(of: TraceQuery): Promise<TraceView> {
    return traceView(
      {
        store: this.deps.store,
        agentIds: () => this.deps.agents.list().map((agent) => agent.config.id),
        prices: () => this.deps.config.models.prices,
        findSubagent: (target) => this.deps.subagents.find(target),
        toolCallsOf: (run) => this.runToolCalls(run),
        now: () => this.deps.clock.now(),
      },
      of,
    );
  }

  /** The gateway's own hand-offs in a window, for the collaboration map (`GET /v1/graph` adds the fronts'). */
  collaborationLinks(window: { since: number; until: number }): Promise<LinkSource> {
    return gatewayLinks(this.deps.store, window);
  }

  /** The path one input took: accept, lane, run, tool calls, the sessions it reached and their runs, the reply. */
  messagePath(inputId: string): Promise<MessagePath> {
    return messagePath(this.deps.store, inputId, (run) => this.runToolCalls(run));
  }

  async getSession(key: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.get(key);
    if (!session) throw new SwitchboardError('SESSION_NOT_FOUND', `no session "${key}" (list them with "switchboard sessions list")`);
    return session;
  }

  /** A session with its five latest runs and how many inputs wait in its queue. */
  async describeSession(key: string): Promise<{ session: SessionRecord; recentRuns: RunRecord[]; queuedInputs: number }> {
    const session = await this.getSession(key);
    const recentRuns = await this.deps.store.runs.list({ sessionKey: key, limit: 5 });
    const queued = await this.deps.store.inputs.listQueued(key);
    return { session, recentRuns, queuedInputs: queued.length };
  }

  /** Journal events after `afterSeq`, oldest first. */
  journalAfter(afterSeq: number, filter: { sessionKey?: string; limit?: number } = {}): Promise<EventRecord[]> {
    // Not past what the live stream has published: an event still settling below it (PostgreSQL) comes live, in order.
    return this.deps.store.events.list({ afterSeq, upToSeq: this.deps.publishedSeq(), ...filter });
  }

  async history(key: string, limit?: number): Promise<TranscriptEntry[]> {
    await this.getSession(key);
    return this.deps.store.transcript.list(key, { limit });
  }

  /** The newest sessions_send exchanges (of one session, as requester or target), oldest of them first. */
  async listExchanges(filter: { sessionKey?: string; limit?: number } = {}): Promise<ExchangeRecord[]> {
    const newest = { limit: filter.limit, newest: true };
    const [asked, answered] = filter.sessionKey
      ? await Promise.all([
          this.deps.store.exchanges.list({ requesterSession: filter.sessionKey, ...newest }),
          this.deps.store.exchanges.list({ targetSession: filter.sessionKey, ...newest }),
        ])
      : [await this.deps.store.exchanges.list(newest), []];
    const unique = new Map([...asked, ...answered].map((exchange) => [exchange.id, exchange] as const));
    return [...unique.values()].sort((a, b) => a.createdAt - b.createdAt).slice(-(filter.limit ?? 1000));
  }

  /** One exchange with the inputs of its steps (request, reply, turns, announce), oldest first. */
  async getExchange(id: string): Promise<{ exchange: ExchangeRecord; inputs: InputRecord[] }> {
    const exchange = await this.deps.store.exchanges.get(id);
    if (!exchange) throw new SwitchboardError('NOT_FOUND', `no exchange "${id}" (list them with "switchboard exchanges list")`);
    const [asked, answered] = await Promise.all([
      this.deps.store.inputs.list({ sessionKey: exchange.requesterSession, limit: 10_000 }),
      this.deps.store.inputs.list({ sessionKey: exchange.targetSession, limit: 10_000 }),
    ]);
    const inputs = [...asked, ...answered]
      .filter((input) => input.provenance.exchange?.id === id)
      .sort((a, b) => a.createdAt - b.createdAt);
    return { exchange, inputs };
  }

  /** A session's sub-agents (with `recursive`, every descendant; without a session, all), oldest first. */
  async listSubagents(sessionKey?: string, recursive = false): Promise<SubagentView[]> {
    if (!sessionKey)
      return Promise.all((await this.deps.store.subagents.list({ limit: 100_000 })).map((record) => this.deps.subagents.view(record)));
    await this.getSession(sessionKey);
    return this.deps.subagents.list(sessionKey, { recursive });
  }

  /** One sub-agent (by id or child session key) with its view, task, handle and frozen result. */
  async getSubagent(target: string): Promise<{ view: SubagentView; record: SubagentRecord }> {
    const record = await this.deps.subagents.find(target);
    return { view: await this.deps.subagents.view(record), record };
  }

  /**
   * The completion deliveries of a run: the events it sent its parent (as a sub-agent's run) and the
   * completion events it consumed (as a parent).
   */
  async runCompletions(runId: string): Promise<RunCompletions> {
    const { run, inputs } = await this.getRun(runId);
    const sent: RunCompletions['sent'] = [];
    const record = await this.deps.store.subagents.getBySession(run.sessionKey);
    if (record) {
      const key = `completion:${run.sessionKey}:${runId}`;
      const row = await this.deps.store.outbox.get(`completion-${record.id}-${runId}`);
      const delivered = row ? await this.deps.store.inputs.getByIdempotencyKey(key) : undefined;
      if (row) {
        sent.push({
          parentSessionKey: record.parentSession,
          idempotencyKey: key,
          outbox: { status: row.status, attempts: row.attempts, lastError: row.lastError, deliveredAt: row.deliveredAt },
          input: delivered ? { inputId: delivered.id, status: delivered.status, mode: delivered.mode, runId: delivered.runId } : null,
        });
      }
    }
    const received = inputs
      .filter((input) => input.provenance.kind === 'subagent_completion')
      .map((input) => ({
        inputId: input.id,
        childSessionKey: input.provenance.sourceSession,
        subagentId: input.provenance.subagent?.id,
        idempotencyKey: input.idempotencyKey,
      }));
    return { sent, received };
  }

  /** The names of the tools the session's next model step is offered (`subagents show`; offered-tools.ts). */
  offeredToolNames(sessionKey: string): Promise<string[]> {
    return this.deps.offered.offeredToolNames(sessionKey);
  }

  listRuns(filter: { sessionKey?: string; limit?: number } = {}): Promise<RunRecord[]> {
    return this.deps.store.runs.list(filter);
  }

  async getRun(runId: string): Promise<{ run: RunRecord; inputs: InputRecord[] }> {
    const run = await this.deps.store.runs.get(runId);
    if (!run) throw new SwitchboardError('RUN_NOT_FOUND', `no run "${runId}" (list them with "switchboard runs list")`);
    return { run, inputs: await this.deps.store.inputs.listByRun(runId) };
  }

  async runStatus(runId: string): Promise<RunStatus | undefined> {
    return (await this.deps.store.runs.get(runId))?.status;
  }

  async runSteps(run: RunRecord): Promise<RunStepView[]> {
    const steps: RunStepView[] = (await this.deps.store.steps.list(run.id)).map((step) => ({
      step: step.step,
      attempt: step.attempt,
      model: step.model,
      tools: step.toolNames,
      inputTokens: step.usage.inputTokens,
      outputTokens: step.usage.outputTokens,
      ms: step.answeredAt - step.startedAt,
      state: step.settledAt === null ? 'answered' : 'settled',
    }));
    // The run's last model call is in its commit: what the run used beyond its steps.
    if (isTerminalRunStatus(run.status) && run.usage.modelCalls > steps.length) {
      const sum = (pick: (step: RunStepView) => number) => steps.reduce((total, step) => total + pick(step), 0);
      steps.push({
        step: steps.length,
        attempt: run.attempt,
        model: run.model,
        tools: [],
        inputTokens: run.usage.inputTokens - sum((step) => step.inputTokens),
        outputTokens: run.usage.outputTokens - sum((step) => step.outputTokens),
        ms: null,
        state: 'final',
      });
    }
    return steps;
  }

  /** The tool calls a run made, each with its arguments and its result (from the run's transcript entries). */
  async runToolCalls(run: Pick<RunRecord, 'id' | 'sessionKey'>): Promise<RunToolCall[]> {
    const calls = new Map<string, RunToolCall>();
    for (const entry of await this.deps.store.transcript.listByRun(run.sessionKey, run.id)) {
      if (!Array.isArray(entry.content)) continue;
      for (const part of entry.content as { type?: string; toolCallId?: string; toolName?: string; input?: unknown; output?: unknown }[]) {
        if (!part.toolCallId) continue;
        if (part.type === 'tool-call')
          calls.set(part.toolCallId, {
            toolCallId: part.toolCallId,
            toolName: part.toolName ?? '',
            input: part.input ?? null,
            output: null,
          });
        else if (part.type === 'tool-result') {
          const call = calls.get(part.toolCallId);
          const output = (part.output as { value?: unknown } | undefined)?.value ?? part.output ?? null;
          if (call) call.output = output;
        }
      }
    }
    return [...calls.values()];
  }

  /** How many deliveries are pending and how many dead (`GET /v1/status`, the console's overview). */
  outboxBacklog(): Promise<{ pending: number; dead: number }> {
    return this.deps.store.outbox.backlog();
  }

  /** Outbox rows, oldest first (`switchboard outbox list`). */
  listOutbox(filter: { status?: OutboxStatus; limit?: number }): Promise<OutboxRecord[]> {
    return this.deps.store.outbox.list(filter);
  }
}
