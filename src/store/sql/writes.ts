/** Writes shared by several stores, each usable inside a transaction. */
import type { EventRecord, InputRecord, NewEvent, NewInput, NewOutboxRow, NewTranscriptEntry } from '../../ports/index.js';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { json, num, toEvent, toInput, type Db } from './rows.js';
import { prepared, preparedPerCount } from './prepared.js';
import { withSender, withSenderPayload } from '../../kit/trace-context.js';
import type { Database, EventsTable } from '../schema/database.js';
import type { SqlDialect } from './dialect.js';

const insertTranscript = preparedPerCount<'sessionKey' | 'now', 'role' | 'content' | 'provenance' | 'inputId' | 'runId', never>(
  (db, count, param, item) =>
    db.insertInto('transcript').values(
      Array.from({ length: count }, (_, i) => ({
        session_key: param('sessionKey'),
        role: item('role', i),
        content: item('content', i),
        provenance: item('provenance', i),
        input_id: item('inputId', i),
        run_id: item('runId', i),
        created_at: param('now'),
      })),
    ),
);

export async function appendTranscript(db: Db, sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
  if (entries.length === 0) return;
  await insertTranscript(db, entries.length, {
    sessionKey,
    now,
    role: entries.map((entry) => entry.role),
    content: entries.map((entry) => json(entry.content)),
    provenance: entries.map((entry) => (entry.provenance ? json(entry.provenance) : null)),
    inputId: entries.map((entry) => entry.inputId),
    runId: entries.map((entry) => entry.runId),
  });
}

const insertEvent = prepared<'type' | 'sessionKey' | 'runId' | 'payload' | 'now', Selectable<EventsTable>>((db, param) =>
  db
    .insertInto('events')
    .values({
      type: param('type'),
      session_key: param('sessionKey'),
      run_id: param('runId'),
      payload: param('payload'),
      created_at: param('now'),
    })
    .returningAll(),
);

export async function appendEvent(db: Db, event: NewEvent, now: number): Promise<EventRecord> {
  const [row] = await insertEvent(db, {
    type: event.type,
    sessionKey: event.sessionKey ?? null,
    runId: event.runId ?? null,
    payload: json(event.payload ?? {}),
    now,
  });
  return toEvent(row);
}

/** `sender`: the traceparent of the span that writes it (else the writer's trace scope's, kit/trace-context.ts). */
export async function insertOutbox(db: Db, row: NewOutboxRow, now: number, sender?: string): Promise<void> {
  // A row with the same idempotency key already exists: the effect it stands for is already on its way.
  await db
    .insertInto('outbox')
    .values({
      id: row.id,
      kind: row.kind,
      target: row.target,
      payload: json(withSenderPayload(row.payload, sender)),
      idempotency_key: row.idempotencyKey,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      delivered_at: null,
    })
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .execute();
}

/** What takes a session's lease for `owner`, or answers undefined when another owner holds it unexpired. */
export type LeaseTaker = (db: Db, sessionKey: string, owner: string, ttlMs: number) => Promise<{ epoch: number } | undefined>;

/**
 * Takes the session's lease for `owner`: one statement inserts a fresh lease, or takes over one that is
 * `owner`'s or has expired (judged by the database clock, `dbNowMs`). The epoch only ever grows, so a
 * writer holding an older epoch is fenced off.
 */
export function leaseTaker(dbNowMs: () => RawBuilder<number>): LeaseTaker {
  const take = prepared<'sessionKey' | 'owner' | 'ttlMs', { epoch: number }>((db, param) => {
    const now = dbNowMs();
    const owner = param('owner');
    const expires = sql<number>`${now} + ${param('ttlMs')}`;
    return db
      .insertInto('session_lease')
      .values({ session_key: param('sessionKey'), owner, epoch: 1, expires_at: expires })
      .onConflict((oc) =>
        oc
          .column('session_key')
          .doUpdateSet({ owner, epoch: sql<number>`session_lease.epoch + 1`, expires_at: expires })
          .where((eb) => eb.or([eb('session_lease.owner', '=', owner), eb('session_lease.expires_at', '<', now)])),
      )
      .returning('epoch');
  });
  return async (db, sessionKey, owner, ttlMs) => {
    const [row] = await take(db, { sessionKey, owner, ttlMs });
    return row ? { epoch: num(row.epoch) } : undefined;
  };
}

/** The session lease's epoch; with `hold`, its row is held to the end of the transaction where the engine locks rows. */
export async function currentEpoch(db: Db, sessionKey: string, hold?: SqlDialect): Promise<number | undefined> {
  const read = db.selectFrom('session_lease').select('epoch').where('session_key', '=', sessionKey);
  const lease = await (hold ? hold.lockRows(read) : read).executeTakeFirst();
  return lease ? num(lease.epoch) : undefined;
}

/** Accept = durable: inserts the input, or returns the row that already has its idempotency key. */
export async function insertInput(db: Db, input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }> {
  const inserted = await db
    .insertInto('inputs')
    .values({
      id: input.id,
      session_key: input.sessionKey,
      idempotency_key: input.idempotencyKey,
      mode: input.mode,
      status: 'queued',
      attempts: 0,
      text: input.text,
      provenance: json(withSender(input.provenance)),
      run_id: null,
      note: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { input: toInput(inserted), created: true };
  const existing = await db.selectFrom('inputs').selectAll().where('idempotency_key', '=', input.idempotencyKey).executeTakeFirstOrThrow();
  return { input: toInput(existing), created: false };
}

/**
 * Marks the unit of work holding the connection as internal: a write the gateway keeps to itself (a
 * lease, a run's start), which nothing outside learns of before a later write that is made durable.
 * An adapter that syncs before answering a write (SQLite's FULL) then need not wait for this one;
 * its sync comes with the next durable write, which covers everything written before it. SQLite's
 * group commit does not wait for its COMMIT either (sqlite/group-commit.ts).
 */
export type Relax = () => void;

/** Runs `write` as an internal write where the adapter makes the distinction, else as any other. */
export function relaxed<T>(db: Kysely<Database>, relax: Relax | undefined, write: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  if (!relax) return write(db);
  return db.connection().execute((connection) => {
    relax();
    return write(connection);
  });
}
