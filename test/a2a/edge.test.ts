/**
 * The A2A edge against a real gateway process, with raw requests as a careless or hostile client sends
 * them: each bad request gets the exact JSON-RPC or HTTP+JSON error, never an HTML page or a stack, and
 * a retried first message makes no second task.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const TOKEN = 'edge-peer-token-0123456789';
const LIMITED = 'edge-limited-token-0123456789';
const { configPath } = tempConfig(`{
  a2a: { server: { enabled: true, agents: ["echo"], peers: [{ id: "peer", token: "${TOKEN}" }, { id: "limited", token: "${LIMITED}", maxRequestsPerMinute: 2 }] }, push: { allowPrivateTargets: true } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`);

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGatewayProcess(configPath);
});
afterAll(async () => {
  await stopGatewayProcess(gw);
});

const auth = { authorization: `Bearer ${TOKEN}` };
async function rpc(body: unknown, headers: Record<string, string> = { 'A2A-Version': '1.0' }) {
  const response = await fetch(`${gw.url}/a2a/echo/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
}
const call = (method: string, params: unknown, id: unknown = 1) => ({ jsonrpc: '2.0', id, method, params });
const message = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: randomUUID(),
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});
const errorOf = (text: string) => JSON.parse(text).error as { code: number; message: string };

describe('A2A edge: JSON-RPC requests checked before the SDK', () => {
  it('envelope errors are -32600 Invalid Request', async () => {
    for (const body of [
      { id: 1, method: 'GetTask', params: { id: 'x' } },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: { no: 1 }, method: 'GetTask' },
      [call('GetTask', { id: 'x' })],
      42,
    ]) {
      const response = await rpc(body);
      expect(response.status).toBe(200);
      expect(errorOf(response.text).code).toBe(-32600);
    }
  });

  it('bad parameters are -32602 with the reason, and no task is made', async () => {
    const cases: [unknown, string][] = [
      [call('tasks/get', { id: 5 }), 'params.id must be a non-empty string (the task id)'],
      [call('tasks/cancel', { id: { x: 1 } }), 'params.id must be a non-empty string (the task id)'],
      [call('SendMessage', { message: message('x', { parts: [] }) }), 'params.message.parts must hold at least one part'],
      [
        call('SendMessage', { message: { messageId: 'm-1', parts: [{ text: 'hi' }] } }),
        'params.message.role must be ROLE_USER or ROLE_AGENT',
      ],
      [call('GetTask', { id: 't', historyLength: -1 }), 'historyLength must be a non-negative integer'],
      [call('ListTasks', { statusTimestampAfter: 'yesterday' }), 'params.statusTimestampAfter must be an ISO 8601 timestamp'],
      [call('ListTasks', { pageToken: 'zzz' }), 'params.pageToken is not a page token this server gave'],
      // Ids are stored, a contextId in its session's key: longer ones than the store keeps are refused, on any driver.
      [
        call('SendMessage', { message: message('x', { contextId: 'c'.repeat(129) }) }),
        'message.contextId is 129 characters; at most 128 are accepted',
      ],
      [
        call('SendMessage', { message: message('x', { messageId: 'm'.repeat(257) }) }),
        'message.messageId is 257 characters; at most 256 are accepted',
      ],
      [
        call('SendMessage', { message: message('x', { taskId: 't'.repeat(65) }) }),
        'message.taskId is 65 characters; at most 64 are accepted',
      ],
    ];
    for (const [body, reason] of cases) {
      const response = await rpc(body, (body as { method: string }).method.includes('/') ? {} : { 'A2A-Version': '1.0' });
      const { code, message } = errorOf(response.text);
      expect({ reason, error: { code, message } }).toEqual({ reason, error: { code: -32602, message: reason } });
    }
    const listed = JSON.parse((await rpc(call('ListTasks', {}))).text).result;
    expect(listed.tasks ?? []).toEqual([]);
  });

  it('a streaming call refused before its stream starts gets a plain JSON-RPC error, as from the SDK (TCK STREAM-SUB-003)', async () => {
    const refused = await rpc(call('SendStreamingMessage', { message: message('x', { parts: [] }) }, 7));
    expect(refused.type).toContain('application/json');
    expect(JSON.parse(refused.text)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32602, message: 'params.message.parts must hold at least one part' },
    });
    const unknown = await rpc(call('SubscribeToTask', { id: 'no-such-task' }, 8));
    expect(unknown.type).toContain('application/json');
    expect(JSON.parse(unknown.text)).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32001 } });
    // A task that has ended cannot be subscribed to: UnsupportedOperationError, with its ErrorInfo.
    const done = JSON.parse((await rpc(call('SendMessage', { message: message('finish') }))).text).result.task;
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    const terminal = await rpc(call('SubscribeToTask', { id: done.id }, 9));
    expect(terminal.type).toContain('application/json');
    const error = JSON.parse(terminal.text).error;
    expect(error).toEqual({
      code: -32004,
      message: `Task ${done.id} is in a terminal state (3) and cannot be subscribed to.`,
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org' }],
    });
  });

  it('v1.0 method names are served as v1.0 without an A2A-Version header', async () => {
    const response = await rpc(call('SendMessage', { message: message('no header') }), {});
    expect(JSON.parse(response.text).result.task.artifacts[0].parts[0].text).toBe('echo: no header');
  });

  it('a retried first message (same messageId, no task id) answers the task it made and starts no second run', async () => {
    const first = message('only once');
    const a = JSON.parse((await rpc(call('SendMessage', { message: first }))).text).result.task;
    const b = JSON.parse((await rpc(call('SendMessage', { message: first }))).text).result.task;
    expect(b.id).toBe(a.id);
    const runs = await gw.request<{ runs: unknown[] }>(
      'GET',
      `/v1/runs?sessionKey=${encodeURIComponent(`agent:echo:a2a:peer:${a.contextId}`)}`,
    );
    expect(runs.body.runs).toHaveLength(1);
  });

  it('ListTasks filters statusTimestampAfter (at or after) before paging; an invalid pageToken is -32602', async () => {
    const sent = JSON.parse((await rpc(call('SendMessage', { message: message('timed') }))).text).result.task;
    const at = sent.status.timestamp as string;
    const listed = JSON.parse((await rpc(call('ListTasks', { statusTimestampAfter: at, pageSize: 1 }))).text).result;
    expect(listed.tasks.map((task: { id: string }) => task.id)).toEqual([sent.id]);
    expect(listed.totalSize).toBe(1);
  });

  it('a push config created without an id answers the id the gateway made', async () => {
    const task = JSON.parse((await rpc(call('SendMessage', { message: message('push me') }))).text).result.task;
    const created = JSON.parse(
      (await rpc(call('CreateTaskPushNotificationConfig', { taskId: task.id, url: 'http://127.0.0.1:9/hook' }))).text,
    );
    expect(created.result.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("past its rate limit a peer gets 429 in each binding's A2A error shape: JSON-RPC -32000 with an ErrorInfo in data, HTTP+JSON with one in details", async () => {
    const limited = { authorization: `Bearer ${LIMITED}` };
    for (let i = 0; i < 2; i += 1)
      expect((await rpc(call('GetTask', { id: 'none' }), { 'A2A-Version': '1.0', ...limited })).status).toBe(200);
    const message = 'peer "limited" made 2 requests in the last minute, its limit (a2a.server.peers[].maxRequestsPerMinute); retry later';
    const details = (retryAfter: string) => [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'RATE_LIMIT_EXCEEDED',
        domain: 'switchboard',
        metadata: { agent: 'echo', peer: 'limited', setting: 'a2a.server.peers[].maxRequestsPerMinute', retryAfterSeconds: retryAfter },
      },
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` },
    ];
    const viaRpc = await fetch(`${gw.url}/a2a/echo/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...limited },
      body: JSON.stringify(call('GetTask', { id: 'none' })),
    });
    expect(viaRpc.status).toBe(429);
    const rpcAfter = viaRpc.headers.get('retry-after')!;
    expect(rpcAfter).toMatch(/^\d+$/);
    expect(await viaRpc.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message, data: details(rpcAfter) } });
    const viaRest = await fetch(`${gw.url}/a2a/echo/rest/tasks/none`, { headers: limited });
    expect(viaRest.status).toBe(429);
    const restAfter = viaRest.headers.get('retry-after')!;
    expect(await viaRest.json()).toEqual({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message, details: details(restAfter) } });
  });

  it("401 uses a code outside A2A's range, with an ErrorInfo in data and in details", async () => {
    const response = await fetch(`${gw.url}/a2a/echo/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call('GetTask', { id: 'x' })),
    });
    expect(response.status).toBe(401);
    const info = (reason: string) => ({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason,
      domain: 'switchboard',
      metadata: { agent: 'echo' },
    });
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -31401,
        message: 'credentials required: send "Authorization: Bearer <token>" or "X-API-Key: <key>"',
        data: [info('UNAUTHENTICATED')],
      },
    });
    const rest = await fetch(`${gw.url}/a2a/echo/rest/tasks/x`, { headers: { authorization: 'Bearer wrong' } });
    expect(rest.status).toBe(401);
    expect(await rest.json()).toEqual({
      error: {
        code: 401,
        status: 'UNAUTHENTICATED',
        message: 'the credentials are not valid for this gateway',
        details: [info('UNAUTHENTICATED')],
      },
    });
  });
});

describe('A2A edge: errors never leave as HTML or with a stack', () => {
  const noLeak = (text: string) => {
    expect(text).not.toMatch(/<html|<pre|at \w+ \(|node_modules|\/work\/|\.js:\d+/i);
    return JSON.parse(text);
  };

  it("an over-size body, a bad charset, an unsupported encoding and bad JSON answer in the binding's shape", async () => {
    const big = await rpc(JSON.stringify(call('SendMessage', { message: message('x'.repeat(2 * 1024 * 1024)) })));
    expect(big.status).toBe(413);
    expect(noLeak(big.text)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'the request body is larger than 1mb' } });
    const charset = await rpc(JSON.stringify(call('GetTask', { id: 'x' })), {
      'content-type': 'application/json; charset=latin-9',
      'A2A-Version': '1.0',
    });
    expect(charset.status).toBe(415);
    expect(noLeak(charset.text).error.message).toBe('unsupported charset: send the body as UTF-8');
    const encoded = await rpc(JSON.stringify(call('GetTask', { id: 'x' })), { 'content-encoding': 'zz', 'A2A-Version': '1.0' });
    expect(encoded.status).toBe(415);
    expect(noLeak(encoded.text).error.message).toBe('unsupported Content-Encoding: send the body unencoded, gzip, deflate or br');
    const bad = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(noLeak(bad.text).error.code).toBe(-32700);
  });

  it('an HTTP+JSON body of a type the binding does not take is ContentTypeNotSupportedError with 415, as A2A maps it (TCK HTTP_JSON-STATUS-001)', async () => {
    for (const path of ['/a2a/echo/rest/message:send', '/a2a/rest/message:send']) {
      const response = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'A2A-Version': '1.0', ...auth },
        body: JSON.stringify({ message: message('not as JSON') }),
      });
      expect(response.status).toBe(415);
      expect(noLeak(await response.text())).toEqual({
        error: {
          code: 415,
          status: 'INVALID_ARGUMENT',
          message: 'unsupported Content-Type "text/plain": send the body as application/json (or application/a2a+json)',
          details: [
            { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CONTENT_TYPE_NOT_SUPPORTED', domain: 'a2a-protocol.org' },
          ],
        },
      });
    }
    const tasks = await fetch(`${gw.url}/a2a/echo/rest/tasks`, { headers: { 'A2A-Version': '1.0', ...auth } });
    expect(tasks.status).toBe(200);
  });

  it('malformed percent-escapes in A2A URLs answer JSON', async () => {
    for (const path of ['/a2a/echo/rest/v1/tasks/%E0%A4%A', '/a2a/%E0%A4%A/jsonrpc', '/a2a/echo/rest/tasks/%E0%A4%A']) {
      const response = await fetch(`${gw.url}${path}`, { headers: auth });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      noLeak(await response.text());
    }
  });
});
