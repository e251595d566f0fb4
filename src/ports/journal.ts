/** The outbox (deliveries that leave a run's commit) and the event journal. Times are milliseconds since the Unix epoch. */

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
  | 'run.step'
  | 'run.suspended'
  | 'run.resumed'
  /** A run was forked into a new session (`runs fork`): its first steps copied into a run that resumes there. */
  | 'run.forked'
  | 'run.abort_requested'
  | 'input.stored'
  | 'input.dropped'
  | 'session.reply'
  | 'lane.stalled'
  | 'outbox.dead'
  | 'exchange.updated'
  | 'subagent.updated'
  | 'board.updated'
  /** What an external runtime's child reported during a run (docs/runtimes.md): ACP session updates, a CLI's JSON lines. */
  | 'runtime.update'
  /** An A2A task served here changed state (docs/a2a.md). */
  | 'a2a.task'
  /** The A2A server refused a call: 401, 403 or 429 (docs/a2a.md). */
  | 'a2a.refused'
  /** A message from another agent was refused past the hop budget (session.agentToAgent.maxHops): a loop stopped. */
  | 'loop.stopped'
  | 'approval.requested'
  | 'approval.decided'
  | 'budget.refused';

export interface NewEvent {
  type: JournalEventType;
  sessionKey?: string | null;
  runId?: string | null;
  payload?: unknown;
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
  /** The claim of its latest delivery attempt (0 before the first). */
  claimToken: number;
}

export interface OutboxStore {
  add(row: NewOutboxRow, now: number): Promise<OutboxRecord>;
  /** Pending rows due at `now`, oldest first. */
  listDue(now: number, limit: number): Promise<OutboxRecord[]>;
  /**
   * Claims a due pending row for one delivery attempt: a new claim token, and the row not due again before
   * `now + leaseMs` (so no other gateway takes it while this attempt runs, and another does if this one dies).
   * Undefined when the row is not pending and due, or another claimer holds it (PostgreSQL: SKIP LOCKED).
   */
  claim(id: string, owner: string, now: number, leaseMs: number): Promise<OutboxRecord | undefined>;
  /** A restarted owner's rows, held by attempts of its previous process, are due again at `now`. */
  releaseClaims(owner: string, now: number): Promise<void>;
  /** The attempt under `token` delivered the row. False, and nothing changed, when that claim is no longer the row's. */
  markDelivered(id: string, token: number, now: number): Promise<boolean>;
  /** The attempt under `token` failed: pending again from `nextAttemptAt`, or dead. Fenced like markDelivered. */
  markFailed(id: string, token: number, error: string, nextAttemptAt: number, dead: boolean): Promise<boolean>;
  get(id: string): Promise<OutboxRecord | undefined>;
  list(filter?: { status?: OutboxStatus; limit?: number }): Promise<OutboxRecord[]>;
  /** The backlog: how many rows are pending and how many dead (counted, not read). */
  backlog(): Promise<{ pending: number; dead: number }>;
  /** Compare-and-set from `dead`: pending again with its attempts reset, due now. Undefined when it was not dead. */
  retry(id: string, now: number): Promise<OutboxRecord | undefined>;
  /** Compare-and-set from `dead` to `dropped`. Undefined when it was not dead. */
  drop(id: string): Promise<OutboxRecord | undefined>;
  /**
   * Rows whose payload's JSON text contains `needle` (as written, case and all: give one whose case cannot differ, such
   * as a trace id), oldest first, at most `limit`. A scan, for a person's look (the console's trace view), not the hot path.
   */
  findByPayload(needle: string, limit: number): Promise<OutboxRecord[]>;
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
  /** `upToSeq`: only events at or below it (a reader that must not run past what is settled). */
  list(filter?: { afterSeq?: number; upToSeq?: number; sessionKey?: string; runId?: string; limit?: number }): Promise<EventRecord[]>;
  /** The sequence number of the newest event, 0 when the journal is empty. */
  latestSeq(): Promise<number>;
  /**
   * Events of one type whose payload's JSON text contains `needle` (as written, case and all: give one whose case cannot
   * differ, such as a trace id), oldest first, at most `limit`. A scan, for a person's look (the console's trace view).
   */
  findByPayload(type: JournalEventType, needle: string, limit: number): Promise<EventRecord[]>;
  /**
   * The journal's settled point: every event at or below `seq` is committed or never will be, so a reader that has
   * read up to it has missed nothing. Sequence numbers are not commit order where writers run concurrently
   * (PostgreSQL), so the newest visible event may be above it; `unsettled` says a later call will move it further.
   */
  settled(): Promise<{ seq: number; unsettled: boolean }>;
}
