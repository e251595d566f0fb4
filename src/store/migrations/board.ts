/** Migrations 0008 and 0009: the task board's tables (docs/board.md), in the same portable DDL as the others. */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../sql/dialect.js';

export async function boardTables(db: Kysely<unknown>, dialect: SqlDialect): Promise<void> {
  // The task board (docs/board.md): tasks with a fencing token, their dependencies, comments, one row per
  // claim (attempt), a per-task event log, and the dispatcher's lease.
  await db.schema
    .createTable('board_tasks')
    .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('board', 'varchar(64)', (col) => col.notNull())
    .addColumn('title', 'varchar(512)', (col) => col.notNull())
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('assignee', 'varchar(512)')
    .addColumn('priority', 'integer', (col) => col.notNull())
    .addColumn('labels', 'text', (col) => col.notNull())
    .addColumn('creator', 'varchar(512)', (col) => col.notNull())
    .addColumn('idempotency_key', 'varchar(512)', (col) => col.unique())
    .addColumn('state', 'varchar(16)', (col) => col.notNull())
    .addColumn('block_kind', 'varchar(16)')
    .addColumn('block_reason', 'text')
    .addColumn('max_attempts', 'integer', (col) => col.notNull())
    .addColumn('max_runtime_ms', 'bigint')
    .addColumn('attempts', 'integer', (col) => col.notNull())
    .addColumn('failures', 'integer', (col) => col.notNull())
    .addColumn('token', 'bigint', (col) => col.notNull())
    .addColumn('claim_worker', 'varchar(512)')
    .addColumn('claimed_at', 'bigint')
    .addColumn('claim_expires_at', 'bigint')
    .addColumn('result', 'text')
    .addColumn('result_hash', 'varchar(64)')
    .addColumn('result_chars', 'integer')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .addColumn('done_at', 'bigint')
    .execute();
  await db.schema.createIndex('board_tasks_claimable').on('board_tasks').columns(['board', 'state', 'priority', 'created_at']).execute();
  await db.schema.createIndex('board_tasks_expiry').on('board_tasks').columns(['state', 'claim_expires_at']).execute();
  await db.schema
    .createTable('board_deps')
    .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('depends_on', 'varchar(64)', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('board_deps_pk', ['task_id', 'depends_on'])
    .execute();
  await db.schema.createIndex('board_deps_depends_on').on('board_deps').column('depends_on').execute();
  await dialect
    .serialKey(db.schema.createTable('board_comments'), 'seq')
    .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('author', 'varchar(512)', (col) => col.notNull())
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('attempt', 'integer')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('board_comments_task').on('board_comments').columns(['task_id', 'seq']).execute();
  await db.schema
    .createTable('board_attempts')
    .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('token', 'bigint', (col) => col.notNull())
    .addColumn('worker', 'varchar(512)', (col) => col.notNull())
    .addColumn('ref', 'varchar(256)')
    .addColumn('started_at', 'bigint', (col) => col.notNull())
    .addColumn('heartbeat_at', 'bigint', (col) => col.notNull())
    .addColumn('ended_at', 'bigint')
    .addColumn('outcome', 'varchar(16)')
    .addColumn('summary', 'text')
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('board_attempts_pk', ['task_id', 'attempt'])
    .execute();
  await dialect
    .serialKey(db.schema.createTable('board_events'), 'seq')
    .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('board', 'varchar(64)', (col) => col.notNull())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('actor', 'varchar(512)', (col) => col.notNull())
    .addColumn('detail', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('board_events_task').on('board_events').columns(['task_id', 'seq']).execute();
  await db.schema
    .createTable('board_leases')
    .addColumn('name', 'varchar(128)', (col) => col.primaryKey())
    .addColumn('owner', 'varchar(128)', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
}

/**
 * A board change an agent's tool made carries the tool call's ledger key on its event, so that a crashed run's
 * retry finds the change and makes no second one (a comment, a review, a link). NULLs do not collide.
 */
export async function boardKeys(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('board_events').addColumn('idempotency_key', 'varchar(512)').execute();
  await db.schema.createIndex('board_events_key').on('board_events').column('idempotency_key').unique().execute();
}

/** A board task keeps the trace of the span that created it, so its attempts' runs join the creator's trace. */
export async function boardTrace(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('board_tasks').addColumn('trace', 'varchar(64)').execute();
}
