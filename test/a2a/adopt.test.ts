/**
 * A task the SDK saved before its message became an input: the gateway died between the two (a non-blocking
 * SendMessage answers the client once the task is saved). At the next start the task watch takes the message up, as a
 * new message is taken (the same checks, one input), and the task ends from that input's run. A follow-up to a task
 * that waits for input becomes an input before the SDK saves it into the task's history, so it never waits there.
 */
import { Task, TaskState, taskStateToJSON, type Message } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/ports/index.js';
import { serveA2AFront, userMessage, type A2AFront } from '../helpers/a2a-front.js';
import { waitUntil } from '../helpers/wait.js';

const CONFIG = `{
  a2a: { server: { enabled: true, requireAuth: false } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [
    { match: "need details", steps: [{ toolCalls: [{ tool: "a2a_request_input", args: { question: "Which order?" } }] }, { text: "asked" }] },
    { reply: "heard: {{input}}" },
  ] } } } } },
}`;
const COMPLETED = taskStateToJSON(TaskState.TASK_STATE_COMPLETED);

let served: A2AFront | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/** The task as the SDK saved it for `message`, submitted, by a gateway that is gone; `owner` the peer that sent it. */
async function savedBeforeItsInput(store: Store, id: string, message: Message, owner = 'anonymous'): Promise<void> {
  const task: Task = {
    id,
    contextId: message.contextId,
    status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [message],
    metadata: {},
  };
  await store.a2aTasks.save(
    {
      id,
      agentId: 'echo',
      contextId: message.contextId,
      owner,
      state: taskStateToJSON(TaskState.TASK_STATE_SUBMITTED),
      task: Task.toJSON(task),
      firstMessageId: message.messageId,
      executor: 'gw-gone',
    },
    Date.now(),
  );
}

describe('A2A: a task saved before its message became an input', () => {
  it('is taken up at the next start: one input, and the task completes with its answer', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await savedBeforeItsInput(store, 'task-adopted', userMessage('taken up', { contextId: 'ctx-adopted' }));
    served = await serveA2AFront(CONFIG, undefined, store);
    await waitUntil('the task completes', async () => (await store.a2aTasks.get('task-adopted'))?.state === COMPLETED);
    const inputs = await store.inputs.list({ sessionKey: 'agent:echo:a2a:anonymous:ctx-adopted' });
    expect(inputs.map((input) => [input.text, input.status])).toEqual([['taken up', 'consumed']]);
    const task = Task.fromJSON((await store.a2aTasks.get('task-adopted'))!.task);
    expect(task.artifacts.map((artifact) => [artifact.artifactId, artifact.parts[0]?.content])).toEqual([
      [`answer-${inputs[0]!.id}`, { $case: 'text', value: 'heard: taken up' }],
    ]);
    expect((await store.a2aTasks.get('task-adopted'))?.inputId).toBe(inputs[0]!.id);
  });

  it('is checked as a new message is: in a context another peer opened, it is rejected and no input is made', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await savedBeforeItsInput(store, 'task-theirs', userMessage('first', { contextId: 'ctx-shared' }), 'partner');
    const { id, agentId, contextId, owner, task } = (await store.a2aTasks.get('task-theirs'))!;
    await store.a2aTasks.save({ id, agentId, contextId, owner, task, state: COMPLETED }, Date.now());
    await savedBeforeItsInput(store, 'task-mine', userMessage('intruding', { contextId: 'ctx-shared' }));
    served = await serveA2AFront(CONFIG, undefined, store);
    await waitUntil(
      'the task is rejected',
      async () => (await store.a2aTasks.get('task-mine'))?.state === taskStateToJSON(TaskState.TASK_STATE_REJECTED),
    );
    const status = Task.fromJSON((await store.a2aTasks.get('task-mine'))!.task).status?.message?.parts[0]?.content;
    expect(status).toEqual({
      $case: 'text',
      value: 'context "ctx-shared" belongs to another peer; send without a contextId to start a context of your own',
    });
    expect(await store.inputs.list({ sessionKey: 'agent:echo:a2a:anonymous:ctx-shared' })).toEqual([]);
  });

  it('one the gateway cannot take is failed with the reason, and the others are still taken up', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await savedBeforeItsInput(store, 'task-fine', userMessage('fine', { contextId: 'ctx-fine' }));
    // Saved last, so the watch (newest first) meets it first.
    await savedBeforeItsInput(store, 'task-blank', userMessage('   ', { contextId: 'ctx-blank' }));
    served = await serveA2AFront(CONFIG, undefined, store);
    await waitUntil('the good task completes', async () => (await store.a2aTasks.get('task-fine'))?.state === COMPLETED);
    const blank = (await store.a2aTasks.get('task-blank'))!;
    expect(blank.state).toBe(taskStateToJSON(TaskState.TASK_STATE_FAILED));
    expect(Task.fromJSON(blank.task).status?.message?.parts[0]?.content).toEqual({
      $case: 'text',
      value: 'the gateway did not accept the message: message is empty; send some text',
    });
  });

  it("a follow-up's message is an input before the SDK saves the task with it in its history", async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    const followUp = userMessage('order 42');
    /** At each save of the task with the follow-up in its history: whether its input existed already. */
    const inputBeforeSave: boolean[] = [];
    served = await serveA2AFront(
      CONFIG,
      (tasks) =>
        new Proxy(tasks, {
          get: (target, name) => {
            if (name !== 'save') return (Reflect.get(target, name) as (...args: unknown[]) => unknown).bind(target);
            return async (...args: Parameters<typeof tasks.save>) => {
              const [task] = args;
              if (JSON.stringify(task.task).includes(followUp.messageId)) {
                const inputs = await store.inputs.list({ sessionKey: `agent:echo:a2a:anonymous:${task.contextId}` });
                inputBeforeSave.push(inputs.some((input) => input.text === 'order 42'));
              }
              return target.save(...args);
            };
          },
        }),
      store,
    );
    const a2a = await new ClientFactory({ transports: [new JsonRpcTransportFactory({})] }).createFromUrl(`${served.url}/a2a/echo/`);
    const asked = (await a2a.sendMessage({ message: userMessage('I need details') } as never)) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answered = (await a2a.sendMessage({ message: { ...followUp, taskId: asked.id, contextId: asked.contextId } } as never)) as Task;
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(inputBeforeSave.length).toBeGreaterThan(0);
    expect(inputBeforeSave).toEqual(inputBeforeSave.map(() => true));
    // One input for the follow-up, however many times it was accepted on its way.
    const inputs = await store.inputs.list({ sessionKey: `agent:echo:a2a:anonymous:${asked.contextId}` });
    expect(inputs.map((input) => input.text)).toEqual(['I need details', 'order 42']);
  });
});
