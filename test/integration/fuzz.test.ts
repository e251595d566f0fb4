/**
 * Thousands of malformed requests, as careless and hostile clients send them, against the control API
 * and the A2A routes of a real gateway process: never a 5xx, never an HTML page, a stack or a file path,
 * and the gateway still answers afterwards. The generator is seeded, so a failure can be replayed.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const PEER = 'fuzz-peer-token-0123456789';
const { configPath } = tempConfig(`{
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${PEER}" }] } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo" }] } } } } },
}`);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGatewayProcess(configPath);
});
afterAll(async () => {
  await stopGatewayProcess(gw);
});

/** mulberry32: small, seeded, good enough to pick cases. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEGMENTS = [
  '%E0%A4%A',
  '%',
  '%zz',
  '..',
  '%2e%2e',
  'agent:echo:main',
  encodeURIComponent('agent:echo:main'),
  'x'.repeat(3000),
  '😀',
  '%00',
  'null',
  '-1',
  "' OR 1=1 --",
  '<script>',
  '%C0%AF',
  '\\u0000',
];
const PATHS = [
  '/v1/status',
  '/v1/agents',
  '/v1/sessions',
  '/v1/sessions/$',
  '/v1/sessions/$/history',
  '/v1/exchanges',
  '/v1/a2a/tasks',
  '/v1/a2a/tasks/$',
  '/v1/runs',
  '/v1/runs/$',
  '/v1/runs/$/cancel',
  '/v1/subagents',
  '/v1/subagents/$',
  '/v1/subagents/$/kill',
  '/v1/outbox',
  '/v1/outbox/$/retry',
  '/v1/outbox/$/drop',
  '/v1/send',
  '/v1/events',
  '/a2a/echo/jsonrpc',
  '/a2a/jsonrpc',
  '/a2a/echo/rest/v1/tasks/$',
  '/a2a/echo/rest/v1/message:send',
  '/a2a/echo/rest/tasks/$',
  '/a2a/$/jsonrpc',
  '/a2a-callback/$',
  '/.well-known/agent-card.json',
  '/a2a/echo/.well-known/agent-card.json',
  '/$',
  '/v1/$',
  '/v1/board/tasks',
  '/v1/board/tasks/$',
  '/v1/board/tasks/$/move',
  '/v1/board/tasks/$/review',
  '/v1/board/tasks/$/comments',
  '/v1/board/tasks/$/links',
  '/v1/board/claim',
  '/v1/board/tasks/$/heartbeat',
  '/v1/board/tasks/$/complete',
  '/v1/board/tasks/$/block',
  '/v1/board/tasks/$/release',
  '/v1/board/events',
];
const QUERIES = [
  '',
  '?limit=99999999999999999999',
  '?limit=-1',
  '?limit=abc',
  '?limit=1e400',
  '?sessionKey=%E0%A4%A',
  '?status=%ff',
  '?agentId[]=x',
  '?after=NaN',
  '?limit=10&limit=20',
  '?state=ready,,doing',
  '?after=-5',
  '?taskId=%00',
  '?board=%ff',
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=latin-9',
  'text/plain',
  'application/a2a+json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
];

function bodies(random: () => number): string {
  const message = { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] };
  const cases: (() => unknown)[] = [
    () => '{"jsonrpc":"2.0","id":1,"method":',
    () => '[]',
    () => 'null',
    () => '"a string"',
    () => '{"a":'.repeat(2000),
    () => ({ jsonrpc: '2.0', id: { x: 1 }, method: 'GetTask', params: { id: 't' } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 5 } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { ...message, parts: [] } } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { ...message, role: 7 } } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: { parts: 'x' } } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 't', historyLength: -5 } }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageToken: '%%%', statusTimestampAfter: 'soon' } }),
    () => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 1, role: 'user', parts: [{ kind: 'text' }] } },
    }),
    () => ({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params: { taskId: 5, url: 'file:///etc/passwd' } }),
    () => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/pushNotificationConfig/set',
      params: { taskId: 't', pushNotificationConfig: { url: 'http://169.254.169.254/' } },
    }),
    () => ({ target: 'echo', message: 42 }),
    () => ({ target: 'nobody', message: 'hi' }),
    () => ({ target: 'echo', message: 'x'.repeat(200_000) }),
    () => ({ target: 'echo', message: 'hi', mode: 'sideways', timeoutSeconds: -1, wait: 'yes' }),
    () => ({ from: '%E0%A4%A', target: 'echo', message: 'hi' }),
    () => ({ from: 'agent:echo:main', label: 5, message: 'hi' }),
    () => ({ target: 'echo', message: 'hi', idempotencyKey: '' }),
    () => ({ message: { toString: 'x' }, __proto__: { polluted: true } }),
    () => ({ message }),
    () => ({ title: '', dependsOn: ['$'], priority: 1e308, labels: [5], board: '../x' }),
    () => ({ title: 'x'.repeat(600), assignee: 'a'.repeat(300), maxAttempts: 0, triage: 'yes' }),
    () => ({ title: 'ok', dependsOn: Array.from({ length: 200 }, (_, i) => `t${i}`) }),
    () => ({ worker: '', ttlSeconds: -1, taskId: { $ne: 1 } }),
    () => ({ worker: 'agent:echo', assignee: null }),
    () => ({ token: '1', result: 5, review: 'no' }),
    () => ({ token: 1.5, kind: 'bored', reason: '' }),
    () => ({ token: 2 ** 60, ttlSeconds: 1e9 }),
    () => ({ state: 'doing', reason: 5 }),
    () => ({ approve: 'yes', comment: '' }),
    () => ({ body: '', worker: 'w' }),
    () => ({ dependsOn: '$' }),
    () => ({ title: 'big', body: 'y'.repeat(1_100_000) }),
    () => '',
  ];
  const made = cases[Math.floor(random() * cases.length)]();
  return typeof made === 'string' ? made : JSON.stringify(made);
}

function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<{ status: number; text: string }> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
          // An event stream stays open: what it sent first is enough.
          if (String(res.headers['content-type']).includes('event-stream')) res.destroy();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('close', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} hung`)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe('fuzz: the control API and the A2A routes', () => {
  it(`${REQUESTS} malformed requests: no 5xx, no HTML, no stack, no path, and the gateway still answers`, async () => {
    const random = prng(SEED);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < REQUESTS / 20; batch += 1) {
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const method = pick(METHODS);
          // Node's client refuses to send spaces and characters past U+00FF raw; the rest goes as it is.
          const path = (pick(PATHS).replace('$', pick(SEGMENTS)) + pick(QUERIES)).replace(/[^\u0021-\u00ff]/gu, (char) =>
            encodeURIComponent(char),
          );
          const headers: Record<string, string> = {};
          const auth = random();
          if (auth < 0.45) headers.authorization = `Bearer ${gw.token}`;
          else if (auth < 0.8) headers.authorization = `Bearer ${PEER}`;
          else if (auth < 0.9) headers.authorization = `Bearer ${'x'.repeat(5000)}`;
          const type = pick(CONTENT_TYPES);
          if (type) headers['content-type'] = type;
          if (random() < 0.1) headers['content-encoding'] = pick(['gzip', 'br', 'zz']);
          if (random() < 0.3) headers['a2a-version'] = pick(['1.0', '0.3', '9.9', '']);
          const body = method === 'GET' || method === 'HEAD' ? undefined : bodies(random);
          let response: { status: number; text: string };
          try {
            response = await send(method, path, headers, body);
          } catch (error) {
            failures.push(`${method} ${path}: ${String(error)}`);
            return;
          }
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          // The web console's page is HTML by design (docs/console.md); every other answer is JSON or empty.
          // (`/..`, `/%2e%2e` and a path of control characters are `/` once the URL is parsed.)
          const page = response.status === 200 && /^\/(index\.html)?$/.test(new URL(path, 'http://localhost').pathname);
          const leak =
            /\bat [\w.<>]+ \(|node_modules|\/work\/|\/tmp\/|\.ts:\d+|\.js:\d+/i.test(response.text) ||
            (!page && /<html|<pre>/i.test(response.text));
          if (response.status >= 500 || leak)
            failures.push(
              `${method} ${path} [${headers['content-type'] ?? ''}] ${body?.slice(0, 80) ?? ''} -> ${response.status} ${response.text.slice(0, 200)}`,
            );
        }),
      );
    }
    expect(failures.slice(0, 10)).toEqual([]);
    // The requests reached every layer: accepted, refused as bad input, unauthenticated, unknown, too large.
    for (const status of [200, 400, 401, 404, 413])
      expect({ status, seen: (statuses.get(status) ?? 0) > 0 }).toEqual({ status, seen: true });
    expect((await gw.request('GET', '/v1/status')).status).toBe(200);
  }, 300_000);
});
