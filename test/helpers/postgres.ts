/** The PostgreSQL the tests use: SWITCHBOARD_TEST_POSTGRES, default the local server .ci/run starts. */
import pg from 'pg';

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
