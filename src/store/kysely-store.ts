/**
 * The store ports over Kysely, in SQL that SQLite and PostgreSQL both accept. An adapter supplies the
 * Kysely instance and one expression for the database clock (lease time comes from the database).
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type {
  IdKind,
  A2ATaskStore,
  BoardStore,
  EventJournal,
  EventRecord,
  ExchangeStore,
  InputRecord,
  InputStatus,
  InputStore,
  LeaseStore,
  NewEvent,
  NewInput,
  NewOutboxRow,
  NewTranscriptEntry,
  OutboxRecord,
  OutboxStatus,
  OutboxStore,
  RunStore,
  SessionStore,
  Store,
  SubagentStore,
  TranscriptEntry,
  TranscriptStore,
  ToolCallStore,
  RateLimit,
  LimitReached,
  NewToolCall,
} from '../ports/index.js';
import { KyselyRunStore } from './kysely-run-store.js';
import { KyselySessionStore } from './kysely-session-store.js';
import { num, toEvent, toInput, toOutbox, toTranscript } from './kysely-rows.js';
import {
  appendEvent,
  appendTranscript,
  insertInput,
  insertOutbox,
  leaseTaker,
  relaxed,
  type LeaseTaker,
  type Relax,
} from './kysely-writes.js';
import { KyselyExchangeStore } from './kysely-exchange-store.js';
import { KyselyA2ATaskStore } from './kysely-a2a-store.js';
import { KyselyBoardStore } from './kysely-board-store.js';
import { KyselySubagentStore } from './kysely-subagent-store.js';
import type { Database, EventsTable, InputsTable, TranscriptTable } from './schema.js';
import { KyselyToolCallStore, recordToolCall } from './kysely-tool-call-store.js';
import { takeRate } from './kysely-limits.js';
import { matchIds } from './kysely-ids.js';
import type { SqlDialectName } from './sql-dialect.js';
import { prepared } from './kysely-prepared.js';

const inputById = prepared<'id', Selectable<InputsTable>>((db, param) => db.selectFrom('inputs').selectAll().where('id', '=', param('id')));
const eventsAfter = prepared<'afterSeq' | 'limit', Selectable<EventsTable>>((db, param) =>
  db.selectFrom('events').selectAll().where('seq', '>', param('afterSeq')).orderBy('seq').limit(param('limit')),
);
const transcriptTail = prepared<'sessionKey' | 'limit', Selectable<TranscriptTable>>((db, param) =>
  db.selectFrom('transcript').selectAll().where('session_key', '=', param('sessionKey')).orderBy('seq', 'desc').limit(param('limit')),
);
const queuedInputs = prepared<'sessionKey', Selectable<InputsTable>>((db, param) =>
  db.selectFrom('inputs').selectAll().where('session_key', '=', param('sessionKey')).where('status', '=', 'queued').orderBy('seq'),
);

export class KyselyStore implements Store {
  readonly toolCalls: ToolCallStore;
  readonly subagents: SubagentStore;
  readonly a2aTasks: A2ATaskStore;
  readonly board: BoardStore;
  readonly sessions: SessionStore;
  readonly exchanges: ExchangeStore;
  readonly inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;

  constructor(
    protected readonly db: Kysely<Database>,
    dialect: SqlDialectName,
    /** The database clock in epoch milliseconds, as an SQL expression. */
    dbNowMs: () => RawBuilder<number>,
    adapter: {
      /** An adapter's own input store, where it has a faster accept path. */
      inputs?: InputStore;
      /** An adapter's own transcript store, where it can keep sessions' recent entries. */
      transcript?: (plain: KyselyTranscriptStore) => TranscriptStore;
      relax?: Relax;
    } = {},
  ) {
    this.toolCalls = new KyselyToolCallStore(db);
    this.subagents = new KyselySubagentStore(db, dialect);
    this.a2aTasks = new KyselyA2ATaskStore(db);
    this.board = new KyselyBoardStore(db, dialect);
    this.sessions = new KyselySessionStore(db, adapter.relax);
    this.exchanges = new KyselyExchangeStore(db, dialect);
    this.inputs = adapter.inputs ?? new KyselyInputStore(db, dialect, adapter.relax);
    this.transcript = adapter.transcript ? adapter.transcript(new KyselyTranscriptStore(db)) : new KyselyTranscriptStore(db);
    // One statement takes a lease, for the lease store and for a run's start.
    const takeLease = leaseTaker(dbNowMs);
    this.runs = new KyselyRunStore(db, takeLease, adapter.relax);
    this.outbox = new KyselyOutboxStore(db);
    this.leases = new KyselyLeaseStore(db, dbNowMs, takeLease, adapter.relax);
    this.events = new KyselyEventJournal(db);
  }

  matchIds(kind: IdKind, prefix: string, limit: number): Promise<string[]> {
    return matchIds(this.db, kind, prefix, limit);
  }

  async durable(): Promise<void> {}

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

export class KyselyInputStore implements InputStore {
  constructor(
    protected readonly db: Kysely<Database>,
    private readonly dialect: SqlDialectName,
    protected readonly relax?: Relax,
  ) {}

  enqueueUnsynced(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }> {
    return relaxed(this.db, this.relax, (db) => insertInput(db, input, now));
  }

  enqueue(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }>;
  enqueue(
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ input: InputRecord; created: boolean } | LimitReached>;
  enqueue(
    input: NewInput,
    now: number,
    guards?: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ input: InputRecord; created: boolean } | LimitReached> {
    if (!guards) return insertInput(this.db, input, now);
    return this.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom('inputs').selectAll().where('idempotency_key', '=', input.idempotencyKey).executeTakeFirst();
      if (existing) return { input: toInput(existing), created: false };
      const limited = await takeRate(trx, this.dialect, guards.rate, input.idempotencyKey, now);
      if (limited) return limited;
      if (guards.call) await recordToolCall(trx, guards.call, now);
      return insertInput(trx, input, now);
    });
  }

  async get(id: string): Promise<InputRecord | undefined> {
    const [row] = await inputById(this.db, { id });
    return row ? toInput(row) : undefined;
  }

  async getByIdempotencyKey(idempotencyKey: string): Promise<InputRecord | undefined> {
    const row = await this.db.selectFrom('inputs').selectAll().where('idempotency_key', '=', idempotencyKey).executeTakeFirst();
    return row ? toInput(row) : undefined;
  }

  async listQueued(sessionKey: string): Promise<InputRecord[]> {
    return (await queuedInputs(this.db, { sessionKey })).map(toInput);
  }

  async listByRun(runId: string): Promise<InputRecord[]> {
    const rows = await this.db.selectFrom('inputs').selectAll().where('run_id', '=', runId).orderBy('seq').execute();
    return rows.map(toInput);
  }

  async list(filter: { sessionKey?: string; status?: InputStatus; limit?: number }): Promise<InputRecord[]> {
    let query = this.db.selectFrom('inputs').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.status) query = query.where('status', '=', filter.status);
    return (
      await query
        .orderBy('seq')
        .limit(filter.limit ?? 100_000)
        .execute()
    ).map(toInput);
  }

  async drop(inputIds: string[], note: string, now: number): Promise<string[]> {
    if (inputIds.length === 0) return [];
    const rows = await this.db
      .updateTable('inputs')
      .set({ status: 'dropped', note, updated_at: now })
      .where('id', 'in', inputIds)
      .where('status', '=', 'queued')
      .returning('id')
      .execute();
    return rows.map((row) => row.id);
  }

  async absorbNotify(inputId: string, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('inputs')
        .set({ status: 'consumed', updated_at: now })
        .where('id', '=', inputId)
        .where('status', '=', 'queued')
        .returningAll()
        .executeTakeFirst();
      if (!updated) return false;
      const input = toInput(updated);
      await appendTranscript(
        trx,
        input.sessionKey,
        [{ role: 'user', content: input.text, provenance: input.provenance, inputId: input.id, runId: null }],
        now,
      );
      await appendEvent(trx, { type: 'input.stored', sessionKey: input.sessionKey, payload: { inputId } }, now);
      return true;
    });
  }
}

export class KyselyTranscriptStore implements TranscriptStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The session's entries after `seq`, oldest first. */
  async listAfter(sessionKey: string, seq: number): Promise<TranscriptEntry[]> {
    const rows = await this.db
      .selectFrom('transcript')
      .selectAll()
      .where('session_key', '=', sessionKey)
      .where('seq', '>', seq)
      .orderBy('seq')
      .execute();
    return rows.map(toTranscript);
  }

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    // The history a run reads: the session's newest `limit` entries.
    const rows =
      options.limit === undefined
        ? await this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey).orderBy('seq', 'desc').execute()
        : await transcriptTail(this.db, { sessionKey, limit: options.limit });
    return rows.reverse().map(toTranscript);
  }

  async append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    await appendTranscript(this.db, sessionKey, entries, now);
  }
}

class KyselyOutboxStore implements OutboxStore {
  constructor(private readonly db: Kysely<Database>) {}

  async add(row: NewOutboxRow, now: number): Promise<OutboxRecord> {
    await insertOutbox(this.db, row, now);
    const stored = await this.db
      .selectFrom('outbox')
      .selectAll()
      .where('idempotency_key', '=', row.idempotencyKey)
      .executeTakeFirstOrThrow();
    return toOutbox(stored);
  }

  async listDue(now: number, limit: number): Promise<OutboxRecord[]> {
    const rows = await this.db
      .selectFrom('outbox')
      .selectAll()
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .orderBy('next_attempt_at')
      .orderBy('created_at')
      .limit(limit)
      .execute();
    return rows.map(toOutbox);
  }

  async markDelivered(id: string, now: number): Promise<void> {
    await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: 'delivered', delivered_at: now, attempts: eb('attempts', '+', 1), last_error: null }))
      .where('id', '=', id)
      .execute();
  }

  async markFailed(id: string, error: string, nextAttemptAt: number, dead: boolean): Promise<void> {
    await this.db
      .updateTable('outbox')
      .set((eb) => ({
        status: dead ? 'dead' : 'pending',
        attempts: eb('attempts', '+', 1),
        last_error: error,
        next_attempt_at: nextAttemptAt,
      }))
      .where('id', '=', id)
      .execute();
  }

  async get(id: string): Promise<OutboxRecord | undefined> {
    const row = await this.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toOutbox(row) : undefined;
  }

  async list(filter: { status?: OutboxStatus; limit?: number } = {}): Promise<OutboxRecord[]> {
    let query = this.db.selectFrom('outbox').selectAll();
    if (filter.status) query = query.where('status', '=', filter.status);
    return (
      await query
        .orderBy('created_at')
        .limit(filter.limit ?? 1000)
        .execute()
    ).map(toOutbox);
  }

  async retry(id: string, now: number): Promise<OutboxRecord | undefined> {
    const moved = await this.db
      .updateTable('outbox')
      .set({ status: 'pending', attempts: 0, next_attempt_at: now })
      .where('id', '=', id)
      .where('status', '=', 'dead')
      .executeTakeFirst();
    return Number(moved.numUpdatedRows) === 1 ? this.get(id) : undefined;
  }

  async drop(id: string): Promise<OutboxRecord | undefined> {
    const moved = await this.db
      .updateTable('outbox')
      .set({ status: 'dropped' })
      .where('id', '=', id)
      .where('status', '=', 'dead')
      .executeTakeFirst();
    return Number(moved.numUpdatedRows) === 1 ? this.get(id) : undefined;
  }
}

/** Leases are the gateway's own business: their writes are internal (see `Relax`). */
class KyselyLeaseStore implements LeaseStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dbNowMs: () => RawBuilder<number>,
    private readonly take: LeaseTaker,
    private readonly relax?: Relax,
  ) {}

  acquire(sessionKey: string, owner: string, ttlMs: number): Promise<{ epoch: number } | undefined> {
    return relaxed(this.db, this.relax, (db) => this.take(db, sessionKey, owner, ttlMs));
  }

  async renew(sessionKey: string, owner: string, epoch: number, ttlMs: number): Promise<boolean> {
    const result = await relaxed(this.db, this.relax, (db) =>
      db
        .updateTable('session_lease')
        .set({ expires_at: sql<number>`${this.dbNowMs()} + ${ttlMs}` })
        .where('session_key', '=', sessionKey)
        .where('owner', '=', owner)
        .where('epoch', '=', epoch)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  }

  async release(sessionKey: string, owner: string, epoch: number): Promise<void> {
    await relaxed(this.db, this.relax, (db) =>
      db.deleteFrom('session_lease').where('session_key', '=', sessionKey).where('owner', '=', owner).where('epoch', '=', epoch).execute(),
    );
  }

  async get(sessionKey: string): Promise<{ owner: string; epoch: number; expiresAt: number } | undefined> {
    const row = await this.db.selectFrom('session_lease').selectAll().where('session_key', '=', sessionKey).executeTakeFirst();
    return row ? { owner: row.owner, epoch: num(row.epoch), expiresAt: num(row.expires_at) } : undefined;
  }
}

class KyselyEventJournal implements EventJournal {
  constructor(private readonly db: Kysely<Database>) {}

  append(event: NewEvent, now: number): Promise<EventRecord> {
    return appendEvent(this.db, event, now);
  }

  async latestSeq(): Promise<number> {
    const row = await this.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst();
    return num((row?.seq as number | null) ?? 0);
  }

  async list(filter: { afterSeq?: number; sessionKey?: string; runId?: string; limit?: number } = {}): Promise<EventRecord[]> {
    // The journal tail's read after every commit.
    if (filter.afterSeq !== undefined && !filter.sessionKey && !filter.runId)
      return (await eventsAfter(this.db, { afterSeq: filter.afterSeq, limit: filter.limit ?? 1000 })).map(toEvent);
    let query = this.db.selectFrom('events').selectAll();
    if (filter.afterSeq !== undefined) query = query.where('seq', '>', filter.afterSeq);
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.runId) query = query.where('run_id', '=', filter.runId);
    return (
      await query
        .orderBy('seq')
        .limit(filter.limit ?? 1000)
        .execute()
    ).map(toEvent);
  }
}
