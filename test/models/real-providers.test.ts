import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SESSION_TOOL_NAMES } from '../../src/core/subagent.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';

let server: FakeProviderServer;
let gateway: Gateway;
beforeEach(async () => {
  server = await new FakeProviderServer().start();
});
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  await server.close();
});

function configFor(providerText: string, model: string) {
  return `{
    agents: { list: [{ id: "bot", model: "${model}", identity: { name: "Botty" } }] },
    models: { providers: { ${providerText} } },
  }`;
}

async function ask(message: string) {
  const sent = await gateway.send({ target: 'bot', message });
  return gateway.waitForInput(sent.input.id, 10_000);
}

const providers = [
  {
    name: 'openai',
    provider: (url: string) => `openai: { type: "openai", apiKey: "\${OPENAI_API_KEY}", baseURL: "${url}/v1" }`,
    model: 'openai/gpt-test',
    path: '/v1/chat/completions',
    auth: (headers: Record<string, unknown>) => expect(headers.authorization).toBe('Bearer sk-test-key'),
    systemOf: (body: any) => body.messages[0].content,
    toolsOf: (body: any) => body.tools.map((t: any) => t.function.name),
  },
  {
    name: 'openai-compatible (Ollama, vLLM)',
    provider: (url: string) => `ollama: { type: "openai-compatible", baseURL: "${url}/v1", apiKey: "\${OPENAI_API_KEY}" }`,
    model: 'ollama/llama3.2',
    path: '/v1/chat/completions',
    auth: (headers: Record<string, unknown>) => expect(headers.authorization).toBe('Bearer sk-test-key'),
    systemOf: (body: any) => body.messages[0].content,
    toolsOf: (body: any) => body.tools.map((t: any) => t.function.name),
  },
  {
    name: 'anthropic',
    provider: (url: string) => `anthropic: { type: "anthropic", apiKey: "\${OPENAI_API_KEY}", baseURL: "${url}/v1" }`,
    model: 'anthropic/claude-test',
    path: '/v1/messages',
    auth: (headers: Record<string, unknown>) => expect(headers['x-api-key']).toBe('sk-test-key'),
    systemOf: (body: any) => body.system.map((part: any) => part.text).join(''),
    toolsOf: (body: any) => body.tools.map((t: any) => t.name),
  },
];

describe.each(providers)('real provider over its wire format: $name', (p) => {
  const env = { OPENAI_API_KEY: 'sk-test-key' };

  it('provider: a text reply, not streamed while nobody watches; the request carries the key, the system prompt and the tools', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model), env);
    server.reply({ text: 'Hello from the fake model' });
    const result = await ask('hi there');
    expect(result).toMatchObject({
      status: 'completed',
      reply: 'Hello from the fake model',
      run: { status: 'succeeded', usage: { inputTokens: 21, outputTokens: 7, modelCalls: 1 } },
    });
    const [request] = server.requests;
    expect(request.path).toBe(p.path);
    p.auth(request.headers);
    expect(request.body.stream ?? false).toBe(false);
    expect(p.systemOf(request.body)).toContain('You are agent "bot" (Botty)');
    // Offered: what can succeed here. Nothing else to see or message (visibility "tree", nothing spawned yet), nothing to wait for.
    const unavailable = [
      'agents_list',
      'sessions_list',
      'sessions_history',
      'session_status',
      'sessions_send',
      'sessions_wait',
      'subagents',
    ];
    // The agent has no workspace: nothing for read_file either.
    expect(p.toolsOf(request.body)).toEqual(['time_now', ...SESSION_TOOL_NAMES.filter((name) => !unavailable.includes(name))]);
    // The run records what was sent: the body's bytes on the wire, its tool definitions and its system text.
    const run = (result as { run: { request: { bytes: number; toolBytes: number; systemBytes: number } } }).run;
    expect(run.request.bytes).toBe(request.bytes);
    expect(run.request.toolBytes).toBe(Buffer.byteLength(JSON.stringify(request.body.tools)));
    expect(run.request.systemBytes).toBeGreaterThanOrEqual(Buffer.byteLength(p.systemOf(request.body)));
    expect(run.request.systemBytes).toBeLessThan(run.request.bytes - run.request.toolBytes);
    // What the provider read from its prompt cache is recorded.
    expect((result as { run: { usage: { cachedInputTokens: number } } }).run.usage.cachedInputTokens).toBe(15);
  });

  it("provider: streamed while someone watches the session's deltas, which add up to the reply", async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model), env);
    server.reply({ text: 'Hello from the fake model' });
    const deltas: string[] = [];
    gateway.subscribe((event) => {
      if (event.type === 'delta') deltas.push(event.text);
    });
    const unwatch = gateway.watchDeltas('agent:bot:main');
    const result = await ask('hi there');
    unwatch();
    expect(result).toMatchObject({
      status: 'completed',
      reply: 'Hello from the fake model',
      run: { status: 'succeeded', usage: { outputTokens: 7, modelCalls: 1, cachedInputTokens: 15 } },
    });
    expect(server.requests[0].body.stream).toBe(true);
    expect(deltas.join('')).toBe('Hello from the fake model');
    expect((result as { run: { request: { bytes: number } } }).run.request.bytes).toBe(server.requests[0].bytes);
  });

  it('provider: a tool call runs the tool and its result goes back in the next request', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model), env);
    server.reply({ toolCall: { name: 'time_now', args: {} } }, { text: 'It is late.' });
    const result = await ask('what time is it?');
    expect(result).toMatchObject({ status: 'completed', reply: 'It is late.', run: { usage: { modelCalls: 2 } } });
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[1].body)).toContain('epochMs');
  });

  it('provider: an HTTP error records the run failed with the provider message; the input stays in the transcript', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model).replace('identity', 'maxSteps: 2, identity'), env);
    server.reply({ status: 400, error: 'model "x" is not loaded' });
    const result = await ask('anyone?');
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expect(result.run).toMatchObject({ status: 'failed', errorCode: 'MODEL_PROVIDER_ERROR' });
    expect(result.run.errorMessage).toBe(`model "x" is not loaded (HTTP 400 from ${server.url}${p.path})`);
    // The failed call was sent: its bytes are recorded.
    expect(server.requests).toHaveLength(1);
    expect(result.run.request.bytes).toBe(server.requests[0].bytes);
    expect((await gateway.history('agent:bot:main'))[0]).toMatchObject({ role: 'user', content: 'anyone?' });
  });

  it('provider: an error that quotes part of the API key reaches the run, the transcript and the log without it', async () => {
    const logged: string[] = [];
    const { config } = parseConfigText(
      configFor(p.provider(server.url), p.model).replace('identity', 'maxSteps: 2, identity'),
      '/test/switchboard.json5',
      env,
    );
    gateway = await startGateway({
      config,
      store: await SqliteStore.open({ path: ':memory:' }),
      gatewayId: 'gw-test',
      log: (_level, message) => logged.push(message),
    });
    server.reply({
      status: 401,
      error: `Incorrect API key provided: ${env.OPENAI_API_KEY.slice(0, 7)}****${env.OPENAI_API_KEY.slice(-4)}`,
    });
    const result = await ask('anyone?');
    if (result.status !== 'completed') throw new Error(result.status);
    expect(result.run.errorMessage).toBe(`Incorrect API key provided: [redacted]****-key (HTTP 401 from ${server.url}${p.path})`);
    const texts = [result.run.errorMessage ?? '', JSON.stringify(await gateway.history('agent:bot:main')), ...logged];
    for (const text of texts) expect(text).not.toContain(env.OPENAI_API_KEY.slice(0, 7));
    expect(logged.some((line) => line.includes('[redacted]'))).toBe(true);
  });

  it('provider: a provider that never answers is cut off by the run timeout and recorded timed_out', async () => {
    gateway = await startTestGateway(configFor(p.provider(server.url), p.model).replace('identity', 'timeoutSeconds: 1, identity'), env);
    server.reply({ hang: true });
    const result = await ask('hello?');
    expect(result).toMatchObject({ status: 'completed', run: { status: 'timed_out', errorCode: 'TIMED_OUT' } });
  });
});

describe('prompt caching', () => {
  it('anthropic: cache breakpoints after the system text and after the last message the run starts with; the prefix is byte-stable between calls', async () => {
    gateway = await startTestGateway(configFor(providers[2].provider(server.url), providers[2].model), { OPENAI_API_KEY: 'sk-test-key' });
    server.reply({ toolCall: { name: 'time_now', args: {} } }, { text: 'It is late.' }, { text: 'Still late.' });
    await ask('what time is it?');
    await ask('and now?');
    const [first, second, third] = server.requests.map((request) => request.body);
    expect(first.system.at(-1).cache_control).toEqual({ type: 'ephemeral' });
    expect(first.messages.at(-1).content.at(-1).cache_control).toEqual({ type: 'ephemeral' });
    // The tools and system text are the same bytes on every call, so the cached prefix matches.
    for (const body of [second, third]) {
      expect(JSON.stringify(body.tools)).toBe(JSON.stringify(first.tools));
      expect(JSON.stringify(body.system)).toBe(JSON.stringify(first.system));
    }
    // The next run starts with the first run's messages unchanged (but for where its breakpoint sits).
    const strip = (messages: any[]) =>
      JSON.stringify(
        messages.map((message) => ({ ...message, content: message.content.map(({ cache_control: _, ...part }: any) => part) })),
      );
    expect(strip(third.messages.slice(0, second.messages.length))).toBe(strip(second.messages));
  });

  it('openai: no breakpoints are sent (its cache is automatic), and the system text leads every request', async () => {
    gateway = await startTestGateway(configFor(providers[0].provider(server.url), providers[0].model), { OPENAI_API_KEY: 'sk-test-key' });
    server.reply({ text: 'one' }, { text: 'two' });
    await ask('first');
    await ask('second');
    const [first, second] = server.requests.map((request) => request.body);
    expect(JSON.stringify(first)).not.toContain('cache_control');
    expect(second.messages[0]).toEqual(first.messages[0]);
    expect(JSON.stringify(second.messages.slice(0, first.messages.length))).toBe(JSON.stringify(first.messages));
  });

  it('a tool is offered from the step where it can succeed: subagents and sessions_send after the first spawn', async () => {
    gateway = await startTestGateway(configFor(providers[0].provider(server.url), providers[0].model), { OPENAI_API_KEY: 'sk-test-key' });
    server.reply(
      { toolCall: { name: 'sessions_spawn', args: { task: 'look into it' } } },
      { text: 'on it' },
      { text: 'child done' },
      { text: 'passed on' },
    );
    await ask('delegate this');
    // The child's run calls the same server, and may do so before the parent's second step: only the parent's requests count.
    const parentRequests = server.requests.filter((request) => JSON.stringify(request.body).includes('delegate this'));
    const [before, after] = parentRequests.map((request) => providers[0].toolsOf(request.body) as string[]);
    expect(before).not.toContain('subagents');
    expect(before).not.toContain('sessions_send');
    // A tool the session may not use (board_complete lives in board sessions) is never sent.
    expect(before).not.toContain('board_complete');
    expect(after).not.toContain('board_complete');
    expect(after).toContain('subagents');
    expect(after).toContain('sessions_send');
  });
});

describe('tool definitions on the wire', () => {
  // Every byte of them is sent again with every model call. Measured on 2026-12-05: 1,000 bytes for an agent with the
  // session tools, 1,144 with a workspace, exec, memory and a six-tool MCP server; the lookups (tools.defer), the
  // workspace, exec, memory and MCP tools are named in tools_load's description, and sessions_wait is not offered once
  // the reply is in hand. A description put back on a tool whose name says it all is about 40 bytes more, and fails this.
  const agentToAgent = 'tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },';
  const mcp = {
    command: process.execPath,
    args: ['--import', 'tsx', join(ROOT, 'test/helpers/mcp-server.ts'), 'stdio'],
    cwd: ROOT,
  };
  const names = (request: { body: any }) => request.body.tools.map((tool: any) => tool.function.name);

  it.each([
    { name: 'the session tools', everyTool: false, most: 1_000 },
    { name: 'every tool on (workspace, exec, memory, an MCP server)', everyTool: true, most: 1_144 },
  ])(
    'tool definitions: at most the bytes measured per call, with $name',
    async ({ everyTool, most }) => {
      const workspace = mkdtempSync(join(tmpdir(), 'sb-tool-bytes-'));
      mkdirSync(join(workspace, 'memory'));
      const extra = everyTool ? `, workspace: ${JSON.stringify(workspace)}, exec: { enabled: true }, mcp: ["tools"]` : '';
      gateway = await startTestGateway(
        `{
        ${agentToAgent}
        agents: { list: [{ id: "a", model: "fake/m"${extra} }, { id: "b", model: "fake/m"${extra} }] },
        ${everyTool ? `mcp: { servers: { tools: ${JSON.stringify(mcp)} } },` : ''}
        models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } },
      }`,
      );
      server.reply(
        { toolCall: { name: 'sessions_send', args: { agentId: 'b', message: 'question', timeoutSeconds: 30 } } },
        { text: 'the answer' },
        { text: 'b said: the answer' },
      );
      const sent = await gateway.send({ target: 'agent:a:main', message: 'ask b' });
      expect(await gateway.waitForInput(sent.input.id, 30_000)).toMatchObject({ status: 'completed', reply: 'b said: the answer' });
      const bytes = server.requests.map((request) => Buffer.byteLength(JSON.stringify(request.body.tools)));
      expect(bytes).toHaveLength(3);
      // a's first call, b's call, and a's second call: its send's reply is in hand, so nothing for sessions_wait.
      expect(server.requests.map(names)).toEqual(Array(3).fill(['time_now', 'sessions_send', 'sessions_spawn', 'tools_load']));
      expect(Math.max(...bytes)).toBeLessThanOrEqual(most);
      // Near the bound, so that it says something.
      expect(Math.max(...bytes)).toBeGreaterThan(most - 40);
      for (const request of server.requests) {
        // "auto" is the default with tools: not sent.
        expect(request.body).not.toHaveProperty('tool_choice');
        // OpenAI refuses an object schema without properties, also for a tool without arguments.
        for (const tool of request.body.tools) expect(tool.function.parameters).toMatchObject({ type: 'object', properties: {} });
      }
      const send = server.requests[2].body.tools.find((tool: any) => tool.function.name === 'sessions_send').function;
      expect(send.parameters).toEqual({
        type: 'object',
        properties: {
          agentId: { type: 'string' },
          sessionKey: { type: 'string' },
          message: { type: 'string' },
          timeoutSeconds: { type: 'number' },
        },
        required: ['message'],
      });
    },
    30_000,
  );
  it('sessions_wait is offered while a reply is still to come: after a send that did not wait, until the reply is taken', async () => {
    gateway = await startTestGateway(
      `{
      ${agentToAgent}
      agents: { list: [{ id: "a", model: "fake/m" }, { id: "b", model: "fake/m" }] },
      models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } },
    }`,
    );
    const b = 'agent:b:main';
    // a's next step and b's call race once a's send has not waited: each is answered by what it is, not by its turn.
    server.responder = (body) => {
      if (body.messages[0].content.startsWith('You are agent "b"')) return { text: 'the answer' };
      const called = body.messages.findLast((message: any) => message.role === 'assistant')?.tool_calls?.[0]?.function.name;
      if (body.messages.at(-1).role === 'user')
        return { toolCall: { name: 'sessions_send', args: { sessionKey: b, message: 'question', timeoutSeconds: 0 } } };
      if (called === 'sessions_send') return { toolCall: { name: 'sessions_wait', args: { sessionKeys: [b], timeoutMs: 30_000 } } };
      return { text: 'b said: the answer' };
    };
    const sent = await gateway.send({ target: 'agent:a:main', message: 'ask b, then wait' });
    expect(await gateway.waitForInput(sent.input.id, 30_000)).toMatchObject({ status: 'completed', reply: 'b said: the answer' });
    const ofA = server.requests.filter((request) => JSON.stringify(request.body).includes('ask b, then wait')).map(names);
    expect(ofA).toEqual([
      ['time_now', 'sessions_send', 'sessions_spawn', 'tools_load'],
      ['time_now', 'sessions_send', 'sessions_wait', 'sessions_spawn', 'tools_load'],
      ['time_now', 'sessions_send', 'sessions_wait', 'sessions_spawn', 'tools_load'],
    ]);
    // Once the wait took the reply, the session's next run is not offered sessions_wait.
    server.responder = undefined;
    server.reply({ text: 'done' });
    await gateway.waitForInput((await gateway.send({ target: 'agent:a:main', message: 'anything else?' })).input.id, 30_000);
    expect(names(server.requests.at(-1)!)).toEqual(['time_now', 'sessions_send', 'sessions_spawn', 'tools_load']);
  }, 30_000);

  it('a deferred lookup the model calls without loading it runs; a reload of tools.defer applies at the next run, sessions_spawn too', async () => {
    const config = (defer: string) => `{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } ${defer} },
      agents: { list: [{ id: "a", model: "fake/m" }, { id: "b", model: "fake/m" }] },
      models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } },
    }`;
    gateway = await startTestGateway(config(''));
    server.reply({ toolCall: { name: 'agents_list', args: {} } }, { text: 'there is b' }, { text: 'ok' });
    const listed = await gateway.waitForInput((await gateway.send({ target: 'agent:a:main', message: 'who is there?' })).input.id, 30_000);
    expect(listed).toMatchObject({ status: 'completed' });
    // The call ran: its result went back to the model. The session's later runs are sent agents_list whole.
    const second = server.requests.at(-1)!;
    expect(JSON.parse(second.body.messages.at(-1).content).agents).toHaveLength(2);
    expect(names(second)).toEqual(['time_now', 'sessions_send', 'sessions_spawn', 'tools_load']);
    await gateway.waitForInput((await gateway.send({ target: 'agent:a:main', message: 'again' })).input.id, 30_000);
    expect(names(server.requests.at(-1)!)).toEqual(['time_now', 'agents_list', 'sessions_send', 'sessions_spawn', 'tools_load']);

    // Reloaded: the lookups whole again, and sessions_spawn (an agent's own tool) named in tools_load instead.
    const plan = gateway.reloadConfig(parseConfigText(config(', defer: ["sessions_spawn"]'), '/reload.json5', {}).config);
    expect(plan.applied).toEqual(['tools']);
    server.reply({ text: 'ok' });
    await gateway.waitForInput((await gateway.send({ target: 'agent:b:main', message: 'hi' })).input.id, 30_000);
    const reloaded = server.requests.at(-1)!;
    expect(names(reloaded)).toEqual([
      'time_now',
      'agents_list',
      'sessions_list',
      'sessions_history',
      'session_status',
      'sessions_send',
      'tools_load',
    ]);
    expect(reloaded.body.tools.at(-1).function.description).toBe('Load tools before use: sessions_spawn');
  }, 30_000);
});
