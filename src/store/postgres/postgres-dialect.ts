/**
 * PostgreSQL's side of the dialect object (sql/dialect.ts). Several gateways write one database at once, so what they
 * race on is locked (rows FOR UPDATE / FOR SHARE, advisory locks on a name), a log is read up to its settled point
 * (settled-point.ts), and a migration's PostgreSQL part (its functions, migrations.ts) runs after the shared one.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../schema/database.js';
import type { MemoryHitRow, SqlDialect } from '../sql/dialect.js';
import {
  boardEventSeqAfterXid,
  eventSeqAfterXid,
  memoryFullText,
  postgresCommitSaysQueued,
  postgresKeysAsText,
  postgresRowsByKey,
  postgresRunFunctions,
  postgresSessionReads,
  postgresStartWithHistory,
} from './migrations.js';
import { postgresGenericPlans, postgresReplyToCome, postgresRunsInOneBody } from './migrations-runs.js';
import { SnapshotSettledPoint } from './settled-point.js';

/** The part of each migration that is PostgreSQL's alone, by the migration's name. */
const MIGRATION_STEPS: Record<string, (db: Kysely<unknown>) => Promise<void>> = {
  '0011_event_seq_after_xid': eventSeqAfterXid,
  '0012_gateway_registry': boardEventSeqAfterXid,
  '0013_postgres_run_functions': postgresRunFunctions,
  '0014_postgres_keys_as_text': postgresKeysAsText,
  '0015_memory': memoryFullText,
  '0019_postgres_commit_says_queued': postgresCommitSaysQueued,
  '0020_postgres_start_with_history': postgresStartWithHistory,
  '0021_postgres_session_reads': postgresSessionReads,
  '0022_postgres_rows_by_key': postgresRowsByKey,
  '0023_postgres_generic_plans': postgresGenericPlans,
  '0024_postgres_runs_in_one_body': postgresRunsInOneBody,
  '0031_reply_to_come': postgresReplyToCome,
};

/** The chunks that match any of the words (web-search syntax, English stems), best first by cover density. */
function searchMemoryChunks(db: Kysely<Database>, words: string[], scopes: RawBuilder<unknown>, limit: number) {
  return sql<MemoryHitRow>`
    SELECT c.agent_id, c.path, c.start_line, c.end_line, c.text, c.modified_at, c.source, ts_rank_cd(c.tsv, q) AS score
    FROM memory_chunks c, websearch_to_tsquery('english', ${words.join(' or ')}) q
    WHERE c.tsv @@ q AND ${scopes}
    ORDER BY score DESC, c.modified_at DESC
    LIMIT ${limit}`.execute(db);
}

export const postgresDialect: SqlDialect = {
  name: 'postgres',
  nowMs: () => sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`,
  serialKey: (table, column) => table.addColumn(column, 'bigserial', (col) => col.primaryKey()),
  migrationStep: async (name, db) => MIGRATION_STEPS[name]?.(db),
  lockRows: (query) => query.forUpdate(),
  lockRowsSkipLocked: (query) => query.forUpdate().skipLocked(),
  shareRows: (query) => query.forShare(),
  lockName: async (db, name) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${name}))`.execute(db);
  },
  // SET takes no parameters: the number is written into the statement.
  limitLockWait: async (db, ms) => {
    await sql`SET LOCAL lock_timeout = ${sql.lit(`${Math.floor(ms)}ms`)}`.execute(db);
  },
  settledPoint: (db, sequence) => new SnapshotSettledPoint(db, sequence),
  continueNumbering: async (db, table) => {
    await sql`SELECT setval(pg_get_serial_sequence(${table}, 'seq'), GREATEST((SELECT max(seq) FROM ${sql.table(table)}), 1))`.execute(db);
  },
  searchMemory: async (db, words, scopes, limit) => (await searchMemoryChunks(db, words, scopes, limit)).rows,
};
