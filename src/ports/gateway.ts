/**
 * The door: what the gateway offers the fronts (the control API, A2A, the board, the mailbox, the console, runtimes),
 * as a few roles with their answer types. A front is typed against the roles it uses, never against the gateway's
 * classes or the store behind them; the gateway implements them and the composition root (src/app.ts) hands each
 * front what it needs.
 */
import type { AgentConfig, SwitchboardConfig } from '../config/schema.js';
import type { ConfigReload } from '../config/reload.js';
import type { LinkSource } from '../core/collaboration.js';
import type { RunStatus } from '../core/run-status.js';
import type {
  ApprovalDecision,
  ApprovalRecord,
  ApprovalStatus,
  BudgetAmount,
  EventRecord,
  ExchangeRecord,
  IdKind,
  InputRecord,
  NewEvent,
  NewOutboxRow,
  OutboxRecord,
  OutboxStatus,
  RunRecord,
  SessionAnnotation,
  SessionFilter,
  SessionRecord,
  SubagentRecord,
  TranscriptEntry,
  UsageSlice,
  UsageTotal,
} from './index.js';
import type {
  Accepted,
  AgentSendRequest,
  AgentSendResult,
  FrontInput,
  GatewayStatus,
  GatewayView,
  Inbound,
  LiveListener,
  MessagePath,
  Opening,
  OutboxHandler,
  RunCompletions,
  RunStepView,
  RunToolCall,
  SendRequest,
  SendResult,
  SpawnRequest,
  SpawnResult,
  SubagentView,
  TraceQuery,
  TraceView,
  WaitOutcome,
  WaitResult,
} from './answers.js';

export type * from './answers.js';

export interface ResolvedAgent {
  config: AgentConfig;
  model: string;
  workspace: string | undefined;
  maxSteps: number;
  historyLimit: number;
  timeoutSeconds: number;
  /** Whether its runs commit each step (`steps`) or only their end (`run`): `agents.defaults.durability`. */
  durability: 'steps' | 'run';
}

/** The address book as the fronts read it: the configured agents, and which one a channel's message goes to. */
export interface AgentDirectory {
  list(): ResolvedAgent[];
  /** The agent; throws AGENT_NOT_FOUND naming the configured ones. */
  get(agentId: string): ResolvedAgent;
  has(agentId: string): boolean;
  defaultAgent(): ResolvedAgent;
  /** The agent the bindings route this inbound channel to. */
  bind(inbound: Inbound): ResolvedAgent;
}

/** Where the gateway and its parts log: a level, a line, and fields (the composition root's logger, redacted). */
export type GatewayLog = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** Intake: a message becomes a durable input (ARCHITECTURE.md section 4, rule 1); nothing is acknowledged before. */
export interface Intake {
  readonly stopping: boolean;
  /** A user's or a caller's message to an agent or session (the control API, the CLI, the console). */
  send(request: SendRequest): Promise<SendResult>;
  /** `send --from`: as an agent session, through the checks its sessions_send tool would meet. */
  sendAs(fromSessionKey: string, request: AgentSendRequest): Promise<AgentSendResult>;
  /** A front's message (A2A, the mailbox, the board): one intake for all of them. */
  accept(input: FrontInput, opening: Opening): Promise<Accepted>;
}

/** Waits: for an input's reply, with a deadline. */
export interface Waits {
  waitForInput(inputId: string, timeoutMs: number, fresh?: boolean): Promise<WaitResult>;
  inputOutcome(inputId: string): Promise<Exclude<WaitResult, { status: 'timeout' }> | undefined>;
  inputRunId(inputId: string): Promise<string | undefined>;
  /** Resolves once everything the store committed so far is durable. */
  durable(): Promise<void>;
}

/** Queries: what the gateway holds, read-only. */
export interface Queries {
  resolveId(kind: IdKind, given: string): Promise<string>;
  listSessions(filter?: Pick<SessionFilter, 'agentId' | 'archived' | 'limit'>): Promise<SessionRecord[]>;
  describeSession(key: string): Promise<{ session: SessionRecord; recentRuns: RunRecord[]; queuedInputs: number }>;
  history(key: string, limit?: number): Promise<TranscriptEntry[]>;
  journalAfter(afterSeq: number, filter?: { sessionKey?: string; limit?: number }): Promise<EventRecord[]>;
  listRuns(filter?: { sessionKey?: string; limit?: number }): Promise<RunRecord[]>;
  getRun(runId: string): Promise<{ run: RunRecord; inputs: InputRecord[] }>;
  /** A run's status, or undefined when there is no such run (one read: the A2A client asks whether a waiting run still runs). */
  runStatus(runId: string): Promise<RunStatus | undefined>;
  runCompletions(runId: string): Promise<RunCompletions>;
  runToolCalls(run: Pick<RunRecord, 'id' | 'sessionKey'>): Promise<RunToolCall[]>;
  /** The run's steps, its final one (held by its commit) included once it ended. */
  runSteps(run: RunRecord): Promise<RunStepView[]>;
  listExchanges(filter?: { sessionKey?: string; limit?: number }): Promise<ExchangeRecord[]>;
  getExchange(id: string): Promise<{ exchange: ExchangeRecord; inputs: InputRecord[] }>;
  listSubagents(sessionKey?: string, recursive?: boolean): Promise<SubagentView[]>;
  getSubagent(target: string): Promise<{ view: SubagentView; record: SubagentRecord }>;
  offeredToolNames(sessionKey: string): Promise<string[]>;
  listOutbox(filter: { status?: OutboxStatus; limit?: number }): Promise<OutboxRecord[]>;
  outboxBacklog(): Promise<{ pending: number; dead: number }>;
  usageSince(since: number): Promise<UsageTotal[]>;
  /** The same in slices of `bucketMs` from `since` (the console's charts). */
  usageByTime(since: number, bucketMs: number): Promise<UsageSlice[]>;
  /** The sessions with queued inputs, and when the oldest of each was queued (the console's queue-age chart). */
  inputQueues(): Promise<{ sessionKey: string; oldestQueuedAt: number }[]>;
  /**
   * A trace as the store holds it (gateway/insight/trace-view.ts): by its id, or the trace of an input, a run, a
   * sub-agent or a board task. NOT_FOUND names the id that was not found and where to find one.
   */
  traceView(of: TraceQuery): Promise<TraceView>;
  /** The gateway's own hand-offs in a window (exchanges, spawns) for the collaboration map (core/collaboration.ts). */
  collaborationLinks(window: { since: number; until: number }): Promise<LinkSource>;
  messagePath(inputId: string): Promise<MessagePath>;
}

/** The gateway itself: who it is, how it is, and the gateways beside it on the database. */
export interface Presence {
  readonly config: SwitchboardConfig;
  /** This gateway's id: stable across its restarts, one per data directory. */
  readonly gatewayId: string;
  readonly agents: AgentDirectory;
  status(): GatewayStatus;
  /** Every gateway on this database: alive or gone, its heartbeat, the sessions it holds, its journal lag. */
  gateways(): Promise<GatewayView[]>;
  ready(): Promise<boolean>;
  /** Takes the config's secrets (tokens, keys, header values) out of a text before it leaves the gateway. */
  redact(text: string): string;
}

/** Control: what an operator changes. */
export interface Control {
  annotateSession(key: string, change: SessionAnnotation): Promise<SessionRecord>;
  cancelInput(inputId: string, why: string): Promise<void>;
  cancelRun(runId: string): Promise<boolean>;
  /**
   * Forks a run into a new session that starts from the state after its first `step` steps (docs/delivery.md, "Forking a
   * run"): they are replayed there without asking the model, which is asked from step `step` on. Answers at once; the
   * fork's run goes on in its session's lane.
   */
  forkRun(runId: string, step: number): Promise<{ sessionKey: string; runId: string }>;
  killSubagent(target: string, why?: string): Promise<string[]>;
  settleDeadOutbox(id: string, action: 'retry' | 'drop'): Promise<OutboxRecord>;
  reloadConfig(next: SwitchboardConfig): ConfigReload;
  /** A consistent copy of the store in a new file (SQLite; see Store.backup). */
  backupStore(path: string): Promise<{ path: string; bytes: number }>;
}

/**
 * Spawns: a sub-agent started by a caller outside any run (the MCP server), as its spawner session's sessions_spawn
 * would start it: the tool policy, the spawn allowlist, depth and child limits of that session's agent apply.
 */
export interface Spawns {
  /**
   * Spawns under `fromSessionKey` (a main, direct or group session, opened on first use). `request.correlationId`
   * dedupes: a repeat answers the sub-agent the first call made, with `existing: true`. The child's completion is
   * delivered into that session, as any sub-agent's is.
   */
  spawnAs(fromSessionKey: string, request: SpawnRequest & { correlationId: string }): Promise<SpawnResult>;
  /** Waits up to `timeoutMs` for the sub-agent (id or child session key) to settle: its view, and its result once settled. */
  waitSubagent(
    target: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<{ status: WaitOutcome['status']; view: SubagentView; result: string | null }>;
}

/** Events: the journal as it grows, and the live text of runs. */
export interface Events {
  subscribe(listener: LiveListener): () => void;
  watchDeltas(sessionKey?: string): () => void;
  publishJournal(): Promise<void>;
  /** Appends a front's own event to the journal (`a2a.refused`) and publishes it. */
  recordEvent(event: NewEvent): Promise<void>;
}

/** Deliveries: the outbox, for the kinds a front delivers (A2A pushes, mailbox writes). */
export interface Deliveries {
  registerDelivery(kind: string, handler: OutboxHandler): void;
  enqueueDelivery(row: NewOutboxRow): Promise<void>;
  /** Delivers now the outbox rows a front wrote through its own store (A2A pushes), rather than at the next poll. */
  kickDeliveries(): void;
}

/** A budget's cap and what it has spent and holds reserved (docs/gates.md); costs in millionths of a dollar. */
export interface BudgetView {
  key: string;
  /** The config key that sets the cap. */
  source: string;
  /** The cap, a raised one where an approval raised it; an unset side is no cap. */
  limit: Partial<BudgetAmount>;
  spent: BudgetAmount;
  reserved: BudgetAmount;
}

/** Gates: the approval requests people answer, and the budgets' spend (docs/gates.md). */
export interface Gates {
  listApprovals(filter: { status?: ApprovalStatus; sessionKey?: string; limit?: number }): Promise<ApprovalRecord[]>;
  getApproval(id: string): Promise<ApprovalRecord>;
  pendingApprovals(): Promise<number>;
  /** Answers a pending request: APPROVAL_ANSWERED when another answer (or the expiry) came first, APPROVAL_CLOSED when its run ended. */
  decideApproval(id: string, decision: ApprovalDecision): Promise<ApprovalRecord>;
  budgetStatus(): Promise<BudgetView[]>;
}

/** The whole door (the control API uses all of it); a front takes only the roles it uses. */
export interface GatewayApi extends Intake, Waits, Queries, Presence, Control, Events, Deliveries, Gates, Spawns {}
