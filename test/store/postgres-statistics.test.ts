/**
 * The store's tables analyzed where the server's autovacuum is off (store.analyze, table-statistics.ts): without it a
 * plan made while a table was empty is kept however large the table grows. This machine's PostgreSQL runs with
 * autovacuum off, as CI's does; the pass itself is tested whatever the server's setting; a table updated in place is
 * analyzed at most once a minute. And a run's start and commit written so that no statistics send them through the
 * indexes on status (migration 0022), with one plan per connection (0023).
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { errorMessage } from '../../src/core/errors.js';
import type { Database } from '../../src/store/schema.js';
import { TableStatistics } from '../../src/store/postgres/table-statistics.js';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';
import { newInput as input, newRunId, succeededCommit } from '../helpers/inputs.js';

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

    it("a run's start and commit find their rows by key, whatever the statistics say of how many are running or queued", async () => {
      // One connection, so that its functions' plans are kept from call to call as a gateway's are.
      const schema = `sb_stats_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      const store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 1, analyze: 'off' });
      const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await client.connect();
      try {
        const S = 'agent:w:main';
        await store.sessions.ensure({ key: S, agentId: 'w' }, 1000);
        // 2,000 finished runs and inputs and none running or queued, analyzed: statistics under which the indexes on
        // runs.status and inputs.status look as cheap as the keys for a row that is running or queued.
        await client.query(
          `INSERT INTO runs (id, session_key, agent_id, status, owner, epoch, model, started_at, input_tokens, output_tokens, model_calls, steps, preamble_chars, prompt_chars)
           SELECT 'old-' || g, $1, 'w', 'succeeded', 'gw', 1, 'm', 1000, 0, 0, 0, 0, 0, 0 FROM generate_series(1, 2000) g`,
          [S],
        );
        await client.query(
          `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, run_id, created_at, updated_at)
           SELECT 'old-in-' || g, $1, 'old-key-' || g, 'followup', 'consumed', 1, 'x', '{"kind":"user"}', 'old-' || g, 1000, 1000 FROM generate_series(1, 2000) g`,
          [S],
        );
        await client.query('ANALYZE runs, inputs');
        const scans = async () => {
          const { rows } = await client.query<{ indexrelname: string; idx_scan: string }>(
            `SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE schemaname = $1 AND indexrelname IN ('runs_pkey', 'runs_status', 'inputs_status')`,
            [schema],
          );
          return Object.fromEntries(rows.map((row) => [row.indexrelname, Number(row.idx_scan)]));
        };
        const before = await scans();
        const runs = 12;
        for (let n = 0; n < runs; n += 1) {
          const { input: queued } = await store.inputs.enqueue(input(S), 2000);
          const runId = newRunId();
          const started = await store.runs.start(
            { id: runId, sessionKey: S, agentId: 'w', owner: 'gw', leaseTtlMs: 60_000, model: 'm', inputIds: [queued.id] },
            2000,
          );
          if (typeof started === 'string') throw new Error(`the run did not start: ${started}`);
          await store.runs.commit(succeededCommit({ runId, sessionKey: S, epoch: started.epoch, consumedInputIds: [queued.id] }), 3000);
        }
        // Each commit looks its run up once.
        const after = await waitUntil(
          'the commits reach the index statistics',
          async () => {
            // A statement on the store's one connection: a backend sends its counts at a transaction's end, once a
            // second has passed since it last did (an idle one only every several seconds).
            await store.statistics.serverLeavesItToUs();
            const now = await scans();
            return now.runs_pkey! + now.runs_status! - before.runs_pkey! - before.runs_status! >= runs ? now : undefined;
          },
          20_000,
          200,
        );
        // The commit's fence found each run by its key, never through the index on every run's status.
        expect(after.runs_status! - before.runs_status!).toBe(0);
        expect(after.runs_pkey! - before.runs_pkey!).toBe(runs);
        // The claims found their inputs by id: what is left on inputs.status is at most the commit's look at whether
        // the session has more queued (docs/deploy.md), one a run; before 0022 the claim added one of its own.
        expect(after.inputs_status! - before.inputs_status!).toBeLessThanOrEqual(runs);
      } finally {
        await client.end();
        await store.close();
      }
    });

    it("a run's start, commit and input keep one plan per connection: none is planned again on every call", async () => {
      const store = await open('off');
      const schema = schemas.at(-1)!;
      const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await client.connect();
      // Each statement's plan, as auto_explain hands it to this connection.
      const plans: string[] = [];
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      try {
        const S = 'agent:w:main';
        await store.sessions.ensure({ key: S, agentId: 'w' }, 1000);
        // A table of 2,000 inputs, analyzed: for one id, a plan made with the call's values finds it by index, and
        // looks cheaper than the general plan made for an array of unknown length.
        await client.query(
          `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, created_at, updated_at)
           SELECT 'old-in-' || g, $1, 'old-key-' || g, 'followup', 'consumed', 1, 'x', '{"kind":"user"}', 1000, 1000 FROM generate_series(1, 2000) g`,
          [S],
        );
        await client.query('ANALYZE inputs');
        await client.query(
          "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice",
        );
        // The plan cache tries five plans with the call's values before it compares them with the general one.
        for (let n = 0; n < 8; n += 1) {
          plans.length = 0;
          const { id, idempotencyKey } = input(S);
          const runId = newRunId();
          await client.query(`SELECT sb_enqueue_opening($1, 'w', NULL, false, $2, $3, 'followup', 'x', '{}', 2000, 64)`, [
            S,
            id,
            idempotencyKey,
          ]);
          const { rows } = await client.query<{ answer: { epoch: number } }>(
            `SELECT sb_start_run_history($1, 'gw', 60000, $2, 'w', 'm', 2000, ARRAY[$3], '{}', 40) AS answer`,
            [S, runId, id],
          );
          await client.query(`SELECT sb_commit_run_queued($1, $2, $3, 3000, $4::json, '[]', ARRAY[$5], '[]', '[]')`, [
            runId,
            S,
            rows[0]!.answer.epoch,
            JSON.stringify({
              status: 'succeeded',
              inputTokens: 1,
              outputTokens: 1,
              modelCalls: 1,
              steps: 1,
              preambleChars: 0,
              promptChars: 0,
              requestBytes: 0,
              requestSystemBytes: 0,
              requestToolBytes: 0,
              cachedInputTokens: 0,
            }),
            id,
          ]);
        }
        // The last call's statements were planned once for all calls: their plans take the values as parameters ($n),
        // and none holds this call's input, run or session.
        const claim = plans.find((plan) => plan.includes("SET status = 'claimed'"));
        expect(claim).toMatch(/= ANY \(\$\d+\)/);
        const last = plans.filter((plan) => !/^Query Text: SELECT sb_/m.test(plan));
        expect(last.length).toBeGreaterThan(10);
        expect(last.filter((plan) => /old-in-|in-\d+-\d+|run-\d+-\d+|agent:w:main/.test(plan.split('\n').slice(1).join('\n')))).toEqual([]);
      } finally {
        await client.end();
        await store.close();
      }
    });
  });
} else {
  describe('PostgreSQL: table statistics when autovacuum is off', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
