/**
 * Interop: the official SDK's clients (v1.0 over JSON-RPC and HTTP+JSON, and the v0.3 compat client)
 * against a real gateway process serving its agents over A2A on 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CARD_PATH, Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { get } from 'node:http';
import { cliWith, startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { userMessage } from '../helpers/a2a-front.js';
import { waitUntil } from '../helpers/wait.js';

const PARTNER = 'partner-token-0123456789';
const OTHER = 'other-token-0123456789ab';
const KEYED = 'keyed-apikey-0123456789';
const LIMITED = 'limited-token-0123456789';
const { configPath } = tempConfig(`{
  a2a: { server: {
    enabled: true,
    agents: ["support", "slow", "json"],
    peers: [
      { id: "partner", token: "${PARTNER}" },
      { id: "other", token: "${OTHER}" },
      { id: "keyed", apiKey: "${KEYED}", agents: ["support"] },
      { id: "limited", token: "${LIMITED}", skills: ["faq"], maxRequestsPerMinute: 3 },
    ],
  } },
  bindings: [{ agentId: "json", match: { channel: "a2a", peer: "other" } }],
  agents: { list: [
    { id: "support", name: "Support", model: "scripted/s", a2a: { description: "Answers product questions", skills: [{ id: "faq", name: "FAQ", description: "answers questions", tags: ["support"] }] } },
    { id: "slow", model: "scripted/slow" },
    { id: "json", model: "scripted/j" },
    { id: "private", model: "scripted/s" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    s: { chunkChars: 4, rules: [
      { match: "need details", steps: [{ toolCalls: [{ tool: "a2a_request_input", args: { question: "Which order number?" } }] }, { text: "I asked for the order number." }] },
      { match: "order (\\\\d+)", reply: "order {{match.1}} is on its way" },
      { reply: "support answers: {{input}}" },
    ] },
    slow: { rules: [{ delayMs: 5000, reply: "late" }] },
    j: { rules: [{ reply: "{\\"answer\\": 42}" }] },
  } } } },
}`);

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGatewayProcess(configPath);
});
afterAll(async () => {
  await stopGatewayProcess(gw);
});

const withHeaders =
  (headers: Record<string, string>): typeof fetch =>
  (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } });
const bearer = (token: string) => withHeaders({ authorization: `Bearer ${token}` });

async function client(agentId: string, fetchImpl: typeof fetch, transport: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): Promise<Client> {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [transport],
  });
  return factory.createFromUrl(`${gw.url}/a2a/${agentId}/`);
}

const send = (text: string, extra: Partial<Message> = {}, returnImmediately = false) => ({
  tenant: '',
  message: userMessage(text, extra),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: {},
});

const textOf = (task: Task) =>
  task.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''))).join('');

describe('A2A server: Agent Cards', () => {
  it('each exposed agent has a v1.0 card with both bindings, skills and security schemes; the default card is at the root', async () => {
    const response = await fetch(`${gw.url}/a2a/support/${AGENT_CARD_PATH}`, { headers: { 'A2A-Version': '1.0' } });
    const card = await response.json();
    expect(card).toMatchObject({
      name: 'Support',
      description: 'Answers product questions',
      capabilities: { streaming: true },
      skills: [{ id: 'faq', name: 'FAQ', description: 'answers questions', tags: ['support'] }],
      securitySchemes: {
        bearer: { httpAuthSecurityScheme: { scheme: 'bearer' } },
        apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
      },
    });
    expect(
      card.supportedInterfaces.map(
        (i: { protocolBinding: string; protocolVersion: string; url: string }) =>
          `${i.protocolBinding} ${i.protocolVersion} ${i.url.replace(gw.url, '')}`,
      ),
    ).toEqual([
      'JSONRPC 1.0 /a2a/support/jsonrpc',
      'HTTP+JSON 1.0 /a2a/support/rest',
      'JSONRPC 0.3 /a2a/support/jsonrpc',
      'HTTP+JSON 0.3 /a2a/support/rest',
    ]);
    const root = await (await fetch(`${gw.url}/${AGENT_CARD_PATH}`, { headers: { 'A2A-Version': '1.0' } })).json();
    expect(root.name).toBe('Support');
    expect(root.supportedInterfaces[0].url).toBe(`${gw.url}/a2a/jsonrpc`);
    // The SDK's own card resolver reads the schemes back.
    const resolved = await new DefaultAgentCardResolver().resolve(`${gw.url}/a2a/support/`);
    expect(resolved.securitySchemes.bearer.scheme).toEqual({
      $case: 'httpAuthSecurityScheme',
      value: { description: 'a token issued to the peer by the operator', scheme: 'bearer', bearerFormat: '' },
    });
    expect(resolved.securitySchemes.apiKey.scheme?.$case).toBe('apiKeySecurityScheme');
  });

  it('without A2A-Version the card is the v1.0 card (the TCK validates it), which the v0.3 client reads too; A2A-Version: 0.3 gets the v0.3 shape', async () => {
    const plain = await fetch(`${gw.url}/a2a/support/${AGENT_CARD_PATH}`);
    const card = await plain.json();
    expect(
      Object.keys(card).filter((key) => ['url', 'preferredTransport', 'protocolVersion', 'additionalInterfaces'].includes(key)),
    ).toEqual([]);
    expect(card.supportedInterfaces).toContainEqual({
      url: `${gw.url}/a2a/support/jsonrpc`,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion: '0.3',
    });
    // Cached, with a validator: a conditional request gets a 304 (TCK CARD-CACHE-001/002/003).
    expect(plain.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = plain.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[0-9a-f]{16}"$/);
    expect(new Date(plain.headers.get('last-modified')!).getTime()).toBeLessThanOrEqual(Date.now());
    // (Node's fetch adds Cache-Control: no-cache to a conditional request, which always makes it stale: so node:http.)
    const conditional = await new Promise<number>((resolve, reject) =>
      get(`${gw.url}/a2a/support/${AGENT_CARD_PATH}`, { headers: { 'If-None-Match': etag } }, (response) => {
        response.resume();
        resolve(response.statusCode!);
      }).on('error', reject),
    );
    expect(conditional).toBe(304);
    const legacy = await (await fetch(`${gw.url}/a2a/support/${AGENT_CARD_PATH}`, { headers: { 'A2A-Version': '0.3' } })).json();
    expect(legacy).toMatchObject({ protocolVersion: '0.3', url: `${gw.url}/a2a/support/jsonrpc`, preferredTransport: 'JSONRPC' });
  });

  it('an agent that is not exposed has no endpoints', async () => {
    const response = await fetch(`${gw.url}/a2a/private/${AGENT_CARD_PATH}`);
    expect(response.status).toBe(404);
    expect((await response.json()).error.message).toMatch(/exposed agents: support, slow, json/);
  });
});

describe('A2A server: the SDK v1.0 client', () => {
  it('SendMessage (JSON-RPC) blocks until the run completes; the answer is an artifact; the message landed in the A2A session', async () => {
    const a2a = await client('support', bearer(PARTNER));
    const task = (await a2a.sendMessage(send('hello there'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe('support answers: hello there');
    expect(task.history.map((message) => message.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
    const sessionKey = `agent:support:a2a:partner:${task.contextId}`;
    const history = await gw.request<{ entries: { role: string; content: unknown; provenance: unknown }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(sessionKey)}/history`,
    );
    expect(history.body.entries[0]).toMatchObject({
      role: 'user',
      content: 'hello there',
      provenance: { kind: 'a2a', channel: 'a2a', peer: 'partner' },
    });
  });

  it('SendMessage over HTTP+JSON; a JSON answer also comes as a data part; the same context continues the same session', async () => {
    const a2a = await client('json', bearer(PARTNER), 'HTTP+JSON');
    const first = (await a2a.sendMessage(send('numbers?'))) as Task;
    expect(first.artifacts[0].parts.map((part) => part.content)).toEqual([
      { $case: 'text', value: '{"answer": 42}' },
      { $case: 'data', value: { answer: 42 } },
    ]);
    const second = (await a2a.sendMessage(send('again', { contextId: first.contextId }))) as Task;
    expect(second.contextId).toBe(first.contextId);
    const history = await gw.request<{ entries: { role: string }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(`agent:json:a2a:partner:${first.contextId}`)}/history`,
    );
    expect(history.body.entries.filter((entry) => entry.role === 'user')).toHaveLength(2);
  });

  it('an agent that calls a2a_request_input leaves the task input-required with its question; the answer continues the task', async () => {
    const a2a = await client('support', bearer(PARTNER));
    const asked = (await a2a.sendMessage(send('I need details on my order'))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.status?.message?.parts[0].content).toEqual({ $case: 'text', value: 'Which order number?' });
    const answered = (await a2a.sendMessage(send('order 42', { taskId: asked.id, contextId: asked.contextId }))) as Task;
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(answered.status?.message?.parts[0].content).toEqual({ $case: 'text', value: 'order 42 is on its way' });
    // The same, answering over a stream.
    const again = (await a2a.sendMessage(send('I need details again'))) as Task;
    const states: TaskState[] = [];
    for await (const event of a2a.sendMessageStream(send('order 7', { taskId: again.id, contextId: again.contextId }))) {
      const payload = (event as { payload?: { $case: string; value: { status?: { state: TaskState } } } }).payload;
      if (payload?.value.status) states.push(payload.value.status.state);
    }
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('SendStreamingMessage streams the task, working, artifact chunks from the run, and completed', async () => {
    const a2a = await client('support', bearer(PARTNER));
    const kinds: string[] = [];
    let chunks = 0;
    let last: TaskState | undefined;
    for await (const event of a2a.sendMessageStream(send('stream this'))) {
      const payload = (event as { payload?: { $case: string; value: { status?: { state: TaskState }; lastChunk?: boolean } } }).payload;
      if (!payload) continue;
      kinds.push(payload.$case);
      if (payload.$case === 'artifactUpdate' && !payload.value.lastChunk) chunks += 1;
      if (payload.$case === 'statusUpdate') last = payload.value.status?.state;
    }
    expect(kinds[0]).toBe('task');
    expect(kinds).toContain('statusUpdate');
    expect(chunks).toBeGreaterThan(3);
    expect(last).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("two tasks of one context streamed at once each get only their own run's chunks", async () => {
    const a2a = await client('support', bearer(PARTNER));
    const first = (await a2a.sendMessage(send('warm up'))) as Task;
    const streamed = async (text: string) => {
      let chunks = '';
      for await (const event of a2a.sendMessageStream(send(text, { contextId: first.contextId }))) {
        const payload = (
          event as {
            payload?: {
              $case: string;
              value: { artifact?: { parts: { content?: { $case: string; value: string } }[] }; lastChunk?: boolean };
            };
          }
        ).payload;
        if (payload?.$case === 'artifactUpdate' && !payload.value.lastChunk)
          chunks += payload.value.artifact?.parts.map((part) => part.content?.value ?? '').join('') ?? '';
      }
      return chunks;
    };
    const [a, b] = await Promise.all([streamed('alpha alpha alpha'), streamed('beta beta beta')]);
    expect(a).toBe('support answers: alpha alpha alpha');
    expect(b).toBe('support answers: beta beta beta');
  });

  it('GetTask and ListTasks show a peer its own tasks only', async () => {
    const a2a = await client('support', bearer(PARTNER));
    const task = (await a2a.sendMessage(send('for the record'))) as Task;
    const fetched = await a2a.getTask({ tenant: '', id: task.id, historyLength: 1 });
    expect(fetched).toMatchObject({ id: task.id, status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(fetched.history).toHaveLength(1);
    const listed = await a2a.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: '',
      historyLength: 0,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    });
    expect(listed.tasks.map((t) => t.id)).toContain(task.id);
    const stranger = await client('support', bearer(OTHER));
    await expect(stranger.getTask({ tenant: '', id: task.id, historyLength: undefined })).rejects.toThrow(/not found/i);
    const theirs = await stranger.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: '',
      historyLength: 0,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    });
    expect(theirs.tasks).toEqual([]);
  });

  it('CancelTask aborts the run and the task becomes canceled', async () => {
    const a2a = await client('slow', bearer(PARTNER));
    const started = (await a2a.sendMessage(send('take your time', {}, true))) as Task;
    await waitUntil('the slow run is active', async () => {
      const runs = await gw.request<{ runs: { status: string }[] }>(
        'GET',
        `/v1/runs?sessionKey=${encodeURIComponent(`agent:slow:a2a:partner:${started.contextId}`)}`,
      );
      return runs.body.runs.some((run) => run.status === 'running');
    });
    const cancelled = await a2a.cancelTask({ tenant: '', id: started.id, metadata: {} });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await waitUntil('the run is recorded cancelled', async () => {
      const runs = await gw.request<{ runs: { status: string }[] }>(
        'GET',
        `/v1/runs?sessionKey=${encodeURIComponent(`agent:slow:a2a:partner:${started.contextId}`)}`,
      );
      return runs.body.runs[0]?.status === 'cancelled';
    });
    expect((await a2a.getTask({ tenant: '', id: started.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });
});

describe("A2A server: the gateway's own endpoints go through the bindings", () => {
  it('each peer reaches the agent the bindings give it on channel "a2a"', async () => {
    const factory = (token: string) => new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: bearer(token) })] });
    const viaRoot = (await (await factory(PARTNER).createFromUrl(`${gw.url}/`)).sendMessage(send('who are you?'))) as Task;
    expect(textOf(viaRoot)).toBe('support answers: who are you?');
    const bound = (await (await factory(OTHER).createFromUrl(`${gw.url}/`)).sendMessage(send('and you?'))) as Task;
    expect(textOf(bound)).toBe('{"answer": 42}');
    const history = await gw.request<{ entries: { provenance: { peer: string } }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(`agent:json:a2a:other:${bound.contextId}`)}/history`,
    );
    expect(history.body.entries[0].provenance.peer).toBe('other');
  });
});

describe('A2A server: the SDK v0.3 compat client', () => {
  it('a v0.3 client sends and reads tasks through the same endpoint', async () => {
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${gw.url}/a2a/support/jsonrpc`, fetchImpl: bearer(PARTNER) });
    const result = (await legacy.sendMessage(send('old protocol'))) as Task;
    expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(result)).toBe('support answers: old protocol');
    expect((await legacy.getTask({ tenant: '', id: result.id, historyLength: undefined })).id).toBe(result.id);
  });

  it('a v0.3 client streams, cancels, and is refused without credentials', async () => {
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${gw.url}/a2a/support/jsonrpc`, fetchImpl: bearer(PARTNER) });
    const cases: string[] = [];
    for await (const event of legacy.sendMessageStream(send('old stream'))) {
      const payload = (event as { payload?: { $case: string } }).payload;
      if (payload) cases.push(payload.$case);
    }
    expect(cases[0]).toBe('task');
    expect(cases.at(-1)).toBe('statusUpdate');
    const slow = new LegacyJsonRpcTransport({ endpoint: `${gw.url}/a2a/slow/jsonrpc`, fetchImpl: bearer(PARTNER) });
    const started = (await slow.sendMessage(send('old and slow', {}, true))) as Task;
    expect((await slow.cancelTask({ tenant: '', id: started.id, metadata: {} })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const anonymous = new LegacyJsonRpcTransport({ endpoint: `${gw.url}/a2a/support/jsonrpc` });
    await expect(anonymous.sendMessage(send('let me in'))).rejects.toThrow(/credentials required/);
  });
});

describe('A2A server: inbound security', () => {
  const rpc = (agentId: string, headers: Record<string, string>, text = 'hi', metadata?: Record<string, unknown>) =>
    fetch(`${gw.url}/a2a/${agentId}/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'SendMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...(metadata ? { metadata } : {}) } },
      }),
    });

  it('no credentials or wrong ones: 401 with a JSON-RPC error and a WWW-Authenticate challenge', async () => {
    const missing = await rpc('support', {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="switchboard"');
    expect(await missing.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -31401,
        message: 'credentials required: send "Authorization: Bearer <token>" or "X-API-Key: <key>"',
        data: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'UNAUTHENTICATED',
            domain: 'switchboard',
            metadata: { agent: 'support' },
          },
        ],
      },
    });
    const wrong = await fetch(`${gw.url}/a2a/support/rest/message:send`, {
      method: 'POST',
      headers: { authorization: 'Bearer nope', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({
      error: {
        code: 401,
        status: 'UNAUTHENTICATED',
        message: 'the credentials are not valid for this gateway',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'UNAUTHENTICATED',
            domain: 'switchboard',
            metadata: { agent: 'support' },
          },
        ],
      },
    });
  });

  it("an API key works; an agent outside the peer's list is refused with 403", async () => {
    expect((await rpc('support', { 'X-API-Key': KEYED })).status).toBe(200);
    const denied = await rpc('slow', { 'X-API-Key': KEYED });
    expect(denied.status).toBe(403);
    expect((await denied.json()).error.message).toBe('peer "keyed" may not call agent "slow" (a2a.server.peers[].agents allows support)');
  });

  it("a skill outside the peer's list is rejected; past its rate limit the peer gets 429", async () => {
    const noSkill = await (await rpc('support', { authorization: `Bearer ${LIMITED}` })).json();
    expect(noSkill.result.task.status).toMatchObject({
      state: 'TASK_STATE_REJECTED',
      message: { parts: [{ text: 'peer "limited" may only use the skills faq; name one in the message\'s metadata as skillId' }] },
    });
    const allowed = await (await rpc('support', { authorization: `Bearer ${LIMITED}` }, 'question', { skillId: 'faq' })).json();
    expect(allowed.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await rpc('support', { authorization: `Bearer ${LIMITED}` });
    const limited = await rpc('support', { authorization: `Bearer ${LIMITED}` });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await limited.json()).error.message).toBe(
      'peer "limited" made 3 requests in the last minute, its limit (a2a.server.peers[].maxRequestsPerMinute); retry later',
    );
  });
});

describe('A2A server: peers are isolated', () => {
  it("a context id is the peer's own: another peer sending the same contextId is rejected and never reads the first peer's session", async () => {
    const mine = (await (await client('support', bearer(PARTNER))).sendMessage(send('my secret is 1234'))) as Task;
    expect(mine.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const theirs = (await (
      await client('support', bearer(OTHER))
    ).sendMessage(send('what was said before?', { contextId: mine.contextId }))) as Task;
    expect(theirs.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(theirs.status?.message?.parts[0].content).toEqual({
      $case: 'text',
      value: `context "${mine.contextId}" belongs to another peer; send without a contextId to start a context of your own`,
    });
    const history = await gw.request<{ entries: { content: unknown }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(`agent:support:a2a:partner:${mine.contextId}`)}/history`,
    );
    expect(history.body.entries.map((entry) => entry.content)).not.toContain('what was said before?');
    const runs = await gw.request<{ runs: unknown[] }>(
      'GET',
      `/v1/runs?sessionKey=${encodeURIComponent(`agent:support:a2a:other:${mine.contextId}`)}`,
    );
    expect(runs.body.runs).toEqual([]);
  });
});

describe('A2A server: the replay log', () => {
  it("switchboard a2a tasks list and show --events print each task's messages and state changes", async () => {
    const a2a = await client('support', bearer(PARTNER));
    const task = (await a2a.sendMessage(send('log me'))) as Task;
    const cli = cliWith(configPath);
    const listed = JSON.parse((await cli('--json', 'a2a', 'tasks', 'list', '--agent', 'support')).stdout);
    expect(listed.tasks.map((t: { id: string }) => t.id)).toContain(task.id);
    const shown = await cli('a2a', 'tasks', 'show', task.id, '--events');
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`task ${task.id}`);
    expect(shown.stdout).toContain('state:   completed');
    const events = shown.stdout
      .split('\n')
      .filter((line) => /^ {2}\d{4}-/.test(line))
      .map((line) => line.split(' ')[3]);
    expect(events).toEqual(['message', 'state', 'state']);
    expect(shown.stdout).toMatch(/message \{"role":"user","messageId":"[^"]+","peer":"partner","text":"log me"\}/);
    expect(shown.stdout).toMatch(/state \{"state":"TASK_STATE_COMPLETED","message":"support answers: log me"\}/);
    const missing = await cli('a2a', 'tasks', 'show', 'nope');
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: no A2A task "nope" (list them with "switchboard a2a tasks list")\n',
    });
  });
});
