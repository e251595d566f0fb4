/**
 * The PostgreSQL adapter (`store.driver: postgres`, docs/deploy.md): the same portable store over `pg`, in the
 * schema `store.schema`, shared by any number of gateways. Its clock is the database's (DatabaseClock).
 */
import { claimInOneStatement } from './board-claim.js';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { errorMessage } from '../../core/errors.js';
import { KyselyStore } from '../kysely/kysely-store.js';
import { migrateToLatest } from '../migrations/migrate.js';
import type { Database } from '../schema/database.js';
import { connectFailuresAsStoreFailures } from './connect-failures.js';
import { DatabaseClock } from './db-clock.js';
import { StatementNames, withNamedStatements } from './named-statements.js';
import { channelOf, PostgresSignals } from './signals.js';
import { PostgresInputPaths } from './input-paths.js';
import { postgresDialect } from './postgres-dialect.js';
import { PostgresRunPaths } from './run-paths.js';
import { type AnalyzeMode, TableStatistics } from './table-statistics.js';

export interface PostgresStoreOptions {
  connectionString: string;
  /** The schema the tables live in; created when missing. */
  schema?: string;
  maxConnections?: number;
  /**
   * How long PostgreSQL lets one of this store's transactions sit idle before it ends it (idle_in_transaction_session_
   * timeout): a gateway that hangs or is paused mid-transaction would otherwise hold its row locks, and every other
   * gateway's takeover of its runs would wait on them. Default 15 s; a gateway sets half its lease's lifetime.
   */
  idleTransactionTimeoutMs?: number;
  /** How long a query waits for a connection (the pool's or a new one) before it fails with STORE_FAILED. Default 10 s. */
  connectTimeoutMs?: number;
  /** Server-side prepared statements for the store's repeated queries (named-statements.ts). Default true. */
  preparedStatements?: boolean;
  /** `auto` (the default): analyze the store's tables when the server's autovacuum is off (table-statistics.ts). */
  analyze?: AnalyzeMode;
  /** Where a failure of the store's own background work goes (signals, the statistics pass); by default nowhere. */
  onBackgroundError?: (error: unknown) => void;
}

export class PostgresStore extends KyselyStore {
  readonly clock: DatabaseClock;
  override readonly signals: PostgresSignals;
  readonly statistics: TableStatistics;

  private constructor(db: Kysely<Database>, signals: PostgresSignals, schema: string, onError?: (error: unknown) => void) {
    super(db, postgresDialect, {
      runPaths: new PostgresRunPaths(db),
      inputPaths: new PostgresInputPaths(db),
      boardClaim: claimInOneStatement,
    });
    this.clock = new DatabaseClock(db);
    this.signals = signals;
    this.statistics = new TableStatistics(db, schema, onError);
  }

  /** Connects, migrates the schema to this build's latest and measures the database's clock. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = options.schema ?? 'public';
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
      throw new Error(`store.schema: "${schema}" is not a PostgreSQL schema name this store accepts (lower-case letters, digits and _)`);
    // Every connection works in the store's schema from its first statement.
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      options: `-c search_path=${schema} -c idle_in_transaction_session_timeout=${options.idleTransactionTimeoutMs ?? 15_000}`,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    });
    // A connection the server drops (a restart, a transaction it ended for idling) fails what runs on it and is
    // replaced on next use; neither an idle one nor one in use may crash the process with an unhandled 'error'.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: connectFailuresAsStoreFailures(options.preparedStatements === false ? pool : withNamedStatements(pool, new StatementNames())),
      }),
    });
    const report = options.onBackgroundError ?? (() => {});
    const signals = new PostgresSignals(
      pool,
      () => new pg.Client({ connectionString: options.connectionString, connectionTimeoutMillis: 10_000 }),
      channelOf(schema),
      (error) =>
        report(new Error(`signals between gateways (LISTEN/NOTIFY) failed; polling covers until they are back: ${errorMessage(error)}`)),
    );
    const store = new PostgresStore(db, signals, schema, options.onBackgroundError);
    try {
      await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db);
      await migrateToLatest(db, postgresDialect, schema);
      await store.clock.start();
      await signals.start();
      await store.statistics.start(options.analyze ?? 'auto');
      return store;
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
  }

  override async close(): Promise<void> {
    this.clock.stop();
    this.statistics.stop();
    await this.signals.close();
    await super.close();
  }
}
