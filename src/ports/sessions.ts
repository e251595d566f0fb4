/** Sessions, their inputs (with provenance) and their transcripts. Times are milliseconds since the Unix epoch. */
import type { QueueMode } from '../core/queue-mode.js';
import type { LimitReached, RateLimit } from '../core/rate-limit.js';
import type { NewToolCall } from './tool-calls.js';

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
  /** A mailbox message's own id (its reply names it in `replyTo`), or a chat platform's id of the message. */
  messageId?: string;
  /** A chat channel's bot account the message came through (docs/channels.md). */
  account?: string;
  /** Who said it on a chat channel, where `peer` is the conversation: the platform's user id. */
  sender?: string;
  hop?: number;
  /** Set on inputs that belong to a sessions_send exchange (request, reply, ping-pong turn, announce). */
  exchange?: ExchangeStepRef;
  /** Set on a sub-agent's task (with the run id sessions_spawn promised) and on completion events. */
  subagent?: { id: string; runId?: string; wake?: boolean };
  /**
   * The W3C `traceparent` of the span that sent it (a tool call, a delivery, a remote caller's request): the run that
   * consumes it joins that trace. The store names the writer's trace scope here when the front named none
   * (kit/trace-context.ts).
   */
  trace?: string;
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
  /** The peer, or on a chat channel the conversation (a chat, a channel) the reply is posted in. */
  peer?: string;
  account?: string;
  /** A chat channel's thread the reply is posted in (docs/channels.md). */
  thread?: string;
  /** A chat channel's conversation kind: a group or a direct chat. */
  kind?: 'direct' | 'group';
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
  /** When a person archived it; null while it is current. An archived session still takes messages. */
  archivedAt: number | null;
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
  /** true: only archived sessions; false: only current ones; absent: both. */
  archived?: boolean;
  limit?: number;
}

/** What a person may change on a session: its label (null removes it) and whether it is archived. */
export interface SessionAnnotation {
  label?: string | null;
  archived?: boolean;
}

export interface SessionStore {
  /** Creates the session if it does not exist; returns the stored row either way. */
  ensure(session: NewSession, now: number): Promise<SessionRecord>;
  /**
   * The session at `session.key`: created when it is missing and `session.create` allows it, given `session.route`
   * when that differs. Undefined, writing nothing, when it is missing and may not be created.
   */
  open(session: SessionOpening, now: number): Promise<SessionRecord | undefined>;
  get(key: string): Promise<SessionRecord | undefined>;
  /** Most recently updated first. */
  list(filter?: SessionFilter): Promise<SessionRecord[]>;
  setRoute(key: string, route: ReplyRoute, now: number): Promise<void>;
  /** Relabels or (un)archives a session; undefined when there is no such session. */
  annotate(key: string, change: SessionAnnotation, now: number): Promise<SessionRecord | undefined>;
  /** Keys of sessions holding queued inputs, oldest first. */
  listWithQueuedInputs(): Promise<{ key: string; oldestQueuedAt: number }[]>;
  /**
   * Sessions holding an input queued before `queuedBefore` whose lease nobody holds (never taken, released or
   * expired, by the database clock): their gateway died, or never had a lane slot for them. At most `limit`.
   */
  listStranded(queuedBefore: number, limit: number): Promise<string[]>;
  /**
   * Whether the session has spawned a sub-agent, and whether a message it sent still has its first reply to come to
   * it: one no waiter took and that is not in its session yet (in one query).
   */
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

/** An input as `enqueueOpening` accepted it. */
export interface OpenedInput {
  input: InputRecord;
  created: boolean;
  /**
   * With `planHead`, where the store reads it in the same round trip (PostgreSQL), for an input it created: the
   * session's queued inputs right after, as `listQueuedForPlan(key, planHead)` gives them, when there are fewer than
   * `planHead`. Undefined otherwise.
   */
  queued?: InputRecord[];
}

/** The session an input opens on its way in (InputStore.enqueueOpening). */
export interface SessionOpening {
  key: string;
  agentId: string;
  /** Where the session's replies go from now: a new session is created with it, one that exists takes it when it differs. */
  route?: ReplyRoute;
  /** Whether a missing session may be created here (sub-agent, A2A and board sessions are created by their own flows). */
  create: boolean;
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
  /**
   * `enqueue` (`enqueueUnsynced` with `unsynced`) into a session opened on the way: created when it is missing and
   * `session.create` allows it, and given `session.route` when that differs, before the input is written. Answers
   * `missing`, writing nothing, when the session is missing and may not be created.
   */
  enqueueOpening(
    session: SessionOpening,
    input: NewInput,
    now: number,
    options?: { unsynced?: boolean; planHead?: number },
  ): Promise<OpenedInput | 'missing'>;
  get(id: string): Promise<InputRecord | undefined>;
  getByIdempotencyKey(idempotencyKey: string): Promise<InputRecord | undefined>;
  listQueued(sessionKey: string): Promise<InputRecord[]>;
  /**
   * What the scheduler needs to plan a session's next run without reading a deep queue whole: its first `headLimit`
   * queued inputs, then every later queued input whose mode acts from anywhere in the queue (`notify`, `interrupt`,
   * `collect`), in queue order.
   */
  listQueuedForPlan(sessionKey: string, headLimit: number): Promise<InputRecord[]>;
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
  /** What one run of the session added (its messages, tool calls and results), oldest first (`runs show`). */
  listByRun(sessionKey: string, runId: string): Promise<TranscriptEntry[]>;
  append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void>;
}
