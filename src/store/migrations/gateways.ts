/**
 * The migrations for several gateways on one database (docs/deploy.md): fenced outbox attempts, a gap-safe journal,
 * the gateways' registry, secrets they share, and sub-agent retries noted once.
 */
import type { Kysely } from 'kysely';

/** 0010: each delivery attempt claims its row under a new token and names its gateway; its mark counts only under that token. */
export async function outboxClaims(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('outbox')
    .addColumn('claim_token', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('outbox').addColumn('claimed_by', 'text').execute();
}

/**
 * 0012: the gateways sharing the database, each with its heartbeat (`switchboard status`, and whose A2A executors still
 * live); the secrets every gateway must agree on (the one that signs sub-agent handles); on a sub-agent, the run whose
 * retry was noted, so that two recoveries of one interrupted run note one retry; on an A2A task, the gateway whose
 * executor works on it; on a remote task followed in the background, which gateway follows it and until when; the
 * board dispatcher lease's epoch, the fence of its every write. PostgreSQL's part is postgres/migrations.ts
 * boardEventSeqAfterXid.
 */
export async function gatewayRegistry(db: Kysely<unknown>): Promise<void> {
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
}
