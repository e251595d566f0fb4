/**
 * A blocking SendMessage of a new task goes past the SDK's ResultManager: its task is written when it starts working
 * (with its input) and when it ends, and nothing else. It keeps what the SDK's path gives: a cancel from another call
 * stops its run, a client that subscribes while it runs sees it end, and a first message sent again after a crash
 * reaches the input the first copy became.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, expect, it } from 'vitest';
import { firstMessageId } from '../../src/a2a/request-handler.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { A2ATaskStore } from '../../src/ports/index.js';
import { serveA2AFront, userMessage, type A2AFront } from '../helpers/a2a-front.js';
import { waitUntil } from '../helpers/wait.js';
import { a2aSessionKey } from '../../src/core/session-key.js';

const TOKEN = 'partner-token-0123456789';
const CONFIG = `{
  a2a: { server: { enabled: true, peers: [{ id: "partner", token: "${TOKEN}" }] }, push: { allowPrivateTargets: true } },
  agents: { list: [{ id: "talk", model: "scripted/talk" }, { id: "slow", model: "scripted/slow" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    talk: { rules: [{ reply: "heard: {{input}}" }] },
    slow: { rules: [{ delayMs: 1500, reply: "late" }] },
  } } } },
}`;

let served: A2AFront | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
  gateway = undefined;
});

/** The gateway's A2A front on 127.0.0.1, over `tasks` (the store's, or a spy on it). */
async function serve(tasks?: (store: A2ATaskStore) => A2ATaskStore): Promise<string> {
  served = await serveA2AFront(CONFIG, tasks);
  gateway = served.gateway;
  return served.url;
}

function client(url: string, agentId: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${TOKEN}` } });
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(`${url}/a2a/${agentId}/`);
}

const send = (a2a: Client, sent: Message) =>
  a2a.sendMessage({ tenant: '', message: sent, configuration: undefined, metadata: {} }) as Promise<Task>;

it('writes the task when it starts working, with its input, and when it ends: two saves, each with its replay log entries', async () => {
  const calls: string[] = [];
  const url = await serve(
    (store) =>
      new Proxy(store, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (['save', 'attachInput', 'appendEvent'].includes(String(name))) calls.push(String(name));
            return value.apply(target, args);
          };
        },
      }),
  );
  const task = await send(await client(url, 'talk'), userMessage('hello'));
  expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'heard: hello' });
  expect(task.history.map((entry) => entry.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
  expect(calls).toEqual(['save', 'save']);

  const stored = await gateway!.store.a2aTasks.get(task.id);
  expect(stored).toMatchObject({ state: 'TASK_STATE_COMPLETED', firstMessageId: task.history[0]!.messageId, executor: 'gw-test' });
  expect(stored?.sessionKey).toBe(`agent:talk:a2a:partner:${task.contextId}`);
  const input = await gateway!.store.inputs.get(stored!.inputId!);
  expect(input?.status).toBe('consumed');
  const events = await gateway!.store.a2aTasks.listEvents(task.id);
  expect(events.map((event) => [event.type, (event.detail as { state?: string }).state])).toEqual([
    ['message', undefined],
    ['state', 'TASK_STATE_WORKING'],
    ['state', 'TASK_STATE_COMPLETED'],
  ]);
});

it('a first message accepted before a crash wrote its task, sent again, reaches the same input: one run answers it', async () => {
  const url = await serve();
  const messageId = 'm-crashed';
  const ids = (kind: 'task' | 'context') => firstMessageId(kind, 'talk', 'partner', messageId);
  // What the first copy left: its input, accepted (and run), but no task.
  const { input } = await gateway!.accept(
    {
      idempotencyKey: `a2a:${ids('task')}:${messageId}`,
      mode: 'followup',
      text: 'once',
      provenance: { kind: 'a2a', channel: 'a2a', peer: 'partner' },
    },
    { sessionKey: a2aSessionKey('talk', 'partner', ids('context')), agentId: 'talk' },
  );
  await gateway!.waitForInput(input.id, 10_000);
  expect(await gateway!.store.a2aTasks.get(ids('task'))).toBeUndefined();

  const task = await send(await client(url, 'talk'), userMessage('once', { messageId }));
  expect(task.id).toBe(ids('task'));
  expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'heard: once' });
  expect((await gateway!.store.a2aTasks.get(task.id))?.inputId).toBe(input.id);
  const runs = await gateway!.store.runs.list({ sessionKey: `agent:talk:a2a:partner:${ids('context')}` });
  expect(runs.map((run) => run.status)).toEqual(['succeeded']);
  // And sent once more, it is answered with that task.
  expect((await send(await client(url, 'talk'), userMessage('once', { messageId }))).id).toBe(task.id);
});

/** The task of the one blocking SendMessage in flight to "slow", once it is working. */
async function workingTask(): Promise<string> {
  return waitUntil('the blocking task is working', async () => {
    const [task] = await gateway!.store.a2aTasks.list({ agentId: 'slow', states: ['TASK_STATE_WORKING'] });
    return task?.id;
  });
}

it('a CancelTask from another call stops its run, and the blocking call answers canceled', async () => {
  const url = await serve();
  const a2a = await client(url, 'slow');
  const answer = send(a2a, userMessage('take your time'));
  const taskId = await workingTask();
  const cancelled = await a2a.cancelTask({ tenant: '', id: taskId, metadata: {} });
  expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  const answered = await answer;
  expect(answered.id).toBe(taskId);
  expect(answered.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  const record = await gateway!.store.a2aTasks.get(taskId);
  await waitUntil('the run is cancelled', async () => {
    const [run] = await gateway!.store.runs.list({ sessionKey: record!.sessionKey! });
    return run?.status === 'cancelled';
  });
  expect(record?.state).toBe('TASK_STATE_CANCELED');
});

it('a client that subscribes while the task runs sees it complete with its answer', async () => {
  const url = await serve();
  const a2a = await client(url, 'slow');
  const answer = send(a2a, userMessage('and then?'));
  const taskId = await workingTask();
  const seen: { state?: TaskState; text?: unknown }[] = [];
  for await (const event of a2a.resubscribeTask({ tenant: '', id: taskId })) {
    const payload = (event as { payload?: { $case: string; value: Task & { artifact?: Task['artifacts'][number] } } }).payload;
    if (payload?.$case === 'statusUpdate') seen.push({ state: payload.value.status?.state });
    if (payload?.$case === 'artifactUpdate') seen.push({ text: payload.value.artifact?.parts[0]?.content });
  }
  expect(seen).toEqual([{ text: { $case: 'text', value: 'late' } }, { state: TaskState.TASK_STATE_COMPLETED }]);
  expect((await answer).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
});

it('a push config created while the task runs hears how it ended', async () => {
  const received: { statusUpdate?: { taskId: string; status: { state: string } } }[] = [];
  const hook = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      received.push(JSON.parse(text));
      response.end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  try {
    const url = await serve();
    const a2a = await client(url, 'slow');
    const answer = send(a2a, userMessage('tell me later'));
    const taskId = await workingTask();
    await a2a.createTaskPushNotificationConfig({
      tenant: '',
      id: 'hook',
      taskId,
      url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/`,
      token: '',
      authentication: undefined,
    });
    expect((await answer).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const ended = await waitUntil('the webhook hears the task completed', async () =>
      received.find((body) => body.statusUpdate?.taskId === taskId && body.statusUpdate.status.state === 'TASK_STATE_COMPLETED'),
    );
    expect(ended.statusUpdate?.taskId).toBe(taskId);
  } finally {
    hook.close();
  }
});
