/** Sub-agents (sessions_spawn): their records, limits, settlements and hand-overs. Times are milliseconds since the Unix epoch. */
import type { SettledSubagentState, SubagentRole, SubagentState, SubagentUsage } from '../core/subagent.js';
import type { InputRecord, NewInput } from './sessions.js';
import type { NewToolCall } from './tool-calls.js';

export interface SubagentTransition {
  state: SubagentState | 'waiting';
  at: number;
  diagnostic?: string;
}

/**
 * The parent's copy of the completion event: pending in the outbox, delivered into its session, skipped
 * (the parent needs none), or dead (its delivery gave up; the parent was told in a message of its own).
 */
export type CompletionState = 'pending' | 'delivered' | 'skipped' | 'dead';

/** One sessions_spawn: the child session's sub-agent, its limits, its state and its frozen result. */
export interface SubagentRecord {
  id: string;
  sessionKey: string;
  parentSession: string;
  /** The top-level session the spawn tree hangs from. */
  rootSession: string;
  agentId: string;
  depth: number;
  role: SubagentRole;
  label: string | null;
  task: string;
  correlationId: string;
  /** The run id promised by sessions_spawn to the first run. */
  firstRunId: string;
  /** The latest run of the child session. */
  runId: string | null;
  model: string | null;
  /** The tools the child may use at most (the parent's, narrowed by the spawn's `tools`). */
  tools: string[];
  timeoutSeconds: number;
  /** Where its tools work: the agent's workspace, a folder in it, or its own git worktree. */
  workdir: string | null;
  worktree: { path: string; branch: string; repo: string } | null;
  /** The external runtime it runs on (`acp:<name>`, `process:<name>`; docs/runtimes.md), or null for a model in the gateway. */
  runtime: string | null;
  state: SubagentState;
  history: SubagentTransition[];
  /** Its run ended while descendants were still working: the answer below stands unless a wake run gives another. */
  waiting: boolean;
  frozenText: string | null;
  result: string | null;
  resultHash: string | null;
  resultChars: number | null;
  usage: SubagentUsage | null;
  diagnostic: string | null;
  completion: CompletionState | null;
  attempts: number;
  /** The interrupted run whose retry was noted: recovery does not judge that run again. */
  retryOf: string | null;
  createdAt: number;
  startedAt: number | null;
  settledAt: number | null;
  archivedAt: number | null;
  updatedAt: number;
}

export type NewSubagent = Pick<
  SubagentRecord,
  | 'id'
  | 'sessionKey'
  | 'parentSession'
  | 'rootSession'
  | 'agentId'
  | 'depth'
  | 'role'
  | 'label'
  | 'task'
  | 'correlationId'
  | 'firstRunId'
  | 'model'
  | 'tools'
  | 'timeoutSeconds'
  | 'workdir'
  | 'worktree'
> &
  Partial<Pick<SubagentRecord, 'runtime'>>;

export interface SubagentFilter {
  parentSession?: string;
  rootSession?: string;
  states?: SubagentState[];
  /** Settled before this time and not yet archived. */
  settledBefore?: number;
  /** Only sub-agents spawned at or after this time. */
  createdSince?: number;
  limit?: number;
}

export interface SubagentSettlement {
  state: SettledSubagentState;
  diagnostic: string | null;
  /** The final text (null keeps the frozen one). */
  text: string | null;
  /** Queued inputs of the child are dropped with this note, in the same transaction. */
  dropNote?: string;
  /** The parent gets a completion event (an outbox row) unless false. */
  notifyParent: boolean;
  maxResultChars: number;
}

/** Counted in the spawn's transaction: at most `maxLive` pending or running children per parent session. */
export interface SpawnLimits {
  maxLive: number;
}

export interface SpawnRefused {
  refused: { live: number };
}

export interface SubagentStore {
  /**
   * Creates the child session, the sub-agent and its task input in one transaction. A repeated
   * (parentSession, correlationId) returns the existing sub-agent with `created: false` and writes nothing.
   */
  spawn(subagent: NewSubagent, task: NewInput, now: number): Promise<{ subagent: SubagentRecord; created: boolean }>;
  /**
   * With `limits`: counted in the same transaction, so concurrent spawns never pass `maxLive` (a repeat is
   * never refused). With `call`: the tool call that spawns is recorded in the ledger in the same transaction.
   */
  spawn(
    subagent: NewSubagent,
    task: NewInput,
    now: number,
    limits: SpawnLimits & { call?: NewToolCall },
  ): Promise<{ subagent: SubagentRecord; created: boolean } | SpawnRefused>;
  get(id: string): Promise<SubagentRecord | undefined>;
  getBySession(sessionKey: string): Promise<SubagentRecord | undefined>;
  findByCorrelation(parentSession: string, correlationId: string): Promise<SubagentRecord | undefined>;
  count(filter: SubagentFilter): Promise<number>;
  /** Oldest first. */
  list(filter?: SubagentFilter): Promise<SubagentRecord[]>;
  /** How many of a parent's children have not reached it yet (live, or their completion still pending). */
  countUndelivered(parentSession: string): Promise<number>;
  /**
   * Compare-and-set: settles a live sub-agent (with its frozen result, usage and, when asked, the
   * completion outbox row). Returns undefined, writing nothing, when it had already settled.
   */
  settle(id: string, settlement: SubagentSettlement, now: number): Promise<SubagentRecord | undefined>;
  /**
   * A crash interrupted its run `runId` and one retry is allowed: counts the attempt and notes it, once per run (a
   * compare-and-set: false when this run's retry was noted already, or the sub-agent has moved on to another run).
   */
  noteRetry(id: string, runId: string, diagnostic: string, now: number): Promise<boolean>;
  markCompletion(id: string, completion: 'delivered' | 'skipped', now: number): Promise<void>;
  /**
   * Hands a child's completion to its parent in one transaction: reads what the parent is doing, stores the
   * input `build` makes of that (deduplicated by its idempotency key) and marks the completion. A run of the
   * parent that commits meanwhile sees both or neither, so it never waits for a completion that has reached it.
   */
  handOver(
    id: string,
    completion: 'delivered' | 'dead',
    now: number,
    build: (parent: ParentFacts) => NewInput,
  ): Promise<{ input: InputRecord; created: boolean }>;
  markArchived(id: string, now: number): Promise<void>;
  /**
   * A follow-up task for a sub-agent (`subagents followup`, Codex's followup_task), in one transaction: the task input is
   * stored (deduplicated by its idempotency key: a repeat returns the existing input and changes nothing) and, when the
   * sub-agent had settled, it is live again (`pending`, its completion cleared), counted against `maxLive` like a spawn,
   * with the tool call recorded when `call` is given; an archived one without a worktree is taken out of the archive
   * (its session and history were kept). A live one only gets the input. Refused, writing nothing, when it was cancelled,
   * or archived with its worktree removed (`closed`), or when its last completion has not left the outbox yet (`delivering`).
   */
  reopen(
    id: string,
    task: NewInput,
    now: number,
    limits: SpawnLimits & { call?: NewToolCall },
  ): Promise<{ subagent: SubagentRecord; input: InputRecord; created: boolean; reopened: boolean } | ReopenRefused>;
}

export type ReopenRefused = SpawnRefused | { closed: 'cancelled' | 'archived'; subagent: SubagentRecord } | { delivering: SubagentRecord };

/** What a parent is doing when a child's completion reaches it. */
export interface ParentFacts {
  /** It is a sub-agent whose run has ended and that waits for its children. */
  waiting: boolean;
  /** How many of its other children have not reached it yet. */
  others: number;
}
