/** The embedded default store: SQLite (better-sqlite3 12) in WAL mode, through Kysely. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { KyselyStore } from '../kysely-store.js';
import { migrateToLatest } from '../migrations.js';
import type { Database } from '../schema.js';

export type SqliteSynchronous = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:'. */
  path: string;
  /** PRAGMA synchronous. FULL (the default) makes every accepted input survive power loss too. */
  synchronous?: SqliteSynchronous;
}

export class SqliteStore extends KyselyStore {
  private constructor(
    db: Kysely<Database>,
    readonly raw: BetterSqlite3.Database,
  ) {
    // The database clock, in epoch milliseconds.
    super(db, () => sql<number>`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`);
  }

  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const raw = new BetterSqlite3(options.path);
    raw.pragma('journal_mode = WAL');
    raw.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    raw.pragma('busy_timeout = 5000');
    raw.pragma('foreign_keys = ON');
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
    await migrateToLatest(db, 'sqlite');
    return new SqliteStore(db, raw);
  }
}
