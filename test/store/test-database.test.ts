/** Each test run has a PostgreSQL database of its own (test/helpers/test-database.ts), never a shared one. */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { createTestDatabase, OWN_DATABASE_ENV, testDatabase } from '../helpers/test-database.js';

const SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

async function databases(): Promise<string[]> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    return (await client.query<{ datname: string }>('SELECT datname FROM pg_database')).rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

const reachable = await postgresReachable();
describe.runIf(reachable || process.env.CI === 'true')('the test database', () => {
  it("this run's tests use a database made for this run, unless SWITCHBOARD_TEST_POSTGRES names one", async () => {
    const own = process.env[OWN_DATABASE_ENV];
    if (own === undefined) {
      // The user named the database: it is used as it is.
      expect(POSTGRES_URL).toBe(process.env.SWITCHBOARD_TEST_POSTGRES);
      return;
    }
    expect(own).toMatch(/^switchboard_test_\d+_[0-9a-f]{8}$/);
    expect(new URL(POSTGRES_URL).pathname).toBe(`/${own}`);
    expect(await databases()).toContain(own);
  });

  it('each run is given a new database, made and then dropped; a database the user names is used as it is', async () => {
    const first = testDatabase({});
    const second = testDatabase({});
    const name = first[OWN_DATABASE_ENV];
    expect(second[OWN_DATABASE_ENV]).not.toBe(name);
    expect(first.SWITCHBOARD_TEST_POSTGRES).toBe(`postgres://postgres@127.0.0.1:5432/${name}`);
    const drop = await createTestDatabase(name);
    expect(await databases()).toContain(name);
    await drop();
    expect(await databases()).not.toContain(name);
    expect(testDatabase({ SWITCHBOARD_TEST_POSTGRES: 'postgres://someone@db.example/theirs' })).toEqual({});
  });
});
