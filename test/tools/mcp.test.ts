/**
 * MCP tool servers built in the test with the same SDK, over stdio and Streamable HTTP: an agent's model lists and
 * calls their tools; a killed server fails the next call cleanly and is back for the call after; list_changed is
 * seen; a denied tool never reaches the model's request (asserted on the wire); an effect is not repeated by a retry.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { ToolContext } from '../../src/ports/tools.js';
import { McpConnection } from '../../src/mcp/connection.js';
import { McpService } from '../../src/mcp/mcp-tools.js';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { BIN, ROOT, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { formatTraceparent, runTrace, toolSpanContext } from '../../src/kit/trace-context.js';

const SERVER = join(ROOT, 'test/helpers/mcp-server.ts');
const stdio = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: ['--import', 'tsx', SERVER, 'stdio'],
  cwd: ROOT,
  env,
});

let gateway: Gateway | undefined;
let service: McpService | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  await service?.stop();
  for (const child of children.splice(0)) child.kill('SIGKILL');
  gateway = undefined;
  service = undefined;
});

async function httpServer(port = 0): Promise<{ child: ChildProcess; url: string; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER, 'http', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const bound = Number(/listening (\d+)/.exec(line.toString())![1]);
  return { child, url: `http://127.0.0.1:${bound}/mcp`, port: bound };
}

const scripted = (rules: string) => `models: { providers: { scripted: { type: "scripted", models: { m: { rules: [${rules}] } } } } }`;
const callRule = (tool: string, args = '{}') =>
  `{ match: "^${tool}$", steps: [{ toolCalls: [{ tool: "mcp__local__${tool}", args: ${args} }] }, { text: "{{tool.mcp__local__${tool}}}" }] }`;

async function ask(g: Gateway, message: string): Promise<string> {
  const sent = await g.send({ target: 'agent:main:main', message });
  const result = await g.waitForInput(sent.input.id, 30_000);
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return result.reply ?? '';
}

describe('MCP servers as tools', () => {
  it("a call carries the calling span's trace context in params._meta.traceparent", async () => {
    const config = `{
      mcp: { servers: { local: ${JSON.stringify(stdio({ MCP_TRACE_TOOL: '1' }))} } },
      agents: { list: [{ id: "main", model: "scripted/m", mcp: ["local"] }] },
      ${scripted(callRule('traceparent'))},
    }`;
    gateway = await startTestGateway(config);
    const sent = await gateway.send({ target: 'agent:main:main', message: 'traceparent' });
    const result = await gateway.waitForInput(sent.input.id, 30_000);
    const runId = (await gateway.inputRunId(sent.input.id))!;
    const run = runTrace(runId, [{ id: sent.input.id, provenance: {} }]).context;
    // The execute_tool span of the call: step 0, the first call of the step.
    expect(result).toMatchObject({ status: 'completed', reply: formatTraceparent(toolSpanContext(run, runId, 0, 0)) });
  });

  it('stdio: the agent is offered the tools as mcp__<server>__<tool> and calls them; a killed server fails one call cleanly, then is back', async () => {
    const config = `{
      mcp: { servers: { local: ${JSON.stringify(stdio())} } },
      agents: { list: [{ id: "main", model: "scripted/m", mcp: ["local"] }] },
      ${scripted([callRule('echo', '{ text: "hi" }'), callRule('pid'), callRule('add', '{ a: 2, b: 3 }')].join(','))},
    }`;
    gateway = await startTestGateway(config);
    expect(await ask(gateway, 'echo')).toBe('echo: hi');
    const names = (await gateway.toolsOf('agent:main:main')).map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__local__echo', 'mcp__local__add', 'mcp__local__bump', 'mcp__local__reveal']));
    expect(await ask(gateway, 'add')).toBe('5');

    const pid = Number(await ask(gateway, 'pid'));
    process.kill(pid, 'SIGKILL');
    const failed = JSON.parse(await ask(gateway, 'echo'));
    expect(failed).toMatchObject({
      status: 'error',
      code: 'MCP_UNAVAILABLE',
      error: expect.stringMatching(/^MCP server "local" is down: .*; it is started again with backoff \(next try in \d+s\)/),
    });
    // Started again in the background after the backoff: the call after works, in a new process.
    const back = await waitUntil('the server is back', async () => {
      const answer = await ask(gateway!, 'pid');
      return /^\d+$/.test(answer) && Number(answer);
    });
    expect(back).not.toBe(pid);
    expect(await ask(gateway, 'echo')).toBe('echo: hi');
  }, 60_000);

  it('one death is one failure: a server that dies during a call is down once, with the first backoff, not twice', async () => {
    const logged: string[] = [];
    const connection = new McpConnection(
      'local',
      configSchema.parse({ agents: { list: [{ id: 'a' }] }, mcp: { servers: { local: stdio({ MCP_DIE_TOOL: '1' }) } } }).mcp.servers.local,
      {
        maxBackoffMs: 30_000,
        log: (line) => logged.push(line),
      },
    );
    try {
      expect((await connection.listTools()).map((tool) => tool.name)).toContain('die');
      await expect(connection.call('die', {}, new AbortController().signal, 10_000)).rejects.toThrow(
        // The seconds left of the backoff depend on how long the call took to fail; the log line below says the backoff.
        /^MCP server "local" is down: .*; it is started again with backoff \(next try in \d+s\)/,
      );
      // The SDK reports the closed connection and then fails the call in flight: both are this one death.
      const down = logged.filter((line) => line.includes('is down'));
      expect(down).toHaveLength(1);
      expect(down[0]).toMatch(/^MCP server "local" is down: .*; next try in 500 ms$/);
      // Back after the backoff (a start that works resets it): the next death is again one failure, not a doubled pause.
      await waitUntil('the server is back', () => connection.state.state === 'up', 30_000);
      await expect(connection.call('die', {}, new AbortController().signal, 10_000)).rejects.toThrow(/is down/);
      expect(logged.filter((line) => line.includes('is down')).map((line) => /next try in (\d+) ms$/.exec(line)?.[1])).toEqual([
        '500',
        '500',
      ]);
    } finally {
      await connection.close();
    }
  }, 60_000);

  it('list_changed: a tool the server adds is offered from the next run on', async () => {
    const config = `{
      mcp: { servers: { local: ${JSON.stringify(stdio())} } },
      agents: { list: [{ id: "main", model: "scripted/m", mcp: ["local"] }] },
      ${scripted([callRule('reveal'), callRule('late')].join(','))},
    }`;
    gateway = await startTestGateway(config);
    expect(await ask(gateway, 'reveal')).toBe('revealed');
    await waitUntil('late is offered', async () =>
      (await gateway!.toolsOf('agent:main:main')).some((tool) => tool.name === 'mcp__local__late'),
    );
    expect(await ask(gateway, 'late')).toBe('late answer');
  }, 30_000);

  it('HTTP: through the guarded fetch (a loopback server needs allowPrivate); killed, then back on its port', async () => {
    const server = await httpServer();
    const refused = new McpService(configSchema.parse({ agents: { list: [{ id: 'a' }] }, mcp: { servers: { web: { url: server.url } } } }));
    await expect(refused.connection('web').connect()).rejects.toThrow(
      /^MCP server "web" is down: "http:\/\/127\.0\.0\.1:\d+\/mcp" resolves to 127\.0\.0\.1, a private, loopback or link-local address; only public targets are allowed unless mcp\.servers\.web\.allowPrivate is set/,
    );
    await refused.stop();
    service = new McpService(
      configSchema.parse({
        agents: { list: [{ id: 'a', mcp: ['web'] }] },
        mcp: { servers: { web: { url: server.url, allowPrivate: true } } },
      }),
    );
    const tools = await service.toolsFor('a');
    const add = tools.find((tool) => tool.name === 'mcp__web__add')!;
    const context = { signal: new AbortController().signal } as ToolContext;
    expect(await add.execute({ a: 1, b: 2 }, context)).toBe('3');
    server.child.kill('SIGKILL');
    await once(server.child, 'exit');
    expect(await add.execute({ a: 1, b: 2 }, context)).toMatchObject({ status: 'error', code: 'MCP_UNAVAILABLE' });
    await httpServer(server.port);
    expect(await waitUntil('back', async () => (await add.execute({ a: 2, b: 2 }, context)) === '4')).toBe(true);
  }, 30_000);

  it('a denied MCP tool is never in the request the model receives, not even by name; the others are loaded by name, then sent whole', async () => {
    const provider = await new FakeProviderServer().start();
    try {
      const config = `{
        mcp: { servers: { local: ${JSON.stringify(stdio())} }, maxDescriptionChars: 40 },
        agents: { list: [{ id: "main", model: "fake/m", mcp: ["local"], tools: { deny: ["mcp__local__secret"] } }] },
        models: { providers: { fake: { type: "openai-compatible", baseURL: "${provider.url}/v1" } } },
      }`;
      gateway = await startTestGateway(config);
      provider.reply(
        { toolCall: { name: 'tools_load', args: { names: ['mcp__local__echo', 'mcp__local__secret'] } } },
        { toolCall: { name: 'mcp__local__echo', args: { text: 'wire' } } },
        { text: 'done' },
        { toolCall: { name: 'mcp__local__echo', args: { text: 'again' } } },
        { text: 'done again' },
      );
      expect(await ask(gateway, 'go')).toBe('done');
      const tools = (index: number) =>
        provider.requests[index].body.tools as { function: { name: string; description: string; parameters: unknown } }[];
      const names = (index: number) => tools(index).map((tool) => tool.function.name);
      // First call: the MCP tools only as names in tools_load's description, the denied one not even there.
      expect(names(0)).not.toContain('mcp__local__echo');
      const catalogue = tools(0).find((tool) => tool.function.name === 'tools_load')!.function.description;
      expect(catalogue).toBe('Load tools before use: mcp__local__{echo,add,bump,pid,reveal}');
      // The load answers what it loaded and refuses what this agent does not have, with the reason.
      expect(JSON.parse(provider.requests[1].body.messages.at(-1).content)).toMatchObject({
        loaded: [{ name: 'mcp__local__echo' }],
        refused: [{ name: 'mcp__local__secret', reason: expect.stringContaining('the tool policy leaves it out') }],
      });
      const echo = tools(1).find((tool) => tool.function.name === 'mcp__local__echo')!;
      expect(echo.function.description).toHaveLength(40);
      expect(echo.function.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
      expect(JSON.stringify(provider.requests[2].body.messages)).toContain('echo: wire');
      for (const request of provider.requests) expect(JSON.stringify(request.body.tools ?? [])).not.toContain('secret');
      // The session's next run is sent echo whole from its first call: its history loaded it.
      expect(await ask(gateway, 'again')).toBe('done again');
      expect(names(3)).toContain('mcp__local__echo');
      expect(tools(3).find((tool) => tool.function.name === 'tools_load')!.function.description).toBe(
        'Load tools before use: mcp__local__{add,bump,pid,reveal}',
      );
    } finally {
      await provider.close();
    }
  }, 30_000);

  it('a server that never answers its start does not hold runs past mcp.startTimeoutSeconds; its tools are simply not offered', async () => {
    const config = `{
      mcp: { servers: { mute: { command: "sleep", args: ["30"] } }, startTimeoutSeconds: 1 },
      agents: { list: [{ id: "main", model: "scripted/m", mcp: ["mute"] }] },
      ${scripted('{ reply: "answered without it" }')},
    }`;
    gateway = await startTestGateway(config);
    const started = Date.now();
    expect(await ask(gateway, 'hello')).toBe('answered without it');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await gateway.toolsOf('agent:main:main')).filter((tool) => tool.name.startsWith('mcp__'))).toEqual([]);
  }, 30_000);

  it("a tool with an effect is not called again by a crashed run's retry unless the server marks it idempotent", async () => {
    const bumps = join(mkdtempSync(join(tmpdir(), 'sb-mcp-')), 'bumps.log');
    service = new McpService(
      configSchema.parse({ agents: { list: [{ id: 'a', mcp: ['local'] }] }, mcp: { servers: { local: stdio({ MCP_BUMP_FILE: bumps }) } } }),
    );
    const bump = (await service.toolsFor('a')).find((tool) => tool.name === 'mcp__local__bump')!;
    expect(bump.effects).toBe(true);
    let recorded: unknown;
    const context = {
      signal: new AbortController().signal,
      beginEffect: async (intent: unknown) =>
        recorded === undefined ? ((recorded = intent), undefined) : { state: 'started' as const, recorded },
    } as unknown as ToolContext;
    expect(await bump.execute({}, context)).toBe('bumped');
    expect(await bump.execute({}, context)).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/is not marked idempotent, so it is not called a second time/),
    });
    expect(readFileSync(bumps, 'utf8').trim().split('\n')).toHaveLength(1);
    expect((await service.toolsFor('a')).find((tool) => tool.name === 'mcp__local__echo')!.effects).toBeUndefined();
  }, 30_000);
});

describe('switchboard mcp', () => {
  it("lists the servers with the agents that attach them, lists a server's tools, calls one, and refuses bad input exactly", async () => {
    const { configPath } = tempConfig(`{
      mcp: { servers: { local: ${JSON.stringify(stdio())} } },
      agents: { list: [{ id: "main", model: "scripted/m", mcp: ["local"] }] },
      ${scripted('{ reply: "x" }')},
    }`);
    const cli = (...args: string[]) => promisify(execFile)(process.execPath, [BIN, '--config', configPath, 'mcp', ...args], { cwd: ROOT });
    expect((await cli('list')).stdout).toBe(`local  stdio  ${process.execPath} --import tsx ${SERVER} stdio  agents: main\n`);
    expect((await cli('tools', 'local')).stdout).toContain('mcp__local__add  Add two numbers.\n');
    expect((await cli('call', 'local', 'add', '{"a": 1, "b": 41}')).stdout).toBe('42\n');
    await expect(cli('call', 'nope', 'add')).rejects.toMatchObject({
      stderr: 'switchboard: unknown MCP server "nope" (configured: local)\n',
    });
    await expect(cli('call', 'local', 'add', '[1, 2]')).rejects.toMatchObject({
      stderr: `switchboard: the arguments must be a JSON object, e.g. '{"text": "hi"}'\n`,
    });
  }, 30_000);
});
