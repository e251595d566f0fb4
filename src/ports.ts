/**
 * Interfaces the core and the gateway depend on. Adapters (src/store/*, src/models/*) implement them.
 * Times are milliseconds since the Unix epoch.
 */
import type { QueueMode } from './core/queue-mode.js';
import type { LimitReached, RateLimit } from './core/rate-limit.js';
import type { RunStatus, TerminalRunStatus } from './core/run-status.js';
import type { BoardStore } from './board-ports.js';
import type { SettledSubagentState, SubagentRole, SubagentState, SubagentUsage } from './core/subagent.js';

/** Guarded writes are counted against a sliding window in the write's own transaction (core/rate-limit.ts has the rule). */
export type { LimitReached, RateLimit } from './core/rate-limit.js';

export interface Clock {
  now(): number;
}

export interface IdGenerator {
  /** A new unique id (UUID-length). */
  next(): string;
}

export type { BoardStore } from './board-ports.js';

export type ProvenanceKind = 'user' | 'inter_session' | 'subagent_task' | 'subagent_completion' | 'a2a' | 'mailbox' | 'board' | 'system';

/** Where an input came from. Anything but `user` is shown to the model as not coming from its user. */
export interface Provenance {
  kind: ProvenanceKind;
  channel?: string;
  peer?: string;
  sourceSession?: string;
  sourceAgent?: string;
  sourceTool?: string;
  conversationId?: string;
  hop?: number;
  /** Set on inputs that belong to a sessions_send exchange (request, reply, ping-pong turn, announce). */
  exchange?: ExchangeStepRef;
  /** Set on a sub-agent's task (with the run id sessions_spawn promised) and on completion events. */
  subagent?: { id: string; runId?: string; wake?: boolean };
}

/** Which step of an exchange an input is. `turn` counts ping-pong turns from 1. */
export interface ExchangeStepRef {
  id: string;
  step: ExchangeStep;
  turn?: number;
  maxTurns?: number;
  /** Who this session is in the exchange. */
  role?: 'requester' | 'target';
}

/**
 * request: the message itself, in the target session. reply: the target's reply delivered to a
 * requester that stopped waiting. turn: a ping-pong turn. announce: the target's announce step.
 */
export type ExchangeStep = 'request' | 'reply' | 'turn' | 'announce';

/** Where replies produced in a session go: the channel that last spoke to it. */
export interface ReplyRoute {
  channel: string;
  peer?: string;
  account?: string;
}

export type SessionState = 'idle' | 'running' | 'archived';

export interface SessionRecord {
  key: string;
  agentId: string;
  label: string | null;
  parentKey: string | null;
  depth: number;
  route: ReplyRoute | null;
  state: SessionState;
  createdAt: number;
  updatedAt: number;
  lastRunAt: number | null;
}

export interface NewSession {
  key: string;
  agentId: string;
  label?: string | null;
  parentKey?: string | null;
  depth?: number;
  route?: ReplyRoute | null;
}

export interface SessionFilter {
  agentId?: string;
  label?: string;
  /** Only sessions this one spawned (directly). */
  parentKey?: string;
  /** Only sessions updated at or after this time. */
  updatedSince?: number;
  limit?: number;
}

export interface SessionStore {
  /** Creates the session if it does not exist; returns the stored row either way. */
  ensure(session: NewSession, now: number): Promise<SessionRecord>;
  get(key: string): Promise<SessionRecord | undefined>;
  /** Most recently updated first. */
  list(filter?: SessionFilter): Promise<SessionRecord[]>;
  setRoute(key: string, route: ReplyRoute, now: number): Promise<void>;
  /** Keys of sessions holding queued inputs, oldest first. */
  listWithQueuedInputs(): Promise<{ key: string; oldestQueuedAt: number }[]>;
  /** Whether the session has spawned a sub-agent, and whether it has sent a message that expects a reply (in one query). */
  reachedOut(key: string): Promise<{ spawned: boolean; sent: boolean }>;
}

export type InputStatus = 'queued' | 'claimed' | 'consumed' | 'dropped';

export interface InputRecord {
  id: string;
  seq: number;
  sessionKey: string;
  idempotencyKey: string;
  mode: QueueMode;
  status: InputStatus;
  attempts: number;
  text: string;
  provenance: Provenance;
  runId: string | null;
  note: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewInput {
  id: string;
  sessionKey: string;
  idempotencyKey: string;
  mode: QueueMode;
  text: string;
  provenance: Provenance;
}

export interface InputStore {
  /**
   * Accept = durable. Contract: when this resolves, the row is committed. A repeated idempotency key
   * returns the existing row with `created: false` and writes nothing. With `rate`, a new row is written
   * only while the window holds fewer than `max` writes, and counts as one.
   */
  enqueue(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }>;
  enqueue(
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ input: InputRecord; created: boolean } | LimitReached>;
  /**
   * As `enqueue`, for a sender that waits for the reply: its acknowledgement is the reply, which comes after the
   * run's commit is made durable, and that covers this row too. The adapter need not make the row durable before
   * it resolves (SQLite FULL answers without waiting for its sync).
   */
  enqueueUnsynced(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }>;
  get(id: string): Promise<InputRecord | undefined>;
  getByIdempotencyKey(idempotencyKey: string): Promise<InputRecord | undefined>;
  listQueued(sessionKey: string): Promise<InputRecord[]>;
  listByRun(runId: string): Promise<InputRecord[]>;
  list(filter: { sessionKey?: string; status?: InputStatus; limit?: number }): Promise<InputRecord[]>;
  /** Appends a notify input to the transcript and marks it consumed, in one transaction. */
  absorbNotify(inputId: string, now: number): Promise<boolean>;
  /** Marks queued inputs dropped with a note saying why; returns the ids actually dropped. */
  drop(inputIds: string[], note: string, now: number): Promise<string[]>;
}

export type TranscriptRole = 'user' | 'assistant' | 'tool' | 'note';

export interface TranscriptEntry {
  seq: number;
  sessionKey: string;
  role: TranscriptRole;
  /** For user/assistant/tool: the AI SDK ModelMessage content; for note: a string. */
  content: unknown;
  provenance: Provenance | null;
  inputId: string | null;
  runId: string | null;
  createdAt: number;
}

export type NewTranscriptEntry = Omit<TranscriptEntry, 'seq' | 'sessionKey' | 'createdAt'>;

export interface TranscriptStore {
  list(sessionKey: string, options?: { limit?: number }): Promise<TranscriptEntry[]>;
  append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void>;
}

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  steps: number;
  /** Input tokens the provider read from its prompt cache (0 when it has none or does not say). */
  cachedInputTokens?: number;
}

/** What a run's model calls sent, summed over its calls, in UTF-8 bytes: all of it, its system text, its tool definitions. */
export interface RunRequestSize {
  bytes: number;
  systemBytes: number;
  toolBytes: number;
}

export interface RunRecord {
  id: string;
  sessionKey: string;
  agentId: string;
  status: RunStatus;
  owner: string;
  epoch: number;
  model: string;
  startedAt: number;
  endedAt: number | null;
  usage: RunUsage;
  preambleChars: number;
  promptChars: number;
  /** The request bodies the model calls actually sent. */
  request: RunRequestSize;
  finalText: string | null;
  errorCode: string | null;
  errorMessage: string | null;
}

export interface NewRun {
  id: string;
  sessionKey: string;
  agentId: string;
  owner: string;
  /** How long the lease the run takes lasts, unless renewed. */
  leaseTtlMs: number;
  model: string;
  inputIds: string[];
  /** Set when the session is a sub-agent's: its first run marks it running, in the same transaction. */
  subagentId?: string;
}

export interface RunOutcome {
  status: TerminalRunStatus;
  usage: RunUsage;
  preambleChars: number;
  promptChars: number;
  request?: RunRequestSize;
  finalText: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
}

export interface NewOutboxRow {
  id: string;
  kind: string;
  target: string;
  payload: unknown;
  idempotencyKey: string;
}

/** Journal event types; docs/control-api.md describes each payload. */
export type JournalEventType =
  | 'run.started'
  | 'run.completed'
  | 'run.interrupted'
  | 'input.stored'
  | 'input.dropped'
  | 'session.reply'
  | 'lane.stalled'
  | 'outbox.dead'
  | 'exchange.updated'
  | 'subagent.updated'
  | 'board.updated';

export interface NewEvent {
  type: JournalEventType;
  sessionKey?: string | null;
  runId?: string | null;
  payload?: unknown;
}

export interface RunCommit {
  runId: string;
  sessionKey: string;
  epoch: number;
  outcome: RunOutcome;
  transcript: NewTranscriptEntry[];
  /** Every input the run claimed (including steered ones); all become consumed. */
  consumedInputIds: string[];
  outbox: NewOutboxRow[];
  events: NewEvent[];
  /** Set when the run's session is a sub-agent's: the store settles it (or freezes its answer) in the same transaction. */
  subagent?: { id: string; error: string | null; maxResultChars: number };
  /** The run's side-effecting tool calls and their results, recorded in the ledger. */
  toolCalls?: SettledToolCall[];
}

export interface RunStore {
  /**
   * Takes the session's lease for `run.owner` (as `LeaseStore.acquire` does) and, in the same transaction,
   * creates the run and claims its inputs. Writes nothing and answers `leased` when another owner holds an
   * unexpired lease, or `taken` when an input is no longer queued.
   */
  start(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken'>;
  /** Claims more queued inputs into a running run (steering). Returns the ids actually claimed. */
  claimMore(runId: string, sessionKey: string, epoch: number, inputIds: string[], now: number): Promise<string[]>;
  /**
   * A run commits atomically: transcript, inputs consumed, outcome, outbox rows and events in one
   * transaction, guarded by the lease epoch, and releases the lease. Throws LEASE_LOST (writing
   * nothing) if the epoch moved. Returns the run as committed.
   */
  commit(commit: RunCommit, now: number): Promise<CommittedRun>;
  get(id: string): Promise<RunRecord | undefined>;
  list(filter?: { sessionKey?: string; status?: RunStatus; limit?: number }): Promise<RunRecord[]>;
  /**
   * Crash recovery for runs left `running` by `owner` (or whose lease expired): each becomes
   * `interrupted` with `diagnostic`, and its claimed inputs are queued again, or dropped with a note
   * once they have been interrupted more than `maxRetries` times.
   */
  recoverOrphans(owner: string, diagnostic: string, maxRetries: number, now: number): Promise<RecoveryReport>;
}

/**
 * The journal events a write appended, as committed. The writer hands them to the journal's tail, which
 * publishes them without reading them back.
 */
export interface Journaled {
  events: EventRecord[];
}

/** A run as it started: its lease's fencing epoch, and the inputs it claimed, oldest first. */
export interface StartedRun extends Journaled {
  epoch: number;
  inputs: InputRecord[];
}

export interface CommittedRun extends Journaled {
  run: RunRecord;
}

export interface RecoveryReport {
  interruptedRuns: string[];
  requeuedInputs: string[];
  droppedInputs: string[];
}

/** `dead`: given up after its attempts; `dropped`: a dead row the operator chose not to retry. */
export type OutboxStatus = 'pending' | 'delivered' | 'dead' | 'dropped';

export interface OutboxRecord {
  id: string;
  kind: string;
  target: string;
  payload: unknown;
  idempotencyKey: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

export interface OutboxStore {
  add(row: NewOutboxRow, now: number): Promise<OutboxRecord>;
  /** Pending rows due at `now`, oldest first. */
  listDue(now: number, limit: number): Promise<OutboxRecord[]>;
  markDelivered(id: string, now: number): Promise<void>;
  markFailed(id: string, error: string, nextAttemptAt: number, dead: boolean): Promise<void>;
  get(id: string): Promise<OutboxRecord | undefined>;
  list(filter?: { status?: OutboxStatus; limit?: number }): Promise<OutboxRecord[]>;
  /** Compare-and-set from `dead`: pending again with its attempts reset, due now. Undefined when it was not dead. */
  retry(id: string, now: number): Promise<OutboxRecord | undefined>;
  /** Compare-and-set from `dead` to `dropped`. Undefined when it was not dead. */
  drop(id: string): Promise<OutboxRecord | undefined>;
}

export interface LeaseStore {
  /**
   * Takes the session's lease for `owner` if it is free, expired, or already `owner`'s, bumping the
   * fencing epoch. Expiry is judged by the database clock.
   */
  acquire(sessionKey: string, owner: string, ttlMs: number): Promise<{ epoch: number } | undefined>;
  renew(sessionKey: string, owner: string, epoch: number, ttlMs: number): Promise<boolean>;
  release(sessionKey: string, owner: string, epoch: number): Promise<void>;
  get(sessionKey: string): Promise<{ owner: string; epoch: number; expiresAt: number } | undefined>;
}

export interface EventRecord {
  seq: number;
  type: JournalEventType;
  sessionKey: string | null;
  runId: string | null;
  payload: unknown;
  createdAt: number;
}

export interface EventJournal {
  append(event: NewEvent, now: number): Promise<EventRecord>;
  list(filter?: { afterSeq?: number; sessionKey?: string; runId?: string; limit?: number }): Promise<EventRecord[]>;
  /** The sequence number of the newest event, 0 when the journal is empty. */
  latestSeq(): Promise<number>;
}

/**
 * How the first reply of an exchange reaches its requester:
 * awaiting: a live waiter (a tool call or an API request) will take it when it comes;
 * held: the run that sent it (`waiterRunId`) did not wait, or stopped waiting, and is still running: a
 *   sessions_wait of that run may take the reply; if it does not, the reply is delivered when the run ends;
 * reply_held: the reply came while `held`; it is kept for that run in the same way;
 * detached: nobody waits; it will be delivered into the requester's session as an input;
 * replied: a waiter took it; it counts as delivered once the waiter's run commits successfully;
 * delivered: it is in the requester's session (or was handed to the API caller that waited).
 */
export type ExchangeReplyState = 'awaiting' | 'held' | 'reply_held' | 'detached' | 'replied' | 'delivered';
export type ExchangePhase = 'request' | 'ping_pong' | 'announce' | 'done';

/** One sessions_send: the request, its first reply, the ping-pong turns and the announce step. */
export interface ExchangeRecord {
  id: string;
  conversationId: string;
  hop: number;
  requesterSession: string;
  requesterAgent: string;
  targetSession: string;
  targetAgent: string;
  requestInputId: string;
  maxTurns: number;
  phase: ExchangePhase;
  /** The last ping-pong turn started, 0 before the first. */
  turn: number;
  replyState: ExchangeReplyState;
  /** The run (or null for an API caller) that waits for the reply while `awaiting`/`replied`. */
  waiterRunId: string | null;
  replyRunId: string | null;
  replyStatus: string | null;
  replyText: string | null;
  createdAt: number;
  updatedAt: number;
}

export type NewExchange = Omit<
  ExchangeRecord,
  'phase' | 'turn' | 'replyRunId' | 'replyStatus' | 'replyText' | 'createdAt' | 'updatedAt' | 'requestInputId'
>;

export type ExchangeChanges = Partial<
  Pick<ExchangeRecord, 'phase' | 'turn' | 'replyState' | 'waiterRunId' | 'replyRunId' | 'replyStatus' | 'replyText'>
>;

export interface ExchangeFilter {
  replyStates?: ExchangeReplyState[];
  requesterSession?: string;
  targetSession?: string;
  waiterRunId?: string;
  limit?: number;
  newest?: boolean;
}

export interface ExchangeStore {
  /**
   * Stores the request input and its exchange in one transaction. A repeated idempotency key returns
   * the existing pair with `created: false` and writes nothing.
   */
  open(exchange: NewExchange, input: NewInput, now: number): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean }>;
  /**
   * With `rate`: a new exchange is opened only while the window allows one more (a repeat is never
   * counted). With `call`: the tool call that opens it is recorded in the ledger in the same transaction.
   */
  open(
    exchange: NewExchange,
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean } | LimitReached>;
  get(id: string): Promise<ExchangeRecord | undefined>;
  /**
   * Compare-and-set: applies `changes` only while the row still has one of the `from` reply states
   * (and, when given, one of the `phases` and the `waiterRunId`). Returns the row as it is afterwards and whether it changed.
   */
  transition(
    id: string,
    from: { replyStates?: ExchangeReplyState[]; phases?: ExchangePhase[]; waiterRunId?: string },
    changes: ExchangeChanges,
    now: number,
  ): Promise<{ exchange: ExchangeRecord; changed: boolean }>;
  /** Oldest first; with `newest: true`, the newest `limit` rows, newest first. */
  list(filter?: ExchangeFilter): Promise<ExchangeRecord[]>;
}

/** An A2A task as the server stores it: the protocol's Task (v1.0 JSON) plus what maps it onto a session. */
export interface A2ATaskRecord {
  id: string;
  agentId: string;
  contextId: string;
  /** The authenticated peer that created it; only it may read or change it. */
  owner: string;
  /** The v1.0 state name, e.g. TASK_STATE_WORKING. */
  state: string;
  /** The Task in the protocol's v1.0 JSON form. */
  task: unknown;
  sessionKey: string | null;
  /** The input the task's latest message became. */
  inputId: string | null;
  /** The messageId of the message that created the task: a retry of it finds this task. */
  firstMessageId: string | null;
  /** When the task's status last changed (its status timestamp). */
  statusAt: number | null;
  createdAt: number;
  updatedAt: number;
  lastActivityAt: number;
}

export interface A2ATaskEventRecord {
  seq: number;
  taskId: string;
  type: string;
  detail: unknown;
  createdAt: number;
}

export interface A2APushConfigRecord {
  taskId: string;
  configId: string;
  owner: string;
  /** The TaskPushNotificationConfig in the protocol's v1.0 JSON form. */
  config: unknown;
  /** The protocol version the client spoke when it registered it: notifications are shaped for it. */
  wireVersion: string;
}

/**
 * A task on a remote A2A agent. `waiting`: a tool call holds it; `followed`: the gateway follows it and
 * delivers its result into the session; `returned`: the tool call got the result; `delivered`: the
 * result is in the session as a message.
 */
export interface RemoteTaskRecord {
  taskId: string;
  /** The configured remote agent id, or the URL it was reached at. */
  remote: string;
  contextId: string;
  sessionKey: string;
  state: 'waiting' | 'followed' | 'returned' | 'delivered';
  /** The remote task's last known state (v1.0 name). */
  remoteState: string;
  /** The secret the remote's push notifications for this task must carry, once registered. */
  pushToken: string | null;
  /** The run whose tool call waits for (or got) the result. */
  waiterRunId: string | null;
  /** The settled result (the a2a_send answer), kept until it is surely in the session. */
  result: unknown;
  /** The messageId a2a_send created the task with (the tool-call ledger's key): a rerun finds the task by it. */
  messageId?: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface A2ATaskFilter {
  agentId?: string;
  owner?: string;
  contextId?: string;
  states?: string[];
  /** Only tasks whose status changed at or after this time. */
  statusSince?: number;
  limit?: number;
  offset?: number;
}

export interface A2ATaskStore {
  /** Inserts or replaces the task snapshot; the session mapping is left as it is. Returns the task as stored. */
  save(
    task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner' | 'state' | 'task'> &
      Partial<Pick<A2ATaskRecord, 'firstMessageId' | 'statusAt'>>,
    now: number,
  ): Promise<A2ATaskRecord>;
  /** The task a peer created with this first message, if any. */
  findByFirstMessage(agentId: string, owner: string, messageId: string): Promise<A2ATaskRecord | undefined>;
  /** How many tasks match (limit and offset ignored). */
  count(filter: A2ATaskFilter): Promise<number>;
  /** The peers that own tasks in this context of the agent: at most two (a context has one owner). */
  contextOwners(agentId: string, contextId: string): Promise<string[]>;
  /** Records which session and input the task's latest message became (creating a placeholder row if needed). */
  attachInput(
    task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>,
    sessionKey: string,
    inputId: string,
    now: number,
  ): Promise<void>;
  get(id: string): Promise<A2ATaskRecord | undefined>;
  /** Newest activity first. */
  list(filter?: A2ATaskFilter): Promise<A2ATaskRecord[]>;
  /** Push notification configs of a task (A2A): saved by id, replaced when the id repeats. */
  savePushConfig(config: A2APushConfigRecord, now: number): Promise<void>;
  listPushConfigs(taskId: string): Promise<A2APushConfigRecord[]>;
  /** Deletes one config, or all of the task's when `configId` is omitted. */
  deletePushConfig(taskId: string, configId?: string): Promise<void>;
  /** Tasks this gateway's agents gave remote A2A agents, followed until their result is delivered. */
  saveRemoteTask(task: RemoteTaskRecord, now: number): Promise<void>;
  getRemoteTask(taskId: string): Promise<RemoteTaskRecord | undefined>;
  findRemoteTaskByMessage(messageId: string): Promise<RemoteTaskRecord | undefined>;
  listRemoteTasks(filter: { states: RemoteTaskRecord['state'][]; waiterRunId?: string }): Promise<RemoteTaskRecord[]>;
  /** The per-task replay log: messages, state changes, push delivery attempts. */
  appendEvent(taskId: string, type: string, detail: unknown, now: number): Promise<void>;
  listEvents(taskId: string): Promise<A2ATaskEventRecord[]>;
}

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
>;

export interface SubagentFilter {
  parentSession?: string;
  rootSession?: string;
  states?: SubagentState[];
  /** Settled before this time and not yet archived. */
  settledBefore?: number;
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
  /** A crash interrupted it and one retry is allowed: counts the attempt and notes it. */
  noteRetry(id: string, diagnostic: string, now: number): Promise<void>;
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
}

/** What a parent is doing when a child's completion reaches it. */
export interface ParentFacts {
  /** It is a sub-agent whose run has ended and that waits for its children. */
  waiting: boolean;
  /** How many of its other children have not reached it yet. */
  others: number;
}

export type ToolCallState = 'started' | 'completed';

/**
 * Where a tool call sits, in terms a retried run keeps: `scope` is the run's first input id, `step` the
 * model step and `index` the call's place among that step's calls.
 */
export interface ToolCallPosition {
  scope: string;
  step: number;
  index: number;
}

export interface NewToolCall extends ToolCallPosition {
  /** The effect key: the position, the tool and a hash of its arguments. */
  key: string;
  tool: string;
  argsHash: string;
  sessionKey: string;
  runId: string;
}

export interface ToolCallRecord extends ToolCallPosition {
  key: string;
  tool: string;
  argsHash: string;
  sessionKey: string;
  /** The run that first made the call, and the latest run that made it again. */
  firstRunId: string;
  runId: string;
  state: ToolCallState;
  result: unknown;
  /** The key of an earlier call at the same position with another tool or other arguments. */
  divergedFrom: string | null;
  /** How often it was made: 1, plus one per retried run that made it again. */
  calls: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * The tool-call ledger (ARCHITECTURE.md section 4.6). Rows are written inside transactions that happen
 * anyway: a call with an effect in the store is recorded in the effect's own transaction (the input, the
 * exchange, the spawn), and every call's result in the run's commit (`RunCommit.toolCalls`). The effect
 * itself is written under the call's key as its idempotency key, so a retry at the same position finds
 * it and causes no second effect.
 */
export interface ToolCallStore {
  get(key: string): Promise<ToolCallRecord | undefined>;
  /** Oldest first. */
  list(filter: { sessionKey?: string; runId?: string; limit?: number }): Promise<ToolCallRecord[]>;
}

/** A call's outcome, written with the run's commit. `rerun`: an earlier run had made the same call. */
export interface SettledToolCall {
  call: NewToolCall;
  result: unknown;
  rerun: boolean;
}

/** The records whose ids a person may shorten (`runs show bd29b5f4`, as git does). */
export type IdKind = 'run' | 'subagent' | 'outbox' | 'exchange' | 'a2a_task' | 'input' | 'board_task';

export interface Store {
  /** Ids of `kind` that start with `prefix`, at most `limit`, in id order; an id equal to `prefix` alone. */
  matchIds(kind: IdKind, prefix: string, limit: number): Promise<string[]>;
  readonly toolCalls: ToolCallStore;
  readonly subagents: SubagentStore;
  readonly a2aTasks: A2ATaskStore;
  /** The task board's own port (src/board). */
  readonly board: BoardStore;
  readonly sessions: SessionStore;
  readonly exchanges: ExchangeStore;
  readonly inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;
  /** Resolves once every write committed before the call is durable (at once where each commit already is). */
  durable(): Promise<void>;
  close(): Promise<void>;
}
