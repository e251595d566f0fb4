/**
 * Push notifications from the A2A server: registered through the SDK client, delivered through the
 * outbox to a receiver on 127.0.0.1 (with a2a.push.allowPrivateTargets), retried after a failure, with
 * the config's token, and logged on the task. Without the setting, private targets are refused.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'push-peer-token-0123456789';
const config = (push: string) => `{
  outbox: { baseDelayMs: 20, maxDelayMs: 100 },
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${TOKEN}" }] }, push: { ${push} } },
  agents: { list: [{ id: "worker", model: "scripted/w" }] },
  models: { providers: { scripted: { type: "scripted", models: { w: { rules: [{ delayMs: 200, reply: "done: {{input}}" }] } } } } },
}`;

const received: {
  headers: IncomingHttpHeaders;
  body: { statusUpdate?: { status: { state: string } }; task?: unknown; artifactUpdate?: unknown };
}[] = [];
let failuresLeft = 1;
const refusedKeys: (string | string[] | undefined)[] = [];
const receiver = createServer((request, response) => {
  let text = '';
  request.on('data', (chunk) => (text += chunk));
  request.on('end', () => {
    if (failuresLeft > 0) {
      failuresLeft -= 1;
      refusedKeys.push(request.headers['idempotency-key']);
      response.writeHead(503).end();
      return;
    }
    received.push({ headers: request.headers, body: JSON.parse(text) });
    response.writeHead(200).end();
  });
});
let hook: string;
let gw: GatewayProcess;
let strict: GatewayProcess;
beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  gw = await startGatewayProcess(tempConfig(config('allowPrivateTargets: true')).configPath);
  strict = await startGatewayProcess(tempConfig(config('')).configPath);
});
afterAll(async () => {
  await stopGatewayProcess(gw);
  await stopGatewayProcess(strict);
  receiver.close();
});

async function client(target: GatewayProcess): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${TOKEN}` } });
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(`${target.url}/a2a/worker/`);
}

const send = (text: string, push?: { url: string; token: string }) => ({
  tenant: '',
  message: {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text' as const, value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: push
      ? { tenant: '', id: 'hook-1', taskId: '', url: push.url, token: push.token, authentication: undefined }
      : undefined,
    returnImmediately: true,
  },
  metadata: {},
});

describe('A2A push notifications', () => {
  it("the task's events reach the webhook through the outbox, retried after a 503, with the token; the log shows every attempt", async () => {
    const a2a = await client(gw);
    const task = (await a2a.sendMessage(send('notify me', { url: hook, token: 'secret-hook-token' }))) as Task;
    const done = await waitUntil(
      'the completed status was pushed',
      () => received.find((r) => r.body.statusUpdate?.status.state === 'TASK_STATE_COMPLETED'),
      10_000,
    );
    // The refused notification's retry is its own outbox row's, after a backoff: it may come after the completed one.
    await waitUntil(
      'the refused notification was retried',
      () => received.some((r) => r.headers['idempotency-key'] === refusedKeys[0]),
      10_000,
    );
    expect(done.headers['x-a2a-notification-token']).toBe('secret-hook-token');
    expect(done.headers['content-type']).toMatch(/application\/(a2a\+)?json/);
    // Every notification carries its outbox row's key; the retry of the refused one carries the same key.
    const keys = received.map((r) => r.headers['idempotency-key']);
    expect(keys.every((key) => typeof key === 'string' && key.startsWith(`push:${task.id}:hook-1:`))).toBe(true);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toContain(refusedKeys[0]);
    const configs = await a2a.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 10, pageToken: '' });
    expect(configs.configs.map((c) => [c.id, c.url])).toEqual([['hook-1', hook]]);
    // An attempt is logged on the task after the receiver answered it: the last one's line may come a moment later.
    const forTask = received.filter((r) => JSON.stringify(r.body).includes(task.id)).length;
    const pushes = await waitUntil(
      'every delivery the receiver answered is logged on the task',
      async () => {
        const { body } = await gw.request<{ events: { type: string; detail: { outcome: string; status?: number } }[] }>(
          'GET',
          `/v1/a2a/tasks/${task.id}`,
        );
        const lines = body.events
          .filter((event) => event.type === 'push')
          .map((event) => `${event.detail.outcome} ${event.detail.status ?? ''}`.trim());
        return lines.filter((line) => line === 'delivered 200').length >= forTask ? lines : undefined;
      },
      10_000,
    );
    expect(pushes[0]).toBe('failed 503');
    expect(pushes.slice(1).every((line) => line === 'delivered 200')).toBe(true);
    expect(pushes.filter((line) => line === 'delivered 200').length).toBe(forTask);
    await a2a.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    expect((await a2a.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 10, pageToken: '' })).configs).toEqual([]);
  });

  it('a private target is refused when it is registered, naming the setting', async () => {
    const a2a = await client(strict);
    const task = (await a2a.sendMessage(send('no hook'))) as Task;
    await expect(
      a2a.createTaskPushNotificationConfig({ tenant: '', id: 'x', taskId: task.id, url: hook, token: '', authentication: undefined }),
    ).rejects.toThrow(
      `push notification target refused: "${hook}" resolves to 127.0.0.1, a private, loopback or link-local address; only public targets are allowed unless a2a.push.allowPrivateTargets is set`,
    );
  });
});
