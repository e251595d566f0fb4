/**
 * How PostgreSQL plans the store's run functions (store/postgres/migrations.ts and migrations-runs.ts): a run's
 * start and commit find their rows by key whatever the statistics say (0022); each connection keeps one plan per
 * statement, made once rather than on every call, and it takes the index even when it was made while the table was
 * small (0023); a message runs no statement that reads again what a write handed back (0024).
 * Plans are read from auto_explain, which PostgreSQL ships, handed to the test's own connection as notices.
 */
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { newInput as input, newRunId, succeededCommit } from '../helpers/inputs.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const S = 'agent:w:main';

/** A run's outcome as the store hands it to sb_commit_run_queued (store/runs/run-store.ts outcomeValues). */
const OUTCOME = JSON.stringify({
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
});

/** One message as a gateway's store makes it, on `client`: the input, the run's start that claims it, and its commit. */
async function message(client: pg.Client): Promise<void> {
  const { id, idempotencyKey } = input(S);
  const runId = newRunId();
  await client.query(`SELECT sb_enqueue_opening($1, 'w', NULL, false, $2, $3, 'followup', 'x', '{}', 2000, 64)`, [S, id, idempotencyKey]);
  const { rows } = await client.query<{ answer: { status: string; epoch: number } }>(
    `SELECT sb_start_run_history($1, 'gw', 60000, $2, 'w', 'm', 2000, ARRAY[$3], '{}', 40) AS answer`,
    [S, runId, id],
  );
  expect(rows[0]!.answer.status).toBe('started');
  await client.query(`SELECT sb_commit_run_queued($1, $2, $3, 3000, $4::json, '[]', ARRAY[$5], '[]', '[]')`, [
    runId,
    S,
    rows[0]!.answer.epoch,
    OUTCOME,
    id,
  ]);
}

/** 2,000 consumed inputs of the session, as a session with a past has. */
const pastInputs = (client: pg.Client) =>
  client.query(
    `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, created_at, updated_at)
     SELECT 'old-in-' || g, $1, 'old-key-' || g, 'followup', 'consumed', 1, 'x', '{"kind":"user"}', 1000, 1000 FROM generate_series(1, 2000) g`,
    [S],
  );

/** Starts handing every statement's plan on `client` to `plans`, the statements inside functions too. */
async function explainInto(client: pg.Client, plans: string[]): Promise<void> {
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  await client.query(
    "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice",
  );
}

/** The plans of the statements inside the functions (not the calls themselves). */
const inner = (plans: string[]) => plans.filter((plan) => !/^Query Text: SELECT sb_/m.test(plan));

if (process.env.CI || (await postgresReachable())) {
  describe('PostgreSQL: how the run functions are planned', () => {
    const schemas: string[] = [];
    const opened: { store: PostgresStore; client: pg.Client }[] = [];
    /** A store on one connection, whose plans are kept from call to call as a gateway's connections keep them. */
    const open = async () => {
      const schema = `sb_plans_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      const store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 1, analyze: 'off' });
      const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await client.connect();
      await store.sessions.ensure({ key: S, agentId: 'w' }, 1000);
      opened.push({ store, client });
      return { store, schema, client };
    };
    afterEach(async () => {
      for (const { store, client } of opened.splice(0)) {
        await client.end();
        await store.close();
      }
    });
    afterAll(async () => {
      await dropSchemas(...schemas);
    });

    it("a run's start and commit find their rows by key, whatever the statistics say of how many are running or queued", async () => {
      // One connection, so that its functions' plans are kept from call to call as a gateway's are.
      const { store, schema, client } = await open();
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
    });

    it("a run's start, commit and input are planned once per connection, not again on every call", async () => {
      const { client } = await open();
      const plans: string[] = [];
      // Analyzed with 2,000 inputs, a plan for the call's one id finds it by index, and looks cheaper than the
      // general plan for an array of unknown length.
      await pastInputs(client);
      await client.query('ANALYZE inputs');
      await explainInto(client, plans);
      // The plan cache tries five plans made with the call's values before it compares them with the general one.
      for (let n = 0; n < 8; n += 1) {
        plans.length = 0;
        await message(client);
      }
      // The last message's statements ran on plans made for any values: they take them as parameters ($n), and none
      // holds this message's input, run or session.
      const claim = plans.find((plan) => plan.includes("SET status = 'claimed'"));
      expect(claim).toMatch(/= ANY \(\$\d+\)/);
      expect(inner(plans).length).toBeGreaterThan(10);
      const withValues = inner(plans).filter((plan) => /in-\d+-\d+|run-\d+-\d+|agent:w:main/.test(plan.split('\n').slice(2).join('\n')));
      expect(withValues).toEqual([]);
    });

    it('plans made while the tables were empty still find rows by key once the tables have grown, with no ANALYZE between', async () => {
      const { client } = await open();
      const plans: string[] = [];
      await explainInto(client, plans);
      for (let n = 0; n < 8; n += 1) await message(client);
      await pastInputs(client);
      plans.length = 0;
      await message(client);
      expect(inner(plans).length).toBeGreaterThan(10);
      expect(inner(plans).filter((plan) => plan.includes('Seq Scan'))).toEqual([]);
    });

    it('a message is 14 statements inside the functions: nothing read again that a write handed back', async () => {
      const { client } = await open();
      const plans: string[] = [];
      await message(client);
      await explainInto(client, plans);
      await message(client);
      // The accept: the session, the input, the queue (3). The start: the lease, the claim that hands back its
      // inputs, the run, the session's update that hands back its row, the event, and the answer with the history
      // and whether the session reached out (6). The commit: the lease, the run, the inputs, the session, and the
      // answer with whether more are queued (5); this run has no transcript, outbox rows or events to insert.
      // Before migration 0024 it was 19.
      expect(inner(plans).length).toBe(14);
    });
  });
} else {
  describe('PostgreSQL: how the run functions are planned', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
