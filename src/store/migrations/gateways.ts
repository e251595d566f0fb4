/**
 * The migrations for several gateways on one database (docs/deploy.md): fenced outbox attempts, a gap-safe journal,
 * the gateways' registry, secrets they share, and sub-agent retries noted once.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialectName } from '../sql/dialect.js';

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

/**
 * 0012: the gateways sharing the database, each with its heartbeat (`switchboard status`, and whose A2A executors still
 * live); the secrets every gateway must agree on (the one that signs sub-agent handles); on a sub-agent, the run whose
 * retry was noted, so that two recoveries of one interrupted run note one retry; on an A2A task, the gateway whose
 * executor works on it; on a remote task followed in the background, which gateway follows it and until when; the
 * board dispatcher lease's epoch, the fence of its every write; and on PostgreSQL, the board's event log numbered after
 * the xid as the journal is (0011), so that its readers can stop at its settled point too, and outbox ids as long as
 * a sub-agent's completion makes them (`completion-<sub-agent id>-<run id>`, 84 characters: PostgreSQL refused every
 * completion; SQLite does not enforce a length).
 */
export async function gatewayRegistry(db: Kysely<any>, dialect: SqlDialectName): Promise<void> {
  await db.schema
    .createTable('gateways')
    .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('pid', 'integer', (col) => col.notNull())
    .addColumn('host', 'varchar(256)', (col) => col.notNull())
    .addColumn('url', 'text')
    .addColumn('version', 'varchar(32)', (col) => col.notNull())
    .addColumn('started_at', 'bigint', (col) => col.notNull())
    .addColumn('heartbeat_at', 'bigint', (col) => col.notNull())
    .addColumn('stopped_at', 'bigint')
    .addColumn('info', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createTable('shared_secrets')
    .addColumn('name', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('value', 'text', (col) => col.notNull())
    .execute();
  await db.schema.alterTable('subagents').addColumn('retry_of', 'varchar(64)').execute();
  await db.schema.alterTable('a2a_tasks').addColumn('executor', 'varchar(64)').execute();
  await db.schema.alterTable('a2a_remote_tasks').addColumn('follower', 'varchar(64)').execute();
  await db.schema
    .alterTable('a2a_remote_tasks')
    .addColumn('follow_until', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('board_leases')
    .addColumn('epoch', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  if (dialect !== 'postgres') return;
  await sql`ALTER TABLE outbox ALTER COLUMN id TYPE varchar(128)`.execute(db);
  await sql`CREATE OR REPLACE FUNCTION next_board_event_seq() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('board_events_seq_seq') END $$`.execute(db);
  await sql`ALTER TABLE board_events ALTER COLUMN seq SET DEFAULT next_board_event_seq()`.execute(db);
}
