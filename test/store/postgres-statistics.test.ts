/**
 * The store's tables analyzed where the server's autovacuum is off (store.analyze, table-statistics.ts): without it a
 * plan made while a table was empty is kept however large the table grows. This machine's PostgreSQL runs with
 * autovacuum off, as CI's does; the pass itself is tested whatever the server's setting; a table updated in place is
 * analyzed at most once a minute. How the run's functions are planned is in postgres-plans.test.ts.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { errorMessage } from '../../src/core/errors.js';
import type { Database } from '../../src/store/schema/database.js';
import { TableStatistics } from '../../src/store/postgres/table-statistics.js';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

if (process.env.CI || (await postgresReachable())) {
  describe('PostgreSQL: table statistics when autovacuum is off', () => {
    const schemas: string[] = [];
    const open = (analyze?: 'auto' | 'off') => {
      const schema = `sb_stats_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      return PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 2, analyze });
    };
    afterAll(async () => {
      await dropSchemas(...schemas);
    });

    it('auto analyzes exactly when the server does not; off never', async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      const { rows } = await client.query<{ autovacuum: string }>(`SELECT current_setting('autovacuum') AS autovacuum`);
      await client.end();
      const auto = await open();
      const off = await open('off');
      try {
        expect(auto.statistics.running).toBe(rows[0]!.autovacuum === 'off');
        expect(off.statistics.running).toBe(false);
      } finally {
        await auto.close();
        await off.close();
      }
    });

    it('a pass analyzes the tables that changed by more than 50 and a tenth of their rows, and a plan cached while the table was empty is made again', async () => {
      const store = await open('off');
      const schema = schemas.at(-1)!;
      const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await client.connect();
      try {
        // A plan made while inputs is empty, kept as a prepared statement's generic plan is (and a function's).
        await client.query('SET plan_cache_mode = force_generic_plan');
        await client.query('PREPARE by_ids(text[]) AS SELECT * FROM inputs WHERE id = ANY($1)');
        const plan = async () =>
          (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE by_ids('{in-1}')`)).rows
            .map((row) => row['QUERY PLAN'])
            .join('\n');
        expect(await plan()).toContain('Seq Scan on inputs');
        await store.sessions.ensure({ key: 'agent:a:main', agentId: 'a' }, 1000);
        await client.query(
          `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, created_at, updated_at)
           SELECT 'in-' || g, 'agent:a:main', 'key-' || g, 'followup', 'consumed', 1, 'x', '{"kind":"user"}', 1000, 1000 FROM generate_series(1, 3000) g`,
        );
        // Nothing has told the planner the table grew: the plan that reads every input to find one stays.
        expect(await plan()).toContain('Seq Scan on inputs');
        // This connection's counts of changed rows go to the server's statistics at once, not within seconds.
        await client.query('SELECT pg_stat_force_next_flush()');
        await client.query('SELECT 1');
        await waitUntil('a pass analyzes inputs', async () => (await store.statistics.pass()).includes('inputs'), 20_000, 200);
        expect(await plan()).toContain('inputs_id_key');
        expect(await plan()).not.toContain('Seq Scan');
        // Its count of changes starts again from the analyze: the next pass leaves it.
        expect(await store.statistics.pass()).not.toContain('inputs');
        // sessions changed by one row, under the threshold.
        expect(await store.statistics.pass()).not.toContain('sessions');
      } finally {
        await client.end();
        await store.close();
      }
    });

    it('a table whose rows are updated in place is analyzed again only after a minute; one whose number of rows moves, at once', async () => {
      const store = await open('off');
      const schema = schemas.at(-1)!;
      const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await client.connect();
      const flushed = async () => {
        await client.query('SELECT pg_stat_force_next_flush()');
        await client.query('SELECT 1');
      };
      try {
        const sessions = (from: number, to: number) =>
          client.query(
            `INSERT INTO sessions (key, agent_id, depth, state, created_at, updated_at)
             SELECT 'agent:a:s' || g, 'a', 0, 'idle', 1000, 1000 FROM generate_series(${from}, ${to}) g`,
          );
        await sessions(1, 100);
        await flushed();
        await waitUntil('a pass analyzes the new rows', async () => (await store.statistics.pass()).includes('sessions'), 20_000, 200);
        // 300 changes, past 50 and a tenth of 100 rows, but the number of rows is the same: not within the minute.
        for (let n = 0; n < 3; n += 1) await client.query(`UPDATE sessions SET state = 'running', updated_at = ${2000 + n}`);
        await flushed();
        const { rows } = await client.query<{ changed: number }>(
          `SELECT n_mod_since_analyze::int AS changed FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'sessions'`,
          [schema],
        );
        expect(rows[0]!.changed).toBe(300);
        expect(await store.statistics.pass()).not.toContain('sessions');
        // Once the naptime has passed since its analyze (here a second, by the database's clock), it is taken.
        const db = new Kysely<Database>({
          dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 1 }) }),
        });
        try {
          const napped = new TableStatistics(db, schema, undefined, 2_000, 1);
          await waitUntil(
            'a pass after the naptime analyzes sessions',
            async () => (await napped.pass()).includes('sessions'),
            10_000,
            200,
          );
        } finally {
          await db.destroy();
        }
        // 300 more changes in place, just after that analyze: left again.
        for (let n = 0; n < 3; n += 1) await client.query(`UPDATE sessions SET state = 'idle', updated_at = ${3000 + n}`);
        await flushed();
        expect(await store.statistics.pass()).not.toContain('sessions');
        // 200 more rows: analyzed on the next pass, minute or not.
        await sessions(101, 300);
        await flushed();
        await waitUntil('a pass analyzes the grown table', async () => (await store.statistics.pass()).includes('sessions'), 20_000, 200);
      } finally {
        await client.end();
        await store.close();
      }
    });

    it('a background pass that fails is reported, with what failed, and the next one tries again', async () => {
      const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 1 }) }) });
      const errors: string[] = [];
      const statistics = new TableStatistics(db, 'sb_stats_nowhere', (error) => errors.push(errorMessage(error)), 20);
      const leftToUs = await statistics.serverLeavesItToUs();
      try {
        expect(await statistics.start('auto')).toBe(leftToUs);
        if (!leftToUs) return;
        // Its connections gone, every pass fails: each is reported, and the timer goes on.
        await db.destroy();
        await waitUntil('two failed passes are reported', () => errors.length >= 2, 5000, 10);
        expect(errors[0]).toMatch(/^analyzing the store's tables failed, tried again in 20 ms: /);
      } finally {
        statistics.stop();
        await db.destroy().catch(() => {});
      }
    });
  });
} else {
  describe('PostgreSQL: table statistics when autovacuum is off', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
