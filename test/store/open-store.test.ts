/** Opening the store the config names: each way PostgreSQL cannot be opened is one line saying what to check. */
import pg from 'pg';
import { dropSchemas } from '../helpers/postgres.js';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, type StoreSelection } from '../../src/store/open/open-store.js';
import { latestMigration } from '../../src/store/migrations/migrate.js';

const url = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `sb_open_${process.pid}`;

const selection = (overrides: Partial<StoreSelection>): StoreSelection => ({
  driver: 'postgres',
  schema,
  maxConnections: 2,
  sqlite: { path: ':memory:', synchronous: 'FULL' },
  ...overrides,
});

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect((error as Error).name).toBe('StoreOpenError');
    return (error as Error).message;
  }
  throw new Error('expected the store to be refused');
}

describe('openStore', () => {
  afterAll(async () => {
    await dropSchemas(schema);
  });

  it('SQLite opens on the event loop by default and on a worker thread when store.sqlite.thread says so, the same store either way', async () => {
    for (const sqliteThread of [undefined, 'worker'] as const) {
      const { store, driver } = await openStore(selection({ driver: 'sqlite', sqliteThread }));
      try {
        expect(driver).toBe('sqlite');
        // SqliteStore keeps its raw connection; the worker's proxy has only the port's parts.
        expect('raw' in store).toBe(sqliteThread === undefined);
        await store.sessions.ensure({ key: 'agent:a:x:direct:p', agentId: 'a' }, 1);
        expect(await store.sessions.get('agent:a:x:direct:p')).toMatchObject({ agentId: 'a', createdAt: 1 });
      } finally {
        await store.close();
      }
    }
  });

  it('a postgres driver without a URL, or SQLite given a URL that is not PostgreSQL, names the keys', async () => {
    expect(await refusal(openStore(selection({})))).toBe(
      'store.driver is postgres but no URL is set: set store.url, $SWITCHBOARD_STORE_URL or --store (postgres://user:password@host:5432/database)',
    );
    expect(await refusal(openStore(selection({ driver: 'sqlite', url: 'mysql://root:hunter2@db/x', urlSource: '--store' })))).toBe(
      '--store: "mysql://root:***@db/x" is not a PostgreSQL URL (expected postgres://user:password@host:5432/database)',
    );
  });

  it('a server that does not answer, an unknown user, a missing database: one line each, without the password', async () => {
    const down = await refusal(openStore(selection({ url: 'postgres://u:s3cret-pass@127.0.0.1:1/test' })));
    expect(down).toBe('cannot reach PostgreSQL at 127.0.0.1:1 (ECONNREFUSED): is the server running, and is store.url right?');
    const user = await refusal(
      openStore(selection({ url: 'postgres://no_such_user:s3cret-pass@127.0.0.1:5432/test', urlSource: 'SWITCHBOARD_STORE_URL' })),
    );
    expect(user).toMatch(
      /^PostgreSQL at 127\.0\.0\.1:5432 refused user "no_such_user" \(28\w+: .+\): check the user and password in SWITCHBOARD_STORE_URL$/,
    );
    const database = await refusal(openStore(selection({ url: 'postgres://postgres@127.0.0.1:5432/no_such_db' })));
    expect(database).toBe('PostgreSQL at 127.0.0.1:5432 has no database "no_such_db": create it (createdb no_such_db) or fix store.url');
    for (const line of [down, user, database]) expect(line).not.toContain('s3cret-pass');
  });

  it('a postgres:// URL selects PostgreSQL; a schema a newer Switchboard migrated is refused, naming both versions', async () => {
    const opened = await openStore(selection({ driver: 'sqlite', url }));
    expect(opened.driver).toBe('postgres');
    expect(Math.abs(opened.clock!.now() - Date.now())).toBeLessThan(1000);
    await opened.store.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`INSERT INTO ${schema}.kysely_migration (name, timestamp) VALUES ('9999_from_the_future', now()::text)`);
    await client.end();
    expect(await refusal(openStore(selection({ url })))).toBe(
      `the database's schema is at migration 9999_from_the_future, newer than this Switchboard knows (its latest is ${latestMigration()}): run the newer Switchboard, or point the store at another database`,
    );
  });
});
