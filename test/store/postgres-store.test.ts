/**
 * The store contract against PostgreSQL, each test in a fresh schema. Needs a server at
 * SWITCHBOARD_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/test); .ci/run starts one. Outside CI
 * the suite is skipped, with a note, when no server answers; in CI (CI=true) it always runs.
 */
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { describeStoreContract } from './store-contract.js';
import { describeBoardContract } from './board-contract.js';

const url = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

if (process.env.CI || (await reachable())) {
  const schemas: string[] = [];
  let counter = 0;
  const open = () => {
    const schema = `sb_test_${process.pid}_${++counter}`;
    schemas.push(schema);
    return PostgresStore.open({ connectionString: url, schema, maxConnections: 4 });
  };
  describeStoreContract('postgres', open);
  describeBoardContract('postgres', open);
  afterAll(async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });
} else {
  describe('store contract: postgres', () => {
    it.skip(`no PostgreSQL server at ${url} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
