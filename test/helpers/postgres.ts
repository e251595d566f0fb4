/**
 * The PostgreSQL the tests use: SWITCHBOARD_TEST_POSTGRES, which vitest.config.ts sets to this run's own database on
 * the local server .ci/run starts (test-database.ts) unless the user named one; the default is for a file run otherwise.
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';

export const POSTGRES_URL = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Whether a server answers: outside CI a suite without one is skipped, with a note; in CI (CI=true) it always runs. */
export async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Drops the schemas a test made, with everything in them. */
export async function dropSchemas(...schemas: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

/**
 * Two stores on one new schema, as two gateways on one database are, for a describe block: opened before its tests
 * (each with a pool of 4, so one store's transactions also run at once), closed and the schema dropped after them.
 * Returns the schema's name.
 */
export function twoStoresOnOneSchema(prefix: string, take: (a: PostgresStore, b: PostgresStore) => void): string {
  const schema = `${prefix}_${process.pid}`;
  let a: PostgresStore | undefined;
  let b: PostgresStore | undefined;
  beforeAll(async () => {
    a = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
    b = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
    take(a, b);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropSchemas(schema);
  });
  return schema;
}
