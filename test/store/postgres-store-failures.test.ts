/**
 * The database failing under a request (a connection the server ends, an exhausted pool, a transaction ended for
 * idling, as a gateway paused past its lease meets them) is STORE_FAILED, a retryable 503, and is logged: checked with
 * the errors node-postgres really throws, and at the control API of a gateway on PostgreSQL.
 */
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { toSwitchboardError } from '../../src/core/errors.js';
import { ControlApi } from '../../src/http/control-api.js';
import { connectFailuresAsStoreFailures } from '../../src/store/postgres/connect-failures.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('expected the query to fail'),
    (error: unknown) => error,
  );

/** A second connection that ends `pid`'s backend, as an operator or a server restart does. */
async function terminate(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await admin.end();
  }
}

describe("the PostgreSQL store's pool", () => {
  /** A pool whose connect and queries fail as `failures` say: a hand-written fake of what node-postgres hands Kysely. */
  const failing = (failures: { connect?: Error; query?: Error }): PostgresPool => ({
    connect: async () => {
      if (failures.connect) throw failures.connect;
      return {
        query: (async () => {
          throw failures.query;
        }) as unknown as PostgresPoolClient['query'],
        release: () => {},
      };
    },
    end: async () => {},
  });
  const errno = (message: string, code: string) => Object.assign(new Error(message), { code });

  it('a connection that cannot be had or fails under a query without a SQLSTATE (a reset socket) is STORE_FAILED; a SQLSTATE passes as it is', async () => {
    const refused = errno('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
    const caught = await rejection(connectFailuresAsStoreFailures(failing({ connect: refused })).connect());
    expect(toSwitchboardError(caught).toJSON()).toMatchObject({ code: 'STORE_FAILED', details: { cause: 'ECONNREFUSED' } });
    expect((caught as Error).cause).toBe(refused);
    for (const [error, cause] of [
      [errno('read ECONNRESET', 'ECONNRESET'), 'ECONNRESET'],
      [errno('write EPIPE', 'EPIPE'), 'EPIPE'],
      [new Error('Connection terminated unexpectedly'), 'Connection terminated unexpectedly'],
    ] as const) {
      const client = await connectFailuresAsStoreFailures(failing({ query: error })).connect();
      const failed = await rejection(client.query('SELECT 1', []));
      expect(toSwitchboardError(failed).toJSON()).toMatchObject({ code: 'STORE_FAILED', details: { cause } });
    }
    // The store reads these codes itself (a unique key, its own fences): they are not wrapped.
    const duplicate = Object.assign(new pg.DatabaseError('duplicate key value violates unique constraint', 0, 'error'), { code: '23505' });
    const client = await connectFailuresAsStoreFailures(failing({ query: duplicate })).connect();
    expect(await rejection(client.query('SELECT 1', []))).toBe(duplicate);
    // A bug (a value the driver cannot send) is not the database failing: it stays a 500, never a retryable 503.
    const bug = new TypeError('Do not know how to serialize a BigInt');
    const buggy = await connectFailuresAsStoreFailures(failing({ query: bug })).connect();
    expect(await rejection(buggy.query('SELECT 1', []))).toBe(bug);
  });
});

if (process.env.CI || (await postgresReachable())) {
  describe('store failures on PostgreSQL', () => {
    it("node-postgres's own connection errors (no SQLSTATE) and the server's ending of a connection are STORE_FAILED", async () => {
      // A connection ended mid-query: the query in flight gets 57P01, the one queued behind it node-postgres's own error.
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      client.on('error', () => {});
      await client.connect();
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const inFlight = rejection(client.query('SELECT pg_sleep(30)'));
      const queued = rejection(client.query('SELECT 1'));
      await terminate(pid);
      const [killed, unexpected] = await Promise.all([inFlight, queued]);
      expect((unexpected as Error).message).toBe('Connection terminated unexpectedly');
      const afterwards = await rejection(client.query('SELECT 1'));
      expect((afterwards as Error).message).toBe('Client has encountered a connection error and is not queryable');
      for (const error of [killed, unexpected, afterwards]) {
        expect(toSwitchboardError(error).toJSON()).toMatchObject({ code: 'STORE_FAILED', details: { cause: expect.any(String) } });
      }
      expect(toSwitchboardError(killed).details).toEqual({ cause: '57P01' });
      await client.end().catch(() => {});

      // A transaction left idle past idle_in_transaction_session_timeout (25P03), as a paused gateway leaves one.
      const idle = new pg.Client({ connectionString: POSTGRES_URL, options: '-c idle_in_transaction_session_timeout=50' });
      const ended = new Promise<unknown>((resolve) => idle.on('error', resolve));
      await idle.connect();
      await idle.query('BEGIN');
      const timedOut = await ended;
      expect((timedOut as { code?: string }).code).toBe('25P03');
      expect(toSwitchboardError(timedOut).details).toEqual({ cause: '25P03' });
      expect(toSwitchboardError(await rejection(idle.query('SELECT 1'))).code).toBe('STORE_FAILED');
      await idle.end().catch(() => {});

      // A pool whose every connection is taken past its connectionTimeoutMillis.
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1, connectionTimeoutMillis: 50 });
      const held = await pool.connect();
      const exhausted = await rejection(pool.connect());
      expect((exhausted as Error).message).toBe('timeout exceeded when trying to connect');
      expect(toSwitchboardError(exhausted).toJSON()).toMatchObject({
        code: 'STORE_FAILED',
        details: { cause: 'timeout exceeded when trying to connect' },
      });
      held.release();
      await pool.end();
    });

    const schema = `sb_failures_${process.pid}`;
    afterAll(async () => {
      await dropSchemas(schema);
    });

    it('a request that finds every connection of the pool taken past its timeout is answered 503 STORE_FAILED and logged with its cause', async () => {
      // One connection, waited for 2 s at most (connecting takes far less), as a gateway whose connections a pause left
      // hanging has none free.
      const store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 1, connectTimeoutMs: 2000 });
      const { config } = parseConfigText(
        `{ agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo" }] } } } } } }`,
        '/test.json5',
        {},
      );
      const gateway = await startGateway({ config, store, clock: store.clock, gatewayId: 'gw-failures' });
      const logged: { level: string; message: string; fields: Record<string, unknown> }[] = [];
      const api = new ControlApi(gateway, {
        host: '127.0.0.1',
        port: 0,
        token: 'token',
        log: (level, message, fields) => void logged.push({ level, message, fields }),
      });
      const url = await api.listen();
      const locker = new pg.Client({ connectionString: POSTGRES_URL });
      await locker.connect();
      // pg_stat_activity is read outside the locker's transaction, which would see one snapshot of it throughout.
      const watcher = new pg.Client({ connectionString: POSTGRES_URL });
      await watcher.connect();
      try {
        // The gateway's own scans of the inputs wait on a lock held from outside, on the pool's one connection.
        await locker.query(`BEGIN; LOCK TABLE ${schema}.inputs IN ACCESS EXCLUSIVE MODE`);
        const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await waitUntil(
          "the pool's one connection waits on the lock",
          async () =>
            (await watcher.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid])).rows.length > 0,
          30_000,
        );
        const response = await fetch(`${url}/v1/send`, {
          method: 'POST',
          headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
          body: JSON.stringify({ target: 'echo', message: 'kept or refused, never lost' }),
        });
        const body = (await response.json()) as { error: { code: string; details: { cause: string } } };
        expect({ status: response.status, error: body.error }).toMatchObject({
          status: 503,
          error: { code: 'STORE_FAILED', details: { cause: 'timeout exceeded when trying to connect' } },
        });
        expect(logged).toContainEqual({
          level: 'warn',
          message:
            'POST /v1/send: the store did not take this request (answered 503 STORE_FAILED): timeout exceeded when trying to connect',
          fields: { cause: 'timeout exceeded when trying to connect' },
        });
        await locker.query('ROLLBACK');
        // Nothing was kept: the message is not an input.
        const { rows } = await watcher.query(`SELECT count(*)::int AS n FROM ${schema}.inputs`);
        expect(rows[0]).toEqual({ n: 0 });
      } finally {
        await locker.end();
        await watcher.end();
        await gateway.stop();
        await api.close();
        await store.close();
      }
    });
  });
} else {
  describe('store failures on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
