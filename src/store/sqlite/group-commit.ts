/**
 * Group commit: units of work that queue for SQLite's one connection share one transaction.
 *
 * A unit is a transaction, a statement outside one, or a `connection()` callback. A unit that begins a
 * transaction, or that finds other units waiting behind it, opens a transaction for the batch (or joins
 * the one that is open); each unit's own transaction is a savepoint in it, so a unit that fails rolls back
 * its own work and nothing else. A unit handing the connection back commits the batch when no other unit
 * waits, or when the batch holds `maxUnits`; otherwise it leaves the transaction to the next unit. Every
 * unit of a batch is answered only after the COMMIT that covers it (and, with `synchronous = FULL`, after
 * the WAL sync that began after that COMMIT), so a caller learns of nothing that a crash could take back.
 * A failed COMMIT fails every unit of its batch. Under load this writes the hot pages (the tables' last
 * pages, the indexes' roots) once per batch instead of once per unit, and one COMMIT takes the place of
 * dozens. A lone unit of single statements runs them as it would without grouping, each committing alone.
 *
 * Internal writes (sql/writes.ts `Relax`: a session, a lease, a run's start) and reads are answered
 * without waiting for a COMMIT, and do not commit a batch that holds nothing else: an internal write opens
 * one, the next durable unit's COMMIT covers it, or a later turn of the event loop commits it.
 */
import { SwitchboardError } from '../../core/errors.js';
import type BetterSqlite3 from 'better-sqlite3';
import type { DatabaseConnection, Driver, TransactionSettings } from 'kysely';
import { laterTurn } from './turns.js';
import type { UnitWrites, WalSync } from './wal-sync.js';

class Batch {
  units = 0;
  /** A unit of the batch made a durable write and waits for the COMMIT. */
  durable = false;
  readonly done: Promise<void>;
  settle!: (error?: Error) => void;

  constructor() {
    this.done = new Promise((resolve, reject) => {
      this.settle = (error) => (error ? reject(error) : resolve());
    });
    // Every unit of the batch awaits this; a batch whose units are gone must not report an unhandled rejection.
    this.done.catch(() => {});
  }
}

export class GroupCommitDriver implements Driver {
  private batch: Batch | undefined;
  /** Units waiting for the connection. */
  private waiting = 0;
  /** A unit holds the connection. */
  private held = false;
  /** The unit holding the connection is part of the batch (else its statements commit one by one). */
  private joined = false;
  /** COMMITs so far. */
  commits = 0;
  /** A COMMIT is due on a later turn for a batch that holds only internal writes and reads. */
  private flushing = false;
  private readonly sql: Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo', BetterSqlite3.Statement>;

  constructor(
    private readonly inner: Driver,
    private readonly raw: BetterSqlite3.Database,
    /** What the unit holding the connection wrote. */
    private readonly writes: UnitWrites,
    /** With synchronous FULL: a unit that wrote is answered after the WAL sync that follows its COMMIT. */
    private readonly wal: WalSync | undefined,
    private readonly maxUnits = 32,
  ) {
    this.sql = {
      begin: raw.prepare('BEGIN'),
      commit: raw.prepare('COMMIT'),
      rollback: raw.prepare('ROLLBACK'),
      savepoint: raw.prepare('SAVEPOINT sb_unit'),
      release: raw.prepare('RELEASE sb_unit'),
      rollbackTo: raw.prepare('ROLLBACK TO sb_unit'),
    };
  }

  /** A transaction is open: units in it (internal writes, or units waiting for it) are not committed yet. */
  get open(): boolean {
    return this.batch !== undefined;
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    this.waiting += 1;
    let connection: DatabaseConnection;
    try {
      connection = await this.inner.acquireConnection();
    } finally {
      this.waiting -= 1;
    }
    this.held = true;
    this.joined = false;
    // Alone, a unit of single statements runs as it would without grouping: each statement commits by itself.
    if (this.batch || this.waiting > 0) {
      try {
        this.join();
      } catch (error) {
        this.held = false;
        await this.inner.releaseConnection(connection);
        throw error;
      }
    }
    return connection;
  }

  async beginTransaction(_connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    if (!this.joined) this.join();
    this.sql.savepoint.run();
  }

  async commitTransaction(): Promise<void> {
    this.sql.release.run();
  }

  async rollbackTransaction(): Promise<void> {
    // An I/O error or a full disk rolls back SQLite's whole transaction: the batch is lost (see releaseConnection).
    if (!this.raw.inTransaction) return;
    this.sql.rollbackTo.run();
    this.sql.release.run();
  }

  /**
   * Called by a unit of internal writes (sql/writes.ts `Relax`) before it writes. It opens a batch if none
   * is open and is answered without waiting for a COMMIT: the next durable unit's COMMIT covers its writes,
   * or, if none comes, the COMMIT a later turn of the event loop makes.
   */
  relax(): void {
    this.writes.relax();
    if (this.held && !this.joined) this.join();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const batch = this.joined ? this.batch : undefined;
    this.held = false;
    this.joined = false;
    const durable = this.writes.takeDurable();
    if (batch && durable) batch.durable = true;
    if (batch && !this.raw.inTransaction) {
      this.batch = undefined;
      batch.settle(
        new SwitchboardError(
          'STORE_FAILED',
          'SQLite rolled back its whole transaction after an error in a write grouped with this one (an I/O error or a full disk): this write was not kept; try it again',
        ),
      );
    } else if (batch && (batch.units >= this.maxUnits || (batch.durable && this.waiting === 0))) {
      this.commit(batch);
    } else if (batch && this.waiting === 0) {
      this.flushLater();
    }
    await this.inner.releaseConnection(connection);
    // Reads and internal writes need no COMMIT to be answered; a durable unit waits for the one that covers it.
    if (batch && durable) await batch.done;
    if (durable && this.wal) await this.wal.durable();
  }

  async destroy(): Promise<void> {
    // Closing under a unit that still holds the connection rolls its transaction back, with the batch.
    if (this.batch && !this.held) this.commit(this.batch);
    else
      this.batch?.settle(
        new SwitchboardError(
          'GATEWAY_STOPPING',
          'the store closed before this write was committed: the gateway is stopping; send it again once it is back',
        ),
      );
    await this.inner.destroy();
    this.wal?.close();
  }

  /** Makes the unit holding the connection part of the open batch, opening one if there is none. */
  private join(): void {
    if (!this.batch) {
      this.sql.begin.run();
      this.batch = new Batch();
    }
    this.batch.units += 1;
    this.joined = true;
  }

  /** Commits the open batch on a later turn, unless a unit holds the connection then (its release decides). */
  private flushLater(): void {
    if (this.flushing) return;
    this.flushing = true;
    void laterTurn().then(() => {
      this.flushing = false;
      if (this.batch && !this.held) this.commit(this.batch);
    });
  }

  private commit(batch: Batch): void {
    this.batch = undefined;
    this.commits += 1;
    try {
      this.sql.commit.run();
      batch.settle();
    } catch (error) {
      if (this.raw.inTransaction) this.sql.rollback.run();
      batch.settle(error as Error);
    }
  }
}
