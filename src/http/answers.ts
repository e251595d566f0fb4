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
import type { OutboxRecord } from '../ports/journal.js';
import type { RunRecord, UsageSlice, UsageTotal } from '../ports/runs.js';
import type { InputRecord, SessionRecord, TranscriptEntry } from '../ports/sessions.js';
import type {
  AgentSendResult,
  CollaborationEdge,
  CollaborationGraph,
  CollaborationLink,
  GatewayStatus,
  GatewayView,
  MessagePath,
  PathStep,
  SubagentView,
  TraceSpanView,
  TraceView,
} from '../ports/answers.js';

/** A gateway on the shared database, as another one sees it. */
export type GatewayAnswer = GatewayView;

/** `GET /v1/status`: the gateway's status, its outbox backlog and the gateways beside it. */
export interface StatusAnswer extends GatewayStatus {
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
export type SubagentAnswer = SubagentView;

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
export type CollaborationLinkAnswer = CollaborationLink;

export type CollaborationEdgeAnswer = CollaborationEdge;

/** `GET /v1/graph`. */
export type GraphAnswer = CollaborationGraph;

/** Per agent, summed over its models; the cost is null when a model behind it has no price. */
export interface AgentUsageAnswer {
  agentId: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
}

/** `GET /v1/usage`: tokens and cost since a time (today, by default); with `bucket`, per slice of time too. */
export interface UsageAnswer {
  since: number;
  currency: 'USD';
  models: (UsageTotal & { cost: number | null })[];
  agents: AgentUsageAnswer[];
  /** With `?bucket=<ms>`: the slices' size. */
  bucketMs?: number;
  /** With `?bucket=<ms>`: per slice `[at, at + bucketMs)`, agent and model that had runs, oldest first. */
  slices?: (UsageSlice & { cost: number | null })[];
}

/** `GET /v1/queues`: the sessions with queued inputs, when the oldest of each was queued, and the gateway's time. */
export interface QueuesAnswer {
  at: number;
  sessions: { sessionKey: string; oldestQueuedAt: number }[];
}

/** One span of a trace, as the trace view draws it. */
export type TraceSpanAnswer = TraceSpanView;

/** `GET /v1/traces/<traceId>` and `GET /v1/traces?input=|run=|subagent=|task=`. */
export type TraceAnswer = TraceView;

/** One step of a message's path; `children` are the steps of the session it reached. */
export type PathStepAnswer = PathStep;

/** `GET /v1/inputs/<id>/path`. */
export type MessagePathAnswer = MessagePath;

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
export type SendAsAnswer = AgentSendResult;

/** `GET /v1/board/tasks`: each task with the ids it depends on. */
export interface BoardTasksAnswer {
  tasks: (BoardTaskRecord & { dependsOn: string[] })[];
}
