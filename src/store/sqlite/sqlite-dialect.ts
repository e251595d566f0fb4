/**
 * SQLite's side of the dialect object (sql/dialect.ts). One connection writes, so transactions already take turns:
 * the locks are no-ops and a log's newest row is settled. Full-text search is an FTS5 table over the memory chunks.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../schema/database.js';
import type { MemoryHitRow, SqlDialect } from '../sql/dialect.js';

/** Migration 0015's full-text index: an FTS5 table over the chunks, kept by triggers (porter stems English words). */
async function memoryFullText(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE VIRTUAL TABLE memory_fts USING fts5(text, content='memory_chunks', content_rowid='seq', tokenize='porter unicode61')`.execute(
    db,
  );
  await sql`CREATE TRIGGER memory_chunks_ai AFTER INSERT ON memory_chunks BEGIN
    INSERT INTO memory_fts(rowid, text) VALUES (new.seq, new.text); END`.execute(db);
  await sql`CREATE TRIGGER memory_chunks_ad AFTER DELETE ON memory_chunks BEGIN
    INSERT INTO memory_fts(memory_fts, rowid, text) VALUES ('delete', old.seq, old.text); END`.execute(db);
}

const MIGRATION_STEPS: Record<string, (db: Kysely<unknown>) => Promise<void>> = {
  '0015_memory': memoryFullText,
};

/** The chunks that match any of the words, best first: bm25 is lower for a better match, so a hit's score is its negation. */
function searchMemoryChunks(db: Kysely<Database>, words: string[], scopes: RawBuilder<unknown>, limit: number) {
  return sql<MemoryHitRow>`
    SELECT c.agent_id, c.path, c.start_line, c.end_line, c.text, c.modified_at, c.source, -bm25(memory_fts) AS score
    FROM memory_fts
    JOIN memory_chunks c ON c.seq = memory_fts.rowid
    WHERE memory_fts MATCH ${words.map((word) => `"${word}"`).join(' OR ')} AND ${scopes}
    ORDER BY bm25(memory_fts), c.modified_at DESC
    LIMIT ${limit}`.execute(db);
}

export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  nowMs: () => sql<number>`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`,
  serialKey: (table, column) => table.addColumn(column, 'integer', (col) => col.primaryKey().autoIncrement()),
  migrationStep: async (name, db) => MIGRATION_STEPS[name]?.(db),
  lockRows: (query) => query,
  lockRowsSkipLocked: (query) => query,
  shareRows: (query) => query,
  lockName: async () => {},
  limitLockWait: async () => {},
  settledPoint: (_db, _sequence, latest) => ({ read: async () => ({ seq: await latest(), unsettled: false }) }),
  // AUTOINCREMENT numbers after the largest key already there.
  continueNumbering: async () => {},
  searchMemory: async (db, words, scopes, limit) => (await searchMemoryChunks(db, words, scopes, limit)).rows,
};
