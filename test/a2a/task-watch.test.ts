/**
 * The task watch finishes tasks that have no executor here (after a restart). While every unfinished task
 * has its executor, a run's end costs it nothing; while some have none, each run's end looks at them again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { DefaultExecutionEventBusManager } from '@a2a-js/sdk/server';
import { A2ATaskWatch } from '../../src/a2a/task-watch.js';
import type { SwitchboardConfig } from '../../src/config/schema.js';
import type { GatewayApi } from '../../src/gateway/gateway-api.js';
import type { WaitResult } from '../../src/gateway/gateway.js';
import type { LiveListener } from '../../src/gateway/event-bus.js';
import type { RunRecord } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { waitUntil } from '../helpers/wait.js';

const WORKING = taskStateToJSON(TaskState.TASK_STATE_WORKING);
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function setup(active: Set<string>) {
  const store = await SqliteStore.open({ path: ':memory:' });
  let lists = 0;
  const tasks = new Proxy(store.a2aTasks, {
    get: (target, name) => {
      const value = Reflect.get(target, name) as unknown;
      if (name === 'list') lists += 1;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const listeners: LiveListener[] = [];
  const outcomes = new Map<string, WaitResult>();
  const gateway = {
    subscribe: (listener: LiveListener) => (listeners.push(listener), () => void listeners.splice(listeners.indexOf(listener), 1)),
    inputOutcome: async (inputId: string) => outcomes.get(inputId),
    history: async () => [],
    cancelInput: async () => undefined,
  } as unknown as GatewayApi;
  const config = { a2a: { server: { taskStallSeconds: 600, peers: [] } } } as unknown as SwitchboardConfig;
  const agents = new Map([
    ['echo', { isActive: (id: string) => active.has(id), buses: new DefaultExecutionEventBusManager(), push: { send: async () => {} } }],
  ]);
  const watch = new A2ATaskWatch(gateway, tasks, config, agents, { now: () => Date.now() }, (error) => {
    throw error;
  });
  close = async () => {
    await watch.stop();
    await store.close();
  };
  const working = async (id: string, inputId: string) => {
    const task: Task = {
      id,
      contextId: `ctx-${id}`,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [],
      metadata: {},
    };
    await store.a2aTasks.save(
      { id, agentId: 'echo', contextId: task.contextId, owner: 'anonymous', state: WORKING, task: Task.toJSON(task) },
      Date.now(),
    );
    await store.a2aTasks.attachInput(
      { id, agentId: 'echo', contextId: task.contextId, owner: 'anonymous' },
      `agent:echo:a2a:anonymous:${task.contextId}`,
      inputId,
      Date.now(),
    );
  };
  const runEnded = async () => {
    for (const listener of [...listeners])
      listener({
        type: 'journal',
        event: { seq: 0, type: 'run.completed', sessionKey: null, runId: null, payload: {}, createdAt: 0 },
      } as never);
    await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return { store, watch, working, runEnded, outcomes, lists: () => lists };
}

const succeeded = (inputId: string): WaitResult =>
  ({ status: 'completed', run: { id: `run-${inputId}`, status: 'succeeded' } as RunRecord, reply: `answer to ${inputId}` }) as WaitResult;

describe('A2A task watch', () => {
  it("a run's end starts no pass while every unfinished task has its executor here", async () => {
    const { watch, working, runEnded, lists } = await setup(new Set(['t1']));
    await working('t1', 'in-1');
    await watch.start(60_000);
    expect(lists()).toBe(1);
    for (let i = 0; i < 3; i += 1) await runEnded();
    expect(lists()).toBe(1);
  });

  it("a task with no executor here is finished when its input's run ends; then runs' ends cost nothing again", async () => {
    const { store, watch, working, runEnded, outcomes, lists } = await setup(new Set());
    await working('t2', 'in-2');
    await watch.start(60_000);
    expect((await store.a2aTasks.get('t2'))?.state).toBe(WORKING);
    outcomes.set('in-2', succeeded('in-2'));
    await runEnded();
    await waitUntil(
      'the task watch finished t2',
      async () => (await store.a2aTasks.get('t2'))?.state === taskStateToJSON(TaskState.TASK_STATE_COMPLETED),
    );
    // One more pass finds nothing left to finish; after it, a run's end starts none (a pass lists at once when kicked).
    await waitUntil("a run's end starts no pass", async () => {
      const before = lists();
      await runEnded();
      return lists() === before;
    });
  });
});
