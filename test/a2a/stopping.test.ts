/**
 * A message that reaches a gateway that is stopping is not refused for it: the task a non-blocking call saved is left
 * `submitted` for the next start (the task watch adopts it), and a blocking call, which saved nothing, is told to send
 * again. Failing the task instead would make a resend of the same first message answer that failed task.
 */
import { Role, type Task, TaskState, type Message } from '@a2a-js/sdk';
import { ServerCallContext, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayAgentExecutor, textPart } from '../../src/a2a/executor.js';
import { GatewayTaskStore } from '../../src/a2a/task-store.js';
import { SwitchboardError } from '../../src/core/errors.js';
import type { GatewayApi } from '../../src/ports/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const message: Message = {
  messageId: 'm-stop',
  contextId: 'ctx-stop',
  taskId: 't-stop',
  role: Role.ROLE_USER,
  parts: [textPart('hello')],
  metadata: {},
  extensions: [],
  referenceTaskIds: [],
};

/** A gateway that is stopping: it takes no input, as the gateway's intake answers then. */
const stopping = {
  gatewayId: 'gw-test',
  stopping: true,
  watchDeltas: () => () => {},
  subscribe: () => () => {},
  accept: async () => {
    throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send again once it has restarted');
  },
} as unknown as GatewayApi;

/** A bus that records what is published on it, and whether it was finished. */
function recordingBus() {
  const events: string[] = [];
  const bus = {
    publish: (event: { kind: string; data: { status?: { state: TaskState } } }) =>
      events.push(event.kind === 'statusUpdate' ? TaskState[event.data.status!.state] : event.kind),
    finished: () => events.push('finished'),
  } as unknown as ExecutionEventBus;
  return { bus, events };
}

describe('A2A: a message at a gateway that is stopping', () => {
  it('a non-blocking task stays as the SDK saved it (no end published), for the next start to adopt', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const executor = new GatewayAgentExecutor(stopping, 'echo', store.a2aTasks, { now: () => Date.now() }, 60_000);
    const { bus, events } = recordingBus();
    const context = { taskId: 't-stop', contextId: 'ctx-stop', userMessage: message, context: new ServerCallContext(), task: undefined };
    await executor.execute(context as unknown as RequestContext, bus);
    // Only the task the SDK saves `submitted`: no failed state, and the bus is not finished.
    expect(events).toEqual(['task']);
    expect(executor.handles('t-stop')).toBe(false);
  });

  it('a blocking call saves no task and answers an error that says to send again', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const executor = new GatewayAgentExecutor(stopping, 'echo', store.a2aTasks, { now: () => Date.now() }, 60_000);
    const { bus } = recordingBus();
    const call = { taskId: 't-stop', contextId: 'ctx-stop', owner: 'anonymous', checkContext: false };
    await expect(executor.answerBlocking(message, call, bus)).rejects.toThrow(
      'the gateway is shutting down; send the message again once it has restarted',
    );
    expect(await store.a2aTasks.get('t-stop')).toBeUndefined();
  });
});

describe('A2A: what the task store records on a save', () => {
  it("names this gateway as the task's executor, so another live gateway leaves the task to it", async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const tasks = new GatewayTaskStore(store.a2aTasks, 'echo', { now: () => Date.now() }, 'gw-here');
    const task: Task = { id: 't-saved', contextId: 'ctx-saved', status: undefined, artifacts: [], history: [message], metadata: {} };
    await tasks.save(task, new ServerCallContext());
    expect((await store.a2aTasks.get('t-saved'))?.executor).toBe('gw-here');
  });

  it('a follow-up the gateway cannot take as an input fails the save, and nothing is saved', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const tasks = new GatewayTaskStore(store.a2aTasks, 'echo', { now: () => Date.now() }, 'gw-here', async () => {
      throw new Error('the gateway is shutting down; send again once it has restarted');
    });
    const task: Task = { id: 't-follow', contextId: 'ctx-follow', status: undefined, artifacts: [], history: [message], metadata: {} };
    await expect(tasks.save(task, new ServerCallContext())).rejects.toThrow('the gateway is shutting down');
    expect(await store.a2aTasks.get('t-follow')).toBeUndefined();
  });
});
