/** The migrations for several gateways on one database (docs/deploy.md): fenced outbox attempts, a gap-safe journal. */
import { sql, type Kysely } from 'kysely';
import type { SqlDialectName } from './sql-dialect.js';

/** 0010: each delivery attempt claims its row under a new token and names its gateway; its mark counts only under that token. */
export async function outboxClaims(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('outbox')
    .addColumn('claim_token', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('outbox').addColumn('claimed_by', 'text').execute();
}

/**
 * 0011, PostgreSQL only: an event's transaction takes its xid before its sequence value, so the journal's settled
 * point can be known from snapshots (KyselyEventJournal.settled): a value taken is then always under a later
 * snapshot's xmax.
 */
export async function eventSeqAfterXid(db: Kysely<any>, dialect: SqlDialectName): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`CREATE OR REPLACE FUNCTION next_event_seq() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('events_seq_seq') END $$`.execute(db);
  await sql`ALTER TABLE events ALTER COLUMN seq SET DEFAULT next_event_seq()`.execute(db);
}
