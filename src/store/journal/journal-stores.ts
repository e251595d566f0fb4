/**
 * The outbox, the session leases and the event journal over Kysely: what leaves a run's commit, who holds a
 * session (with its fencing epoch and the database's clock), and the journal every waiter and stream reads.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type {
  EventJournal,
  EventRecord,
  LeaseStore,
  NewEvent,
  NewOutboxRow,
  OutboxRecord,
  OutboxStatus,
  OutboxStore,
} from '../../ports/index.js';
import { num, toEvent, toOutbox } from '../sql/rows.js';
import { appendEvent, insertOutbox, relaxed, type LeaseTaker, type Relax } from '../sql/writes.js';
import { prepared } from '../sql/prepared.js';
import type { Database, EventsTable } from '../schema/database.js';
import type { SettledPoint, SqlDialect } from '../sql/dialect.js';

/**
 * `payload LIKE '%needle%'`, with the needle's own wildcards taken literally. No index serves it: the hot path writes
 * nothing extra for the few readers (the console's trace view) that look into payloads, so they scan.
 */
function payloadContains(needle: string): RawBuilder<boolean> {
  const escaped = needle.replace(/[!%_]/g, (char) => `!${char}`);
  return sql<boolean>`payload LIKE ${`%${escaped}%`} ESCAPE '!'`;
}

const eventsAfter = prepared<'afterSeq' | 'limit', Selectable<EventsTable>>((db, param) =>
  db.selectFrom('events').selectAll().where('seq', '>', param('afterSeq')).orderBy('seq').limit(param('limit')),
);
export class KyselyOutboxStore implements OutboxStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {}

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

  async claim(id: string, owner: string, now: number, leaseMs: number): Promise<OutboxRecord | undefined> {
    const due = this.db
      .selectFrom('outbox')
      .select('id')
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now);
    const row = await this.db
      .updateTable('outbox')
      .set((eb) => ({ claim_token: eb('claim_token', '+', 1), claimed_by: owner, next_attempt_at: now + leaseMs }))
      .where('id', 'in', this.dialect.lockRowsSkipLocked(due))
      .returningAll()
      .executeTakeFirst();
    return row ? toOutbox(row) : undefined;
  }

  async releaseClaims(owner: string, now: number): Promise<void> {
    await this.db
      .updateTable('outbox')
      .set({ next_attempt_at: now, claimed_by: null })
      .where('status', '=', 'pending')
      .where('claimed_by', '=', owner)
      .where('next_attempt_at', '>', now)
      .execute();
  }

  async markDelivered(id: string, token: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: 'delivered', delivered_at: now, attempts: eb('attempts', '+', 1), last_error: null, claimed_by: null }))
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('claim_token', '=', token)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async markFailed(id: string, token: number, error: string, nextAttemptAt: number, dead: boolean): Promise<boolean> {
    const result = await this.db
      .updateTable('outbox')
      .set((eb) => ({
        status: dead ? 'dead' : 'pending',
        attempts: eb('attempts', '+', 1),
        last_error: error,
        next_attempt_at: nextAttemptAt,
        claimed_by: null,
      }))
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('claim_token', '=', token)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
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

  async backlog(): Promise<{ pending: number; dead: number }> {
    const rows = await this.db
      .selectFrom('outbox')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', ['pending', 'dead'])
      .groupBy('status')
      .execute();
    const count = (status: OutboxStatus) => num(rows.find((row) => row.status === status)?.n ?? 0);
    return { pending: count('pending'), dead: count('dead') };
  }

  async findByPayload(needle: string, limit: number): Promise<OutboxRecord[]> {
    const rows = await this.db
      .selectFrom('outbox')
      .selectAll()
      .where(payloadContains(needle))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toOutbox);
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
export class KyselyLeaseStore implements LeaseStore {
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
    // Kept with its epoch (expired at once), so that the next holder's epoch is higher than every one before.
    await relaxed(this.db, this.relax, (db) =>
      db
        .updateTable('session_lease')
        .set({ expires_at: 0 })
        .where('session_key', '=', sessionKey)
        .where('owner', '=', owner)
        .where('epoch', '=', epoch)
        .execute(),
    );
  }

  async get(sessionKey: string): Promise<{ owner: string; epoch: number; expiresAt: number } | undefined> {
    const row = await this.db
      .selectFrom('session_lease')
      .selectAll()
      .where('session_key', '=', sessionKey)
      .where('expires_at', '>', 0)
      .executeTakeFirst();
    return row ? { owner: row.owner, epoch: num(row.epoch), expiresAt: num(row.expires_at) } : undefined;
  }
}

export class KyselyEventJournal implements EventJournal {
  private readonly point: SettledPoint;

  constructor(
    private readonly db: Kysely<Database>,
    dialect: SqlDialect,
  ) {
    this.point = dialect.settledPoint(db, 'events_seq_seq', () => this.latestSeq());
  }

  /** See SettledPoint: how far the journal can be read without skipping an event that commits late. */
  settled(): Promise<{ seq: number; unsettled: boolean }> {
    return this.point.read();
  }

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

  async findByPayload(type: NewEvent['type'], needle: string, limit: number): Promise<EventRecord[]> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where('type', '=', type)
      .where(payloadContains(needle))
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }

  async list(
    filter: { afterSeq?: number; upToSeq?: number; sessionKey?: string; runId?: string; limit?: number } = {},
  ): Promise<EventRecord[]> {
    // The journal tail's read after every commit.
    if (filter.afterSeq !== undefined && filter.upToSeq === undefined && !filter.sessionKey && !filter.runId)
      return (await eventsAfter(this.db, { afterSeq: filter.afterSeq, limit: filter.limit ?? 1000 })).map(toEvent);
    let query = this.db.selectFrom('events').selectAll();
    if (filter.afterSeq !== undefined) query = query.where('seq', '>', filter.afterSeq);
    if (filter.upToSeq !== undefined) query = query.where('seq', '<=', filter.upToSeq);
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
