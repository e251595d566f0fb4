/**
 * The control API's answers as they travel (docs/control-api.md), for the routes that shape their own: the route
 * handlers are annotated with these, and the console (web/src) reads its answers as these, so a change to an answer
 * fails the type check on both sides. Records the store keeps are the ports' own types.
 *
 * Contract: type declarations only, importing nothing from node or from the gateway, so that the console's type check
 * (no node types) can read this file. Where the gateway's own answer types (its status, collaboration graph, message
 * path, sub-agent view) are declared in gateway/, the wire shape is declared here; the handlers' annotations check the
 * gateway's values against it.
 */
import type { QueueMode } from '../core/queue-mode.js';
import type { RunStatus } from '../core/run-status.js';
// Each from its own file, not ports/index.js: the console's type check reads only the ports its answers name.
import type { A2ATaskEventRecord, A2ATaskRecord } from '../ports/a2a.js';
import type { BoardTaskRecord } from '../ports/board.js';
import type { ExchangeRecord } from '../ports/exchanges.js';
import type { GatewayRecord } from '../ports/gateways.js';
import type { OutboxRecord } from '../ports/journal.js';
import type { RecoveryReport, RunRecord, UsageTotal } from '../ports/runs.js';
import type { InputRecord, SessionRecord, TranscriptEntry } from '../ports/sessions.js';
import type { SubagentRecord } from '../ports/subagents.js';

/** One lane's load: runs active, sessions waiting for a slot, the cap. */
export interface LaneLoad {
  active: number;
  waiting: number;
  max: number;
}

/** A session whose oldest queued input has waited past the watchdog's threshold. */
export interface StalledLaneAnswer {
  sessionKey: string;
  oldestQueuedAt: number;
  stalledForMs: number;
}

/** A gateway on the shared database, as another one sees it. */
export interface GatewayAnswer extends GatewayRecord {
  alive: boolean;
  heartbeatAgeMs: number;
  journalLag: number;
}

/** `GET /v1/status`. */
export interface StatusAnswer {
  gatewayId: string;
  startedAt: number;
  uptimeMs: number;
  /** The newest journal event published. */
  journalSeq: number;
  agents: string[];
  lanes: Record<'main' | 'subagent' | 'nested' | 'acp', LaneLoad>;
  activeRuns: { sessionKey: string; runId: string | null }[];
  stalledLanes: StalledLaneAnswer[];
  lastRecovery: RecoveryReport;
  takenOver: { runs: number; lastAt: number | null };
  outbox: { pending: number; dead: number };
  gateways: GatewayAnswer[];
}

/** One configured agent (`GET /v1/agents`). */
export interface AgentAnswer {
  id: string;
  name: string | null;
  identity: { name?: string; emoji?: string; theme?: string; avatar?: string } | null;
  model: string;
  workspace: string | null;
  /** The agent a message without a target goes to. */
  default: boolean;
}

/** `GET /v1/agents`. */
export interface AgentsAnswer {
  agents: AgentAnswer[];
}

/** `GET /v1/sessions`. */
export interface SessionsAnswer {
  sessions: SessionRecord[];
}

/** `GET /v1/sessions/<key>`. */
export interface SessionAnswer {
  session: SessionRecord;
  recentRuns: RunRecord[];
  queuedInputs: number;
}

/** `PATCH /v1/sessions/<key>`: the session with its new label or archive mark. */
export interface AnnotatedSessionAnswer {
  session: SessionRecord;
}

/** `GET /v1/sessions/<key>/history`. */
export interface HistoryAnswer {
  entries: TranscriptEntry[];
}

/** `GET /v1/exchanges/<id>`: the exchange and the inputs it made. */
export interface ExchangeAnswer {
  exchange: ExchangeRecord;
  inputs: InputRecord[];
}

/** `GET /v1/a2a/tasks`. */
export interface A2ATasksAnswer {
  tasks: A2ATaskRecord[];
}

/** `GET /v1/a2a/tasks/<id>`: the task and its replay log. */
export interface A2ATaskAnswer {
  task: A2ATaskRecord;
  events: A2ATaskEventRecord[];
}

/** `GET /v1/runs`. */
export interface RunsAnswer {
  runs: RunRecord[];
}

/** A sub-agent as the lists show it (`GET /v1/subagents`). */
export interface SubagentAnswer {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  agentId: string;
  label: string | null;
  depth: number;
  role: SubagentRecord['role'];
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
  /** `acp:<name>`, `process:<name>`, or null for a model in the gateway. */
  runtime: string | null;
  /** The model it was spawned with; null when it runs on its agent's own. */
  model: string | null;
}

/** `GET /v1/subagents`. */
export interface SubagentsAnswer {
  subagents: SubagentAnswer[];
}

/** `POST /v1/subagents/<id>/kill`: the sub-agents cancelled (it and its descendants). */
export interface KillAnswer {
  cancelled: string[];
}

/** `POST /v1/runs/<id>/cancel`: false when the run had ended already. */
export interface CancelAnswer {
  cancelled: boolean;
}

/** `GET /v1/outbox`. */
export interface OutboxAnswer {
  rows: OutboxRecord[];
}

/** One hand-off on the collaboration map: an exchange, a spawn, an A2A task or a board task. */
export interface CollaborationLinkAnswer {
  kind: 'exchange' | 'spawn' | 'a2a' | 'board';
  from: string;
  to: string;
  /** The exchange, sub-agent, A2A task or board task id. */
  id: string;
  at: number;
  fromSession: string | null;
  toSession: string | null;
  status: string;
}

export interface CollaborationEdgeAnswer {
  kind: CollaborationLinkAnswer['kind'];
  from: string;
  to: string;
  count: number;
  lastAt: number;
  /** The newest hand-offs of the edge, newest first. */
  links: CollaborationLinkAnswer[];
}

/** `GET /v1/graph`. */
export interface GraphAnswer {
  since: number;
  until: number;
  /** Agent ids as they are; outside parties as `peer:<id>`, `remote:<id>`, `worker:<name>`, `user`. */
  nodes: string[];
  edges: CollaborationEdgeAnswer[];
  /** True when a kind had more rows in the window than were read. */
  partial: boolean;
}

/** Per agent, summed over its models; the cost is null when a model behind it has no price. */
export interface AgentUsageAnswer {
  agentId: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
}

/** `GET /v1/usage`: tokens and cost since a time (today, by default). */
export interface UsageAnswer {
  since: number;
  currency: 'USD';
  models: (UsageTotal & { cost: number | null })[];
  agents: AgentUsageAnswer[];
}

/** One step of a message's path; `children` are the steps of the session it reached. */
export interface PathStepAnswer {
  kind: 'accepted' | 'run.started' | 'tool.call' | 'exchange' | 'spawn' | 'run.ended' | 'reply';
  /** Null when the store kept no time for it. */
  at: number | null;
  sessionKey: string;
  depth: number;
  summary: string;
  runId?: string;
  inputId?: string;
  ref?: { kind: 'exchange' | 'subagent'; id: string };
  children?: PathStepAnswer[];
}

/** `GET /v1/inputs/<id>/path`. */
export interface MessagePathAnswer {
  input: Pick<InputRecord, 'id' | 'sessionKey' | 'text' | 'provenance' | 'status' | 'createdAt'>;
  steps: PathStepAnswer[];
}

/** `POST /v1/send` without `from`: the input as accepted, and with `wait`, how it ended. */
export interface SendAccepted {
  status: 'accepted';
  inputId: string;
  sessionKey: string;
  /** False when the idempotency key matched an input accepted before. */
  created: boolean;
  mode: QueueMode;
}

export type SendAnswer =
  | SendAccepted
  | (Omit<SendAccepted, 'status'> & { status: 'ok'; reply: string | null; runId: string; runStatus: RunStatus; error: string | null })
  | (Omit<SendAccepted, 'status'> & { status: 'stored' })
  | (Omit<SendAccepted, 'status'> & { status: 'dropped'; error: string | null })
  | (Omit<SendAccepted, 'status'> & { status: 'timeout'; delivered: true });

/** `POST /v1/send` with `from`: the answer sessions_send gives the agent session it is sent as. */
export type SendAsAnswer =
  | { status: 'ok'; sessionKey: string; inputId: string; runId: string | null; reply: string; conversationId: string }
  | { status: 'error'; sessionKey: string; inputId: string; runId: string | null; error: string; conversationId: string }
  | { status: 'timeout'; delivered: true; sessionKey: string; inputId: string; conversationId: string; note: string }
  | { status: 'accepted'; sessionKey: string; inputId: string; conversationId?: string; note: string };

/** `GET /v1/board/tasks`: each task with the ids it depends on. */
export interface BoardTasksAnswer {
  tasks: (BoardTaskRecord & { dependsOn: string[] })[];
}
