/**
 * Durable commits without an fsync on the event loop: how `synchronous = FULL` is kept.
 *
 * SQLite runs with `synchronous = NORMAL` in WAL mode, so a COMMIT only writes the WAL, and the caller
 * is answered after an fdatasync of the WAL file that began after its commit, run on libuv's thread
 * pool. Commits made while one sync is running share the next one (group commit), and the event loop
 * keeps serving requests meanwhile. A process crash (kill -9) loses nothing in either mode, since the
 * WAL is in the OS's cache; the sync is what makes an acknowledged commit survive a power loss too,
 * as SQLite's own FULL does. Another caller may read a commit before its sync has finished, as with
 * SQLite's FULL between the WAL write and the fsync.
 */
import { SwitchboardError } from '../../core/errors.js';
import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { laterTurn } from './turns.js';

export class WalSync {
  private fd: number | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Syncs started so far (concurrent commits share one). */
  syncs = 0;

  constructor(private readonly databasePath: string) {}

  /** Resolves once everything committed before this call is on disk. */
  durable(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    // The running sync may have begun before this commit: the next one covers it. That one starts a turn of
    // the event loop after the running one ends, so the commits of the work its end releases share it too.
    this.queued = this.running
      .then(noop, noop)
      .then(laterTurn)
      .then(() => {
        this.queued = undefined;
        return this.start();
      });
    return this.queued;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private start(): Promise<void> {
    const fd = this.walFd();
    this.syncs += 1;
    const sync: Promise<void> = new Promise((resolve, reject) =>
      fdatasync(fd, (error) => {
        if (this.running === sync) this.running = undefined;
        // The path stays in the log's cause, not in what a client is told.
        if (error)
          reject(
            Object.assign(
              new SwitchboardError(
                'STORE_FAILED',
                `could not make the commit durable: fdatasync of the WAL failed (${error.code}); try again`,
              ),
              { cause: error },
            ),
          );
        else resolve();
      }),
    );
    this.running = sync;
    return sync;
  }

  /** SQLite creates the WAL at the first write after open and removes it only when the database closes. */
  private walFd(): number {
    if (this.fd === undefined) {
      this.fd = openSync(`${this.databasePath}-wal`, 'r');
      // The new file's directory entry must be durable too.
      const dir = openSync(dirname(this.databasePath), 'r');
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
    }
    return this.fd;
  }
}

const noop = () => {};

/** Follows the writes of the unit holding the connection (statements report through `trackWrites`). */
export class UnitWrites {
  /** A statement that changes the database ran since the connection was last handed back. */
  dirty = false;
  private relaxed = false;

  /** Called by the unit holding the connection: its writes need no wait of their own. */
  relax(): void {
    this.relaxed = true;
  }

  /**
   * Called as a unit hands the connection back: whether it made a durable write (it changed a row and is
   * not an internal write), which must be committed, and synced with FULL, before it is answered.
   */
  takeDurable(): boolean {
    const durable = this.dirty && !this.relaxed;
    this.dirty = false;
    this.relaxed = false;
    return durable;
  }
}

/** Statements that mark the unit dirty when a run of theirs changed a row (an upsert that did nothing does not). */
export function trackWrites(statement: BetterSqlite3.Statement, writes: UnitWrites): BetterSqlite3.Statement {
  if (statement.readonly) return statement;
  // What Kysely's driver and the store call; other methods are not used on these statements.
  const tracked = {
    reader: statement.reader,
    readonly: false,
    source: statement.source,
    run(...args: unknown[]) {
      const result = statement.run(...args);
      if (result.changes > 0) writes.dirty = true;
      return result;
    },
    get(...args: unknown[]) {
      const row = statement.get(...args);
      if (row !== undefined) writes.dirty = true;
      return row;
    },
    all(...args: unknown[]) {
      const rows = statement.all(...args);
      if (rows.length > 0) writes.dirty = true;
      return rows;
    },
  };
  return tracked as unknown as BetterSqlite3.Statement;
}
