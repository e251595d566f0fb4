/**
 * A task's push notifications are written in the task's order on PostgreSQL: the SDK sends a task's events without
 * waiting for the one before (each on a connection of its own), and a gateway paused past its task may send a late
 * `working` after another finished the task. Rows are read back in the order the outbox delivers them.
 */
import { TaskPushNotificationConfig, TaskState, taskStateToJSON, type StreamResponse } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { GatewayPushStore, OutboxPushSender, PUSH_KIND } from '../../src/a2a/push.js';
import { parseConfigText } from '../../src/config/load.js';
import { ANONYMOUS_PEER } from '../../src/config/schema.js';
import type { GatewayApi } from '../../src/ports/gateway.js';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { POSTGRES_URL, postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const { config } = parseConfigText(
  `{ agents: { list: [{ id: "worker", model: "scripted/w" }] }, models: { providers: { scripted: { type: "scripted", models: { w: { rules: [{ reply: "ok" }] } } } } }, a2a: { push: { allowPrivateTargets: true } } }`,
  '/test.json5',
  {},
);

/** A push sender of one gateway on `store`: the door is a fake that only kicks (or, for older builds, writes) the outbox. */
function senderOn(store: PostgresStore): OutboxPushSender {
  const gateway = {
    kickDeliveries: () => {},
    enqueueDelivery: async (row: Parameters<GatewayApi['enqueueDelivery']>[0]) => void (await store.outbox.add(row, store.clock.now())),
  } as unknown as GatewayApi;
  return new OutboxPushSender(gateway, new GatewayPushStore(store.a2aTasks, config, store.clock));
}

const status = (taskId: string, state: TaskState): StreamResponse => ({
  payload: {
    $case: 'statusUpdate',
    value: { taskId, contextId: 'ctx', status: { state, message: undefined, timestamp: new Date().toISOString() }, metadata: {} },
  },
});

/** The states of a task's push rows, in the order the outbox lists them for delivery. */
async function pushedStates(store: PostgresStore, taskId: string): Promise<string[]> {
  const rows = await store.outbox.listDue(Number.MAX_SAFE_INTEGER, 10_000);
  return rows
    .filter((row) => row.kind === PUSH_KIND && (row.payload as { taskId: string }).taskId === taskId)
    .map(
      (row) =>
        (JSON.parse((row.payload as { body: string }).body) as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state,
    );
}

if (process.env.CI || (await postgresReachable())) {
  describe('A2A push order on PostgreSQL', () => {
    let a!: PostgresStore;
    let b!: PostgresStore;
    twoStoresOnOneSchema('sb_push_order', (first, second) => {
      a = first;
      b = second;
    });
    const context = new ServerCallContext();

    async function taskWithConfig(id: string): Promise<void> {
      const working = taskStateToJSON(TaskState.TASK_STATE_WORKING);
      await a.a2aTasks.save(
        { id, agentId: 'worker', contextId: 'ctx', owner: ANONYMOUS_PEER, state: working, task: { id } },
        a.clock.now(),
      );
      await a.a2aTasks.savePushConfig(
        {
          taskId: id,
          configId: 'hook',
          owner: ANONYMOUS_PEER,
          config: TaskPushNotificationConfig.toJSON({
            tenant: '',
            id: 'hook',
            taskId: id,
            url: 'http://127.0.0.1:9/hook',
            token: 't',
            authentication: undefined,
          }),
          wireVersion: '1.0',
        },
        a.clock.now(),
      );
    }

    it("a task's events sent without waiting for each other (as the SDK sends them) are written in the order they were sent", async () => {
      const sender = senderOn(a);
      for (let i = 0; i < 40; i += 1) {
        const id = `order-${i}`;
        await taskWithConfig(id);
        // The SDK's sends are fire-and-forget: the second starts while the first still reads the task's configs.
        await Promise.all([
          sender.send(status(id, TaskState.TASK_STATE_WORKING), context),
          sender.send(status(id, TaskState.TASK_STATE_COMPLETED), context),
        ]);
        expect(await pushedStates(a, id), `task ${id}`).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
      }
    });

    it('a late working from another gateway after the task was pushed as completed is not written; a final state is', async () => {
      const [first, paused] = [senderOn(a), senderOn(b)];
      for (let i = 0; i < 20; i += 1) {
        const id = `late-${i}`;
        await taskWithConfig(id);
        // Two gateways, each on its own connections: the one that finished the task, and one that was paused in it.
        await Promise.all([
          first.send(status(id, TaskState.TASK_STATE_COMPLETED), context),
          paused.send(status(id, TaskState.TASK_STATE_WORKING), context),
        ]);
        const states = await pushedStates(a, id);
        expect(states.at(-1), `task ${id}: ${states.join(', ')}`).toBe('TASK_STATE_COMPLETED');
        // Whatever came first, nothing of the task is pushed after its final state: not a working, not another final state.
        await paused.send(status(id, TaskState.TASK_STATE_WORKING), context);
        await paused.send(status(id, TaskState.TASK_STATE_FAILED), context);
        expect((await pushedStates(a, id)).slice(states.length)).toEqual([]);
      }
    });
  });
} else {
  describe('A2A push order on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
