/**
 * Each test run gets a PostgreSQL database of its own, `switchboard_test_<pid>_<random>`: vitest.config.ts names it
 * (testDatabase) and hands it to every test as SWITCHBOARD_TEST_POSTGRES; this file, vitest's global setup, creates
 * it on the server before the first test file and drops it after the last. Two runs at once (two people, two CI
 * jobs on one server) never share tables, and nothing is left behind. An explicit SWITCHBOARD_TEST_POSTGRES is used
 * as it is; with no server, nothing is made (the PostgreSQL suites say they are skipped, or fail under CI=true).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server's maintenance database, where a run's own database is created and dropped. */
export const SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Set (to the database's name) when the run's database is made for it, not given by the user. */
export const OWN_DATABASE_ENV = 'SWITCHBOARD_TEST_POSTGRES_OWN';

/** The variables a run's tests get: a new database's, or none when the user named one in `env`. */
export function testDatabase(env: NodeJS.ProcessEnv, serverUrl = SERVER_URL): Record<string, string> {
  if (env.SWITCHBOARD_TEST_POSTGRES) return {};
  const name = `switchboard_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { SWITCHBOARD_TEST_POSTGRES: url.toString(), [OWN_DATABASE_ENV]: name };
}

async function onServer(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Creates the database `name` (when there is one and the server answers); the returned function drops it. */
export async function createTestDatabase(name: string | undefined, serverUrl = SERVER_URL): Promise<() => Promise<void>> {
  if (!name) return async () => {};
  if (!/^switchboard_test_\w+$/.test(name)) throw new Error(`${OWN_DATABASE_ENV}: not a test database's name: "${name}"`);
  try {
    await onServer(serverUrl, `CREATE DATABASE ${name}`);
  } catch {
    return async () => {};
  }
  // FORCE: a connection a test left open (a killed gateway's) does not keep the database alive.
  return () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** vitest's global setup: runs in vitest's own process, where vitest.config.ts set the name. */
export default function globalSetup(): Promise<() => Promise<void>> {
  return createTestDatabase(process.env[OWN_DATABASE_ENV]);
}
