/**
 * Migration 0015: agents' memory (docs/memory.md). A document is a memory file, an entry an agent wrote, or a
 * session's transcript; its text is kept in chunks with their line ranges. The full-text index is each engine's
 * own (the dialect's step of 0015): an FTS5 table over the chunks on SQLite (kept by triggers), a generated
 * `tsvector` with a GIN index on PostgreSQL. Both stem English words (porter / the `english` configuration), so both find "runs" for "running".
 *
 * Migration 0016: the file mailbox's reservations (docs/mailbox.md), one row per holder and pattern, and the teams'
 * states (docs/teams.md).
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../sql/dialect.js';

export async function memoryTables(db: Kysely<unknown>, dialect: SqlDialect): Promise<void> {
  await db.schema
    .createTable('memory_docs')
    .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('path', 'varchar(1024)', (col) => col.notNull())
    .addColumn('source', 'varchar(16)', (col) => col.notNull())
    .addColumn('hash', 'varchar(64)', (col) => col.notNull())
    .addColumn('bytes', 'bigint', (col) => col.notNull())
    .addColumn('modified_at', 'bigint', (col) => col.notNull())
    .addColumn('indexed_at', 'bigint', (col) => col.notNull())
    .addColumn('idempotency_key', 'text', (col) => col.unique())
    .addPrimaryKeyConstraint('memory_docs_pk', ['agent_id', 'path'])
    .execute();
  await dialect
    .serialKey(db.schema.createTable('memory_chunks'), 'seq')
    .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('path', 'varchar(1024)', (col) => col.notNull())
    // The document's source again, so that a search reads no document row.
    .addColumn('source', 'varchar(16)', (col) => col.notNull())
    .addColumn('start_line', 'integer', (col) => col.notNull())
    .addColumn('end_line', 'integer', (col) => col.notNull())
    .addColumn('text', 'text', (col) => col.notNull())
    .addColumn('modified_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('memory_chunks_doc').on('memory_chunks').columns(['agent_id', 'path']).execute();
}

export async function mailboxTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mailbox_reservations')
    .addColumn('holder', 'varchar(64)', (col) => col.notNull())
    .addColumn('pattern', 'varchar(1024)', (col) => col.notNull())
    .addColumn('absolute', 'varchar(4096)', (col) => col.notNull())
    .addColumn('reason', 'text')
    .addColumn('since', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('mailbox_reservations_pk', ['holder', 'pattern'])
    .execute();
  await db.schema
    .createTable('team_states')
    .addColumn('team_id', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('state', 'varchar(16)', (col) => col.notNull())
    .addColumn('release', 'integer', (col) => col.notNull())
    .addColumn('changed_at', 'bigint', (col) => col.notNull())
    .execute();
}
