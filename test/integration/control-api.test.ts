import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { tempConfig, gatewayForSuite } from '../helpers/process.js';

const { configPath } = tempConfig(`{
  gateway: { maxMessageChars: 100 },
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }, { id: "slow", model: "scripted/slow" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    echo: { rules: [{ reply: "echo: {{input}}" }] },
    slow: { rules: [{ delayMs: 3000, reply: "finally" }] },
  } } } },
}`);

const suite = gatewayForSuite(configPath);

describe('control API against a real gateway process', () => {
  it('auth: a missing or wrong bearer token is refused with 401 and says how to get one, without naming the files', async () => {
    const missing = await suite.gw.request('GET', '/v1/status', undefined, null);
    expect(missing).toEqual({
      status: 401,
      body: {
        error: {
          code: 'UNAUTHORIZED',
          message:
            'missing bearer token: send "Authorization: Bearer <token>" (print it with "switchboard --config <file> token", <file> being the config this gateway was started with)',
        },
      },
    });
    const wrong = await suite.gw.request('GET', '/v1/status', undefined, 'not-the-token');
    expect(wrong).toEqual({
      status: 401,
      body: {
        error: {
          code: 'UNAUTHORIZED',
          message:
            'invalid bearer token (print it with "switchboard --config <file> token", <file> being the config this gateway was started with)',
        },
      },
    });
  });

  it('bad input: a method a path lacks is 405 with Allow; a raw CONNECT is answered 405 too, not dropped', async () => {
    const wrongMethod = await fetch(`${suite.gw.url}/v1/status`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${suite.gw.token}` },
    });
    expect([wrongMethod.status, wrongMethod.headers.get('allow'), await wrongMethod.json()]).toEqual([
      405,
      'GET',
      { error: { code: 'METHOD_NOT_ALLOWED', message: 'DELETE is not supported on /v1/status (use GET)' } },
    ]);
    const { port } = new URL(suite.gw.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'METHOD_NOT_ALLOWED', message: "CONNECT is not supported: this is the gateway's control API, not a proxy" },
    });
  });

  it('A2A off: its card and endpoints say that the server is off and which key turns it on, with or without a token', async () => {
    for (const path of ['/.well-known/agent-card.json', '/a2a/echo/.well-known/agent-card.json', '/a2a/jsonrpc']) {
      for (const token of [null, undefined]) {
        expect(await suite.gw.request('GET', path, undefined, token)).toEqual({
          status: 404,
          body: {
            error: {
              code: 'NOT_FOUND',
              message: `the A2A server is off on this gateway, so ${path} serves nothing: set a2a.server.enabled: true in its config (with a2a.server.peers) and restart it`,
            },
          },
        });
      }
    }
  });

  it('bad input: a key used for a stored-only message and again for a sessions_send is a 409 naming the key and its first use', async () => {
    const stored = await suite.gw.request<{ inputId: string }>('POST', '/v1/send', {
      from: 'agent:echo:main',
      target: 'slow',
      message: 'fyi',
      mode: 'notify',
      idempotencyKey: 'reused',
    });
    expect(stored.status).toBe(200);
    const again = await suite.gw.request('POST', '/v1/send', {
      from: 'agent:echo:main',
      target: 'slow',
      message: 'question',
      idempotencyKey: 'reused',
    });
    const key = 'send:agent:echo:main:agent:slow:main:reused';
    expect(again).toEqual({
      status: 409,
      body: {
        error: {
          code: 'IDEMPOTENCY_KEY_REUSED',
          message: `idempotency key "${key}" was already used for input ${stored.body.inputId} to agent:slow:main, stored with mode "notify" and no reply exchange; a key names one message, so use a new key for this one`,
          details: { idempotencyKey: key, inputId: stored.body.inputId, mode: 'notify' },
        },
      },
    });
  });

  it('send: waits for the reply, and the session, history and run are visible', async () => {
    const sent = await suite.gw.request<{ status: string; reply: string; runId: string; sessionKey: string }>('POST', '/v1/send', {
      target: 'echo',
      message: 'ping',
      wait: true,
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status: 'ok', reply: 'echo: ping', sessionKey: 'agent:echo:main', runStatus: 'succeeded' });
    const history = await suite.gw.request<{ entries: { role: string }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent('agent:echo:main')}/history`,
    );
    expect(history.body.entries.map((e) => e.role)).toEqual(['user', 'assistant']);
    const run = await suite.gw.request<{ run: { status: string } }>('GET', `/v1/runs/${sent.body.runId}`);
    expect(run.body.run.status).toBe('succeeded');
  });

  it('send: without a target the bindings route by channel and peer, else to the default agent', async () => {
    const sent = await suite.gw.request<{ sessionKey: string; status: string }>('POST', '/v1/send', {
      message: 'who gets this?',
      channel: 'web',
      peer: 'visitor-1',
    });
    expect(sent).toMatchObject({ status: 200, body: { status: 'accepted', sessionKey: 'agent:echo:web:direct:visitor-1' } });
  });

  it('send: a waited send past its timeout says the message was delivered and is still processed', async () => {
    const sent = await suite.gw.request<{ status: string; inputId: string }>('POST', '/v1/send', {
      target: 'slow',
      message: 'hurry',
      wait: true,
      timeoutSeconds: 0.2,
    });
    expect(sent.body).toMatchObject({ status: 'timeout', delivered: true });
    const runs = await suite.gw.request<{ runs: { status: string }[] }>(
      'GET',
      `/v1/runs?sessionKey=${encodeURIComponent('agent:slow:main')}`,
    );
    expect(runs.body.runs[0].status).toBe('running');
  });

  it('bad input: invalid JSON, unknown fields, oversized message, unknown agent and session each get their exact error', async () => {
    expect(await suite.gw.request('POST', '/v1/send', '{"target": "echo",')).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_JSON', message: expect.stringMatching(/^request body is not valid JSON: /) } },
    });
    expect(await suite.gw.request('POST', '/v1/send', { target: 'echo', message: 'x', colour: 'red' })).toEqual({
      status: 400,
      body: {
        error: {
          code: 'INVALID_REQUEST',
          message: 'invalid request body: unknown field "colour"',
          details: { problems: ['unknown field "colour"'] },
        },
      },
    });
    expect(await suite.gw.request('POST', '/v1/send', { target: 'echo', message: 'x'.repeat(101) })).toEqual({
      status: 413,
      body: {
        error: {
          code: 'MESSAGE_TOO_LARGE',
          message: 'message is 101 characters; the limit is 100 (gateway.maxMessageChars)',
          details: { length: 101, limit: 100 },
        },
      },
    });
    expect(await suite.gw.request('POST', '/v1/send', { target: 'ghost', message: 'x' })).toEqual({
      status: 404,
      body: {
        error: { code: 'AGENT_NOT_FOUND', message: 'unknown agent "ghost" (configured agents: echo, slow)', details: { agentId: 'ghost' } },
      },
    });
    expect(await suite.gw.request('GET', `/v1/sessions/${encodeURIComponent('agent:echo:nope:direct:x')}`)).toEqual({
      status: 404,
      body: {
        error: { code: 'SESSION_NOT_FOUND', message: 'no session "agent:echo:nope:direct:x" (list them with "switchboard sessions list")' },
      },
    });
    expect(await suite.gw.request('GET', '/v1/nothing')).toEqual({
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: 'no such endpoint: GET /v1/nothing' } },
    });
  });

  it('bad input: a body over 1 MiB is refused with 413 once it is read, and its connection serves the next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const call = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; body: unknown; reused: boolean }>((resolve, reject) => {
        const req = httpRequest(
          `${suite.gw.url}${path}`,
          { method, agent, headers: { authorization: `Bearer ${suite.gw.token}`, 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (chunk) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), reused: req.reusedSocket }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    try {
      expect(await call('POST', '/v1/send', JSON.stringify({ target: 'echo', message: 'x'.repeat(2 * 1024 * 1024) }))).toEqual({
        status: 413,
        body: { error: { code: 'MESSAGE_TOO_LARGE', message: 'request body is larger than 1048576 bytes' } },
        reused: false,
      });
      expect(await call('GET', '/v1/status')).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('events: the SSE stream replays the journal after a sequence number and then follows live', async () => {
    const controller = new AbortController();
    const response = await fetch(`${suite.gw.url}/v1/events?after=0&sessionKey=${encodeURIComponent('agent:echo:main')}`, {
      headers: { authorization: `Bearer ${suite.gw.token}` },
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const seen: string[] = [];
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const readUntil = async (predicate: () => boolean) => {
      while (!predicate()) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        for (const match of buffer.matchAll(/^event: (.+)$/gm)) seen.push(match[1]);
        buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2);
      }
    };
    await readUntil(() => seen.filter((t) => t === 'run.completed').length >= 1);
    await suite.gw.request('POST', '/v1/send', { target: 'echo', message: 'live one', wait: true });
    await readUntil(() => seen.filter((t) => t === 'run.completed').length >= 2);
    controller.abort();
    expect(seen.filter((t) => t === 'run.started').length).toBeGreaterThanOrEqual(2);
    expect(seen).toContain('session.reply');
  });
  it('bad input: a malformed percent-escape in any id segment is a 400 naming the segment', async () => {
    const paths = [
      'GET /v1/runs/%E0%A4%A',
      'GET /v1/sessions/%E0%A4%A/history',
      'POST /v1/runs/%E0%A4%A/cancel',
      'GET /v1/subagents/%E0%A4%A',
      'POST /v1/subagents/%E0%A4%A/kill',
      'GET /v1/a2a/tasks/%E0%A4%A',
    ];
    for (const line of paths) {
      const [method, path] = line.split(' ');
      expect({ line, ...(await suite.gw.request(method, path)) }).toEqual({
        line,
        status: 400,
        body: {
          error: {
            code: 'INVALID_REQUEST',
            message: 'the path segment "%E0%A4%A" has a malformed percent-escape; encode it with encodeURIComponent',
          },
        },
      });
    }
    const callback = await suite.gw.request('POST', '/a2a-callback/%E0%A4%A', {});
    expect(callback.status).toBe(400);
  });

  it('bad input: a huge or fractional limit is a 400, not a database error', async () => {
    for (const raw of ['99999999999999999999', '1.5', '0', '-3', '1e3', '10001']) {
      expect(await suite.gw.request('GET', `/v1/runs?limit=${raw}`)).toEqual({
        status: 400,
        body: { error: { code: 'INVALID_REQUEST', message: `limit: expected an integer from 1 to 10000, got "${raw}"` } },
      });
    }
  });

  it('idempotency keys are scoped to the target: the same key sent to another agent is another message, and never an internal key', async () => {
    const first = await suite.gw.request<{ sessionKey: string; created: boolean; inputId: string }>('POST', '/v1/send', {
      target: 'echo',
      message: 'one',
      idempotencyKey: 'k1',
    });
    const other = await suite.gw.request<{ sessionKey: string; created: boolean; inputId: string }>('POST', '/v1/send', {
      target: 'slow',
      message: 'two',
      idempotencyKey: 'k1',
    });
    expect(first.body).toMatchObject({ sessionKey: 'agent:echo:main', created: true });
    expect(other.body).toMatchObject({ sessionKey: 'agent:slow:main', created: true });
    expect(other.body.inputId).not.toBe(first.body.inputId);
    const again = await suite.gw.request<{ sessionKey: string; created: boolean; inputId: string }>('POST', '/v1/send', {
      target: 'echo',
      message: 'one',
      idempotencyKey: 'k1',
    });
    expect(again.body).toMatchObject({ sessionKey: 'agent:echo:main', created: false, inputId: first.body.inputId });
    // A key shaped like the gateway's own (send:, exchange:, completion:) is only ever a client key.
    const shaped = await suite.gw.request<{ created: boolean }>('POST', '/v1/send', {
      target: 'echo',
      message: 'three',
      idempotencyKey: `input:${first.body.inputId}`,
    });
    expect(shaped.body.created).toBe(true);
  });
});
