/**
 * The door's answer types (ports/gateway.ts has the roles): what a front sends in and gets back. Types only, with no
 * import of the config or of node, so that the web console type-checks its API answers against these very types.
 */
import type { Conversation } from '../core/hops.js';
import type { QueueMode } from '../core/queue-mode.js';
import type { RunStatus } from '../core/run-status.js';
import type { SessionKind } from '../core/session-key.js';
import type { SubagentHandle, SubagentRole } from '../core/subagent.js';
import type {
  EventRecord,
  GatewayRecord,
  InputRecord,
  NewToolCall,
  OutboxRecord,
  OutboxStatus,
  Provenance,
  RecoveryReport,
  ReplyRoute,
  RunRecord,
  SubagentRecord,
} from './index.js';

export type WaitResult =
  | { status: 'completed'; run: RunRecord; reply: string | null }
  | { status: 'dropped'; input: InputRecord }
  | { status: 'stored'; input: InputRecord }
  | { status: 'timeout'; input: InputRecord };

export interface SendRequest {
  /** An agent id, or a session key. Without one, the bindings route the inbound channel to an agent. */
  target?: string;
  message: string;
  mode?: QueueMode;
  idempotencyKey?: string;
  /** The channel it arrived on; decides the default queue mode and the reply route. */
  inbound?: Inbound;
  /**
   * The caller waits for the reply and acknowledges nothing before it: the input is not made durable on its own
   * (the run's commit, made durable before the reply is handed out, covers it), which saves a sync on SQLite FULL.
   */
  waiting?: boolean;
  provenance?: Provenance;
}

export interface SendResult {
  input: InputRecord;
  sessionKey: string;
  /** False when the idempotency key matched an input accepted before. */
  created: boolean;
}

export interface Inbound {
  channel: string;
  account?: string;
  peer?: string;
  /** A group conversation id, for channels that have them. */
  group?: string;
}

export interface GatewayStatus {
  gatewayId: string;
  startedAt: number;
  uptimeMs: number;
  /** The newest journal event published (the console's overview starts its stream a few events before it). */
  journalSeq: number;
  agents: string[];
  lanes: Record<LaneName, { active: number; waiting: number; max: number }>;
  activeRuns: { sessionKey: string; runId: string | null }[];
  stalledLanes: StalledLane[];
  /** Runs suspended in waits, as this gateway listens for them: they hold no lane slot (ARCHITECTURE.md 4.7). */
  waitingRuns: number;
  lastRecovery: RecoveryReport;
  /** Runs this gateway recovered after their leases expired (another gateway's, or its own renewed too late). */
  takenOver: { runs: number; lastAt: number | null };
}

/** `acp`: sub-agents on external runtimes (ACP agents, CLI children; acp.maxConcurrentSessions). */
export type LaneName = 'main' | 'subagent' | 'nested' | 'acp';

export interface StalledLane {
  sessionKey: string;
  oldestQueuedAt: number;
  stalledForMs: number;
}

export type LiveEvent =
  | { type: 'journal'; event: EventRecord }
  /**
   * Streamed model text, only from runs that started while someone watched (`watchDeltas`). Not
   * journalled: replay a run's text from its transcript instead.
   */
  | { type: 'delta'; sessionKey: string; runId: string; text: string }
  /**
   * A run committed and consumed these inputs. Published straight from the commit, so that whoever waits
   * on them wakes at once, with the run as committed, and reads nothing back (the journal's events follow).
   */
  | { type: 'settled'; sessionKey: string; inputIds: string[]; run: RunRecord };

export type LiveListener = (event: LiveEvent) => void;

export type OutboxHandler = (row: OutboxRecord) => Promise<void>;

/** A registered gateway as another one sees it. */
export interface GatewayView extends GatewayRecord {
  /** Stopped cleanly, or its heartbeat is older than a lease's lifetime. */
  alive: boolean;
  heartbeatAgeMs: number;
  /** Journal events committed that it has not published to its streams and waiters yet. */
  journalLag: number;
}

/** One tool call of a run (`runs show`): what it was asked and what it answered (null while it had no result). */
export interface RunToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  output: unknown;
}

/**
 * One step of a run (`runs show`): one model call and the tools it asked for. `answered`: its answer is committed and
 * its tools ran (or a crash cut them); `settled`: its tools' results are committed too; `final`: the step the run ended
 * with, which the run's own commit holds. A step whose attempt is below the run's was replayed, not asked again, by
 * each later attempt.
 */
export interface RunStepView {
  step: number;
  attempt: number;
  model: string;
  tools: string[];
  inputTokens: number;
  outputTokens: number;
  /** How long the model took to answer, in ms (null for the final step). */
  ms: number | null;
  state: 'answered' | 'settled' | 'final';
}

export type PathStepKind = 'accepted' | 'run.started' | 'tool.call' | 'exchange' | 'spawn' | 'run.ended' | 'reply';

export interface PathStep {
  kind: PathStepKind;
  /** When it happened (ms since the epoch); null when the store kept no time for it (a tool call without an effect). */
  at: number | null;
  sessionKey: string;
  /** How deep in the path: 0 for the message's own session, 1 for the session it reached, and so on. */
  depth: number;
  summary: string;
  runId?: string;
  inputId?: string;
  /** The exchange or sub-agent the step opened, for a link to it. */
  ref?: { kind: 'exchange' | 'subagent'; id: string };
  /** The other session's steps, when the step reached one. */
  children?: PathStep[];
}

export interface MessagePath {
  input: Pick<InputRecord, 'id' | 'sessionKey' | 'text' | 'provenance' | 'status' | 'createdAt'>;
  steps: PathStep[];
}

export type { CollaborationEdge, CollaborationGraph, CollaborationLink, LinkKind } from '../core/collaboration.js';

/** What the trace view is asked for: a trace by its id, or the trace of an input, a run, a sub-agent or a board task. */
export interface TraceQuery {
  traceId?: string;
  inputId?: string;
  runId?: string;
  /** A sub-agent's id or child session key: the trace of its first run. */
  subagent?: string;
  /** A board task's id: the trace of the first run in its sessions (`agent:<agentId>:board:<taskId>`). */
  taskId?: string;
}

/**
 * What a span of the trace view stands for: the OpenTelemetry GenAI operations the gateway exports (a run, a model
 * call, a tool call, a delivery), and two the view adds as parents: a board task no traced span created, and a span
 * that is not in this store (another gateway's, or a remote caller's).
 */
export type TraceSpanKind = 'invoke_agent' | 'chat' | 'execute_tool' | 'deliver' | 'board_task' | 'remote';

/**
 * A run's own status; `ok`, `error` or `running` for a model or tool call; a delivery's outbox status, or `failed` for
 * an attempt that was retried.
 */
export type TraceSpanStatus = RunStatus | OutboxStatus | 'ok' | 'error' | 'running';

export interface TraceSpanView {
  /**
   * The span's id as the exporter sends it (kit/trace-context.ts derives them). Null for a span that has none the view
   * can know: the model calls of a run that committed only its end (durability "run", several calls in one commit), and
   * a tool call whose place in its run no step recorded.
   */
  spanId: string | null;
  /** Another span of this answer, or null for the trace's root. */
  parentSpanId: string | null;
  /** How deep in the tree: 0 for a root. The spans come in tree order, each parent before its children. */
  depth: number;
  /** `invoke_agent <agent>`, `chat <model>`, `execute_tool <tool>`, `deliver <kind>`, `board_task <id>`, `remote <peer>`. */
  name: string;
  kind: TraceSpanKind;
  sessionKey: string | null;
  agentId: string | null;
  runId: string | null;
  /** Milliseconds since the epoch. */
  start: number;
  /** Null while it goes on: a run running or suspended, a tool call its run waits in, a delivery not made yet. */
  end: number | null;
  status: TraceSpanStatus;
  inputTokens: number | null;
  outputTokens: number | null;
  /** US dollars at `models.prices`; null where a model behind it has no price, or it made no model call. */
  cost: number | null;
  /** The exported span's attributes that the store knows (gen_ai.* and switchboard.* names, docs/observability.md). */
  attributes: Record<string, string | number | boolean>;
}

/** A trace drawn from the store (no collector needed): its runs, their model and tool calls, their deliveries. */
export interface TraceView {
  traceId: string;
  /** The run span of what was asked about (an input's run, a run, a sub-agent's first run), when there is one. */
  focusSpanId: string | null;
  /** The first span's start, and the last span's end (now, while one goes on). */
  start: number;
  end: number;
  /** How many runs the view shows. */
  runs: number;
  /** The trace has more runs than the view reads (the first ones, oldest first, are shown). */
  clipped: boolean;
  currency: 'USD';
  /** The runs' tokens, and their cost (null when a model behind one has no price). */
  totals: { inputTokens: number; outputTokens: number; cost: number | null };
  spans: TraceSpanView[];
}

export interface SpawnRequest {
  task: unknown;
  context?: string;
  agentId?: string;
  label?: string;
  model?: string;
  role?: SubagentRole;
  tools?: string[];
  timeoutSeconds?: number;
  correlationId?: string;
  cwd?: string;
  worktree?: boolean;
  /** An external runtime instead of a model in this gateway (docs/runtimes.md); `agent` names it. */
  runtime?: 'model' | 'acp' | 'process';
  /** The runtime's name under `acp.agents` (runtime acp) or `runtimes` (runtime process). */
  agent?: string;
}

export interface SpawnResult {
  status: 'accepted';
  runId: string;
  childSessionKey: string;
  handle: SubagentHandle;
  /** Set when the correlationId was used before: this is that sub-agent, not a new one. */
  existing?: true;
}

export interface SubagentView {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  agentId: string;
  label: string | null;
  depth: number;
  role: SubagentRole;
  state: SubagentRecord['state'];
  /** Its run ended while its own sub-agents still worked; it will be woken when they are done. */
  waitingForSubagents: boolean;
  elapsedMs: number;
  tokens: { input: number; output: number };
  diagnostic: string | null;
  runId: string | null;
  history: SubagentRecord['history'];
  resultChars: number | null;
  worktree: { path: string; branch: string } | null;
  /** The external runtime it runs on (`acp:<name>`, `process:<name>`), or null for a model in the gateway. */
  runtime: string | null;
  /** The model it was spawned with; null when it runs on its agent's own. */
  model: string | null;
}

export interface WaitOutcome {
  /** ok: all succeeded; partial: some failed, within maxFailures; failed: more failed than maxFailures; timeout: not all were done in time. */
  status: 'ok' | 'partial' | 'failed' | 'timeout';
  children: (SubagentView & { resultPreview: string | null })[];
  succeeded: number;
  running: number;
  failed: { childSessionKey: string; label: string | null; state: string; why: string | null }[];
}

export interface Requester {
  sessionKey: string;
  agentId: string;
  /** The run making the call; absent for the control API's `send --from`. */
  runId?: string;
  /** The conversation the calling run belongs to (from its inputs), for the hop budget. */
  conversation?: { id: string; hop: number };
}

export interface TargetRef {
  sessionKey?: string;
  label?: string;
  agentId?: string;
}

export interface SessionSummary {
  sessionKey: string;
  agentId: string;
  kind: SessionKind | 'unknown';
  label: string | null;
  state: string;
  updatedAt: number;
  lastRunAt: number | null;
}

export interface AgentSendRequest extends TargetRef {
  message: string;
  mode?: QueueMode;
  /** 0 = return at once; the reply is delivered into the requester's session when it comes. */
  timeoutSeconds: number;
  /** Dedupes the send across retries and restarts; scoped to the requester and target sessions. */
  idempotencyKey: string;
  /** The tool call making the send, recorded in the ledger in the same transaction as the message. */
  call?: NewToolCall;
  signal?: AbortSignal;
}

export type AgentSendResult =
  | { status: 'ok'; sessionKey: string; inputId: string; runId: string | null; reply: string; conversationId: string }
  | { status: 'error'; sessionKey: string; inputId: string; runId: string | null; error: string; conversationId: string }
  | { status: 'timeout'; delivered: true; sessionKey: string; inputId: string; conversationId: string; note: string }
  | { status: 'accepted'; sessionKey: string; inputId: string; conversationId?: string; note: string };

/** A run's completion deliveries: what it sent its parent as a sub-agent's run, and the completions it consumed. */
export interface RunCompletions {
  sent: {
    parentSessionKey: string;
    idempotencyKey: string;
    outbox: Pick<OutboxRecord, 'status' | 'attempts' | 'lastError' | 'deliveredAt'>;
    input: (Pick<InputRecord, 'status' | 'mode' | 'runId'> & { inputId: string }) | null;
  }[];
  received: { inputId: string; childSessionKey: string | undefined; subagentId: string | undefined; idempotencyKey: string }[];
}

/**
 * What a front hands the intake: the text and where it came from. The front builds the idempotency key (one input
 * per message however often it arrives) and the provenance in its own folder.
 */
export interface FrontInput {
  idempotencyKey: string;
  text: string;
  provenance: Provenance;
  /** Default: the queue mode configured for the provenance's channel (`messages.queue.byChannel`), else `messages.queue.mode`. */
  mode?: QueueMode;
  /** The conversation and hop the message carries when another agent's output became it: refused past the hop budget. */
  conversation?: Conversation;
}

/** The session an input opens or joins: created on first use with this agent (and label, and reply route). */
export interface Opening {
  sessionKey: string;
  agentId: string;
  /** The label a session opened without a reply route is made with (a board task's, `board:<taskId>`). */
  label?: string;
  /** Where the session's replies go (a mailbox sender): set when the session is created. */
  route?: ReplyRoute;
  /** Refuse a new session while its lane is full (LANE_QUEUE_FULL) instead of queueing it: for a sender that can wait (a file). */
  refuseWhenLaneFull?: boolean;
  /** The caller makes the input durable (`durable()`) before it lets the message go, so that many share one sync. */
  unsynced?: boolean;
  /** What becomes of the message when the gateway is stopping, for the refusal (default: "send again once it has restarted"). */
  whenStopping?: string;
}

export interface Accepted {
  sessionKey: string;
  input: InputRecord;
  /** False when the idempotency key matched an input accepted before. */
  created: boolean;
}
