/** The embedded default store: SQLite (better-sqlite3 12) in WAL mode, through Kysely. */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type Driver } from 'kysely';
import type { Selectable } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type { InputRecord, NewInput } from '../../ports/index.js';
import { toInput } from '../sql/rows.js';
import { withSender } from '../../kit/trace-context.js';
import type { Relax } from '../sql/writes.js';
import { KyselyStore } from '../kysely/kysely-store.js';
import type { InputFastPaths } from '../sessions/input-store.js';
import { migrateToLatest } from '../migrations/migrate.js';
import type { Database, InputsTable } from '../schema/database.js';
import { TranscriptTails } from './transcript-tails.js';
import { sqliteDialect } from './sqlite-dialect.js';
import { Turns, inTurns } from './turns.js';
import { GroupCommitDriver } from './group-commit.js';
import { UnitWrites, WalSync, trackWrites } from './wal-sync.js';

export type SqliteSynchronous = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:'. */
  path: string;
  /**
   * FULL (the default) makes every acknowledged write survive power loss too, with the WAL synced off the
   * event loop and shared by concurrent commits (see wal-sync.ts). The others are SQLite's own PRAGMA
   * synchronous: EXTRA syncs on the event loop, NORMAL and OFF lose the last commits on power loss.
   */
  synchronous?: SqliteSynchronous;
  /**
   * Hold an exclusive OS lock on the database file for as long as the store is open, so that no second
   * gateway (from this data directory or another one pointing at the same file) can use it. The OS drops
   * the lock when the process dies, so a crash never leaves a stale lock behind.
   */
  exclusive?: boolean;
  /**
   * How much of the database file SQLite reads through a memory map (PRAGMA mmap_size, in bytes; the build caps it
   * at 2,147,418,112). Pages are then read from the OS's page cache in place, not copied into SQLite's own cache
   * with a read() each: as the file grows past that cache, the random index pages a request touches would otherwise
   * cost a system call each. Writes still go through the WAL. Default 0 (off).
   */
  mmapBytes?: number;
}

/**
 * Accepting an input is the hot path of every front, so here it skips the query builder: one prepared
 * statement sending the same SQL as the portable version (an input with guards takes the portable path).
 */
class SqliteInputPaths implements InputFastPaths {
  private readonly statement: BetterSqlite3.Statement;
  private readonly existing: BetterSqlite3.Statement;

  constructor(
    private readonly db: Kysely<Database>,
    statements: Statements,
    private readonly relax: Relax | undefined,
  ) {
    this.statement = statements.prepare(
      `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, run_id, note, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'queued', 0, ?, ?, NULL, NULL, ?, ?)
       ON CONFLICT (idempotency_key) DO NOTHING RETURNING *`,
    );
    this.existing = statements.prepare('SELECT * FROM inputs WHERE idempotency_key = ?');
  }

  /**
   * Through Kysely's connection lock: run between two awaits of another task's transaction, the statement would
   * join that transaction and be rolled back with it. Handing the connection back waits until the row is durable,
   * unless the write is unsynced.
   */
  insert(input: NewInput, now: number, unsynced: boolean): Promise<{ input: InputRecord; created: boolean }> {
    return this.db.connection().execute(async () => {
      if (unsynced) this.relax?.();
      const row = this.statement.get(
        input.id,
        input.sessionKey,
        input.idempotencyKey,
        input.mode,
        input.text,
        JSON.stringify(withSender(input.provenance)),
        now,
        now,
      );
      if (row) return { input: toInput(row as Selectable<InputsTable>), created: true };
      return { input: toInput(this.existing.get(input.idempotencyKey) as Selectable<InputsTable>), created: false };
    });
  }
}

export class SqliteStore extends KyselyStore {
  private constructor(
    db: Kysely<Database>,
    readonly raw: BetterSqlite3.Database,
    statements: Statements,
    /** With synchronous FULL: the syncs that make commits durable. */
    readonly wal: WalSync | undefined,
    private readonly groupCommit: GroupCommitDriver,
    private readonly markDurable: () => void,
  ) {
    const relax = () => groupCommit.relax();
    super(db, sqliteDialect, {
      inputPaths: new SqliteInputPaths(db, statements, relax),
      transcript: (plain) => new TranscriptTails(plain),
      relax,
      historyWithStart: true,
    });
  }

  /**
   * Everything written so far, committed and synced. While a transaction is open (internal writes not yet
   * committed), this runs as a durable unit, which commits it and waits for the sync that follows.
   */
  override durable(): Promise<void> {
    if (this.groupCommit.open) return this.db.connection().execute(async () => this.markDurable());
    return this.wal ? this.wal.durable() : Promise.resolve();
  }

  /**
   * SQLite's online backup, from the connection that holds the file (nothing else can read it while a gateway runs):
   * a consistent copy of everything committed, made without stopping, then opened and checked whole.
   */
  override async backup(path: string): Promise<{ path: string; bytes: number }> {
    if (!isAbsolute(path)) throw new SwitchboardError('INVALID_REQUEST', `backup path "${path}" is not absolute`);
    if (existsSync(path)) throw new SwitchboardError('INVALID_REQUEST', `${path} exists already: give the backup the path of a new file`);
    if (!existsSync(dirname(path))) throw new SwitchboardError('INVALID_REQUEST', `the folder ${dirname(path)} does not exist`);
    await this.durable();
    await this.raw.backup(path);
    const copy = new BetterSqlite3(path, { readonly: true });
    try {
      const [check] = copy.pragma('integrity_check') as { integrity_check: string }[];
      if (check?.integrity_check !== 'ok') throw new Error(`the backup at ${path} failed its integrity check: ${check?.integrity_check}`);
    } finally {
      copy.close();
    }
    return { path, bytes: statSync(path).size };
  }

  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const raw = new BetterSqlite3(options.path);
    if (options.exclusive) takeFileLock(raw, options.path);
    raw.pragma('journal_mode = WAL');
    const synchronous = options.synchronous ?? 'FULL';
    // FULL's syncs are done by WalSync, off the event loop; a database in memory has nothing to sync.
    const wal = synchronous === 'FULL' && options.path !== ':memory:' ? new WalSync(options.path) : undefined;
    raw.pragma(`synchronous = ${wal ? 'NORMAL' : synchronous}`);
    raw.pragma('busy_timeout = 5000');
    // A checkpoint copies every page the WAL changed back into the file, on the event loop. Every 1,000 pages
    // (SQLite's default) the same hot index pages are copied again and again; every 10,000 (about 40 MB of WAL)
    // they are copied once per many commits: 20% more sends per second, at the cost of a rarer, longer pause.
    raw.pragma('wal_autocheckpoint = 10000');
    raw.pragma('foreign_keys = ON');
    // A grouped unit's savepoint keeps the pages it changes in a sub-journal: in memory, not in a temporary file.
    raw.pragma('temp_store = MEMORY');
    if (options.mmapBytes && options.path !== ':memory:') raw.pragma(`mmap_size = ${Math.floor(options.mmapBytes)}`);
    const writes = new UnitWrites();
    const statements = withStatementCache(raw, writes);
    const dialect = new SqliteStoreDialect(statements, raw, writes, wal);
    const db = new Kysely<Database>({ dialect });
    await migrateToLatest(db, sqliteDialect);
    return new SqliteStore(db, raw, statements, wal, dialect.groupCommit!, () => (writes.dirty = true));
  }
}

class SqliteStoreDialect extends SqliteDialect {
  groupCommit: GroupCommitDriver | undefined;

  constructor(
    statements: Statements,
    private readonly raw: BetterSqlite3.Database,
    private readonly writes: UnitWrites,
    private readonly wal: WalSync | undefined,
  ) {
    super({ database: statements });
  }

  override createDriver(): Driver {
    this.groupCommit = new GroupCommitDriver(super.createDriver(), this.raw, this.writes, this.wal);
    return inTurns(this.groupCommit, new Turns());
  }
}

type Statements = ReturnType<typeof withStatementCache>;

/**
 * Kysely prepares every query anew; preparing costs more than running most of ours. The query builder
 * produces a small, fixed set of SQL texts, so their statements are kept (bounded, oldest out first).
 * Safe because the driver runs each statement to completion synchronously.
 */
function withStatementCache(raw: BetterSqlite3.Database, writes: UnitWrites, limit = 500) {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => raw.close(),
    prepare(text: string) {
      let statement = cache.get(text);
      if (!statement) {
        statement = raw.prepare(text);
        statement = trackWrites(statement, writes);
        if (cache.size >= limit) cache.delete(cache.keys().next().value!);
        cache.set(text, statement);
      }
      return statement;
    },
  };
}

/** Takes the file's exclusive lock at once (no waiting), or refuses with GATEWAY_LOCKED. */
function takeFileLock(raw: BetterSqlite3.Database, path: string): void {
  try {
    raw.pragma('busy_timeout = 0');
    raw.pragma('locking_mode = EXCLUSIVE');
    raw.pragma('journal_mode = WAL');
    // A write takes the lock; in EXCLUSIVE mode it is kept until the connection closes.
    raw.exec('BEGIN EXCLUSIVE; COMMIT;');
  } catch (error) {
    raw.close();
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw new SwitchboardError(
        'GATEWAY_LOCKED',
        `another gateway is already using the database ${path}; stop it, or give this one its own gateway.dataDir (or store.sqlite.path)`,
      );
    }
    throw error;
  }
}
