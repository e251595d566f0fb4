/**
 * The task watch finishes tasks that have no executor here (after a restart). While every unfinished task
 * has its executor, a run's end costs it nothing; while some have none, each run's end looks at them again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { DefaultExecutionEventBusManager, ServerCallContext } from '@a2a-js/sdk/server';
import { PeerUser } from '../../src/a2a/peers.js';
import { A2ATaskWatch } from '../../src/a2a/task-watch.js';
import type { SwitchboardConfig } from '../../src/config/schema.js';
import type { GatewayApi } from '../../src/ports/gateway.js';
import type { WaitResult } from '../../src/ports/gateway.js';
import type { LiveListener } from '../../src/ports/gateway.js';
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
    gatewayId: 'gw-here',
    // Another gateway is alive; 'gw-gone' is not.
    gateways: async () => [{ id: 'gw-other', alive: true }],
    subscribe: (listener: LiveListener) => (listeners.push(listener), () => void listeners.splice(listeners.indexOf(listener), 1)),
    inputOutcome: async (inputId: string) => outcomes.get(inputId),
    runToolCalls: async () => [],
    cancelInput: async () => undefined,
  } as unknown as GatewayApi;
  const config = { a2a: { server: { taskStallSeconds: 600, peers: [] } } } as unknown as SwitchboardConfig;
  const agents = new Map([
    [
      'echo',
      {
        isActive: (id: string) => active.has(id),
        adopt: async () => undefined,
        buses: new DefaultExecutionEventBusManager(),
        push: { send: async () => {} },
      },
    ],
  ]);
  const watch = new A2ATaskWatch(gateway, tasks, config, agents, { now: () => Date.now() }, (error) => {
    throw error;
  });
  close = async () => {
    await watch.stop();
    await store.close();
  };
  const working = async (id: string, inputId: string, executor = 'gw-gone') => {
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
      executor,
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
  return { store, watch, working, runEnded, outcomes, agents, lists: () => lists };
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

  it("a task another live gateway's executor works on is left to it; a subscriber here gets the end that gateway saved", async () => {
    const { store, watch, working, runEnded, outcomes, agents } = await setup(new Set());
    await working('t3', 'in-3', 'gw-other');
    await watch.start(60_000);
    // A subscriber here (a resubscribe that reached this gateway) waits on the task's bus.
    const seen: string[] = [];
    const bus = agents.get('echo')!.buses.getByTaskId('t3', new ServerCallContext({ user: new PeerUser(undefined) }))!;
    bus.on('event', (event) => seen.push(event.kind === 'statusUpdate' ? taskStateToJSON(event.data.status!.state) : event.kind));
    bus.on('finished', () => seen.push('finished'));
    // The run ends: the other gateway's executor finishes the task, not this watch.
    outcomes.set('in-3', succeeded('in-3'));
    await runEnded();
    expect((await store.a2aTasks.get('t3'))?.state).toBe(WORKING);
    const done: Task = {
      id: 't3',
      contextId: 'ctx-t3',
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [],
      metadata: {},
    };
    await store.a2aTasks.save(
      { id: 't3', agentId: 'echo', contextId: 'ctx-t3', owner: 'anonymous', state: 'TASK_STATE_COMPLETED', task: Task.toJSON(done) },
      Date.now(),
    );
    await runEnded();
    await waitUntil('the subscriber here got the saved end', () => seen.includes('TASK_STATE_COMPLETED'), 2000);
    expect(seen).toEqual(['TASK_STATE_COMPLETED', 'finished']);
  });
});
