/**
 * The PostgreSQL adapter: the same portable store over `pg`, each store in a schema of its own.
 * Not yet selectable in the config (`store.driver`); it exists so that the store contract suite proves the
 * shared SQL portable now, before several gateways share one database.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { KyselyStore } from '../kysely-store.js';
import { migrateToLatest } from '../migrations.js';
import type { Database } from '../schema.js';

export interface PostgresStoreOptions {
  connectionString: string;
  /** The schema the tables live in; created when missing. */
  schema?: string;
  maxConnections?: number;
}

export class PostgresStore extends KyselyStore {
  private constructor(db: Kysely<Database>) {
    // The database clock, in epoch milliseconds.
    super(db, 'postgres', () => sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`);
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = options.schema ?? 'public';
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name "${schema}"`);
    // Every connection works in the store's schema from its first statement.
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      options: `-c search_path=${schema}`,
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db);
    await migrateToLatest(db, 'postgres', schema);
    return new PostgresStore(db);
  }
}
