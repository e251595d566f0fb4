/**
 * With several gateways on PostgreSQL, the A2A server's stall rule (a2a.server.taskStallSeconds) is on the database's
 * clock: a gateway whose machine clock is an hour ahead does not fail a task another gateway touched a moment ago.
 */
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type RunningGateway, serveGateway } from '../../src/app.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const schema = `sb_stall_clock_${process.pid}`;
const HOUR = 3_600_000;

if (process.env.CI || (await postgresReachable())) {
  describe('the A2A stall rule on PostgreSQL', () => {
    let running: RunningGateway | undefined;
    let other: PostgresStore | undefined;
    afterAll(async () => {
      await running?.stop();
      await other?.close();
      vi.restoreAllMocks();
      await dropSchemas(schema);
    });

    it("a gateway whose clock is an hour ahead fails only the task that stalled by the database's clock", async () => {
      // This gateway's machine clock is an hour ahead of the database's (and of the other gateway's).
      const realNow = Date.now.bind(Date);
      vi.spyOn(Date, 'now').mockImplementation(() => realNow() + HOUR);
      const { configPath } = tempConfig(`{
        store: { driver: "postgres", schema: "${schema}" },
        watchdog: { intervalMs: 100 },
        a2a: { server: { enabled: true, taskStallSeconds: 600, peers: [{ id: "peer", token: "peer-token-0123456789abcdef" }] } },
        agents: { list: [{ id: "worker", model: "scripted/w" }] },
        models: { providers: { scripted: { type: "scripted", models: { w: { rules: [{ reply: "ok" }] } } } } },
      }`);
      running = await serveGateway({ configPath, port: 0, storeUrl: POSTGRES_URL, logLevel: 'silent' });
      // The other gateway writes two tasks it works on, by the database's clock: one touched now, one 20 minutes ago.
      other = await PostgresStore.open({ connectionString: POSTGRES_URL, schema });
      // Its clock is the database's, whatever the machine's says (DatabaseClock measures the difference).
      const dbNow = other.clock.now();
      expect(Math.abs(dbNow - realNow())).toBeLessThan(60_000);
      const working = taskStateToJSON(TaskState.TASK_STATE_WORKING);
      const task = (id: string) => ({
        id,
        agentId: 'worker',
        contextId: `ctx-${id}`,
        owner: 'peer',
        state: working,
        task: Task.toJSON({
          id,
          contextId: `ctx-${id}`,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date(dbNow).toISOString() },
          artifacts: [],
          history: [],
          metadata: {},
        }),
      });
      await other.a2aTasks.save(task('stalled'), dbNow - 20 * 60_000);
      await other.a2aTasks.save(task('fresh'), dbNow);
      await waitUntil(
        'the task that stalled is failed',
        async () => (await other!.a2aTasks.get('stalled'))?.state === taskStateToJSON(TaskState.TASK_STATE_FAILED),
        30_000,
      );
      expect((await other.a2aTasks.get('fresh'))?.state).toBe(working);
    });
  });
} else {
  describe('the A2A stall rule on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
