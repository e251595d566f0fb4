/**
 * Switchboard as an MCP server (docs/mcp-server.md), driven by the MCP SDK's own clients over Streamable HTTP against
 * a real gateway (its control API on port 0, the deterministic `scripted` models): the v2 client on the 2026-07-28
 * protocol, and the 1.x client the gateway's own MCP client uses, on the 2025 handshake.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningGateway, serveGateway } from '../../src/app.js';
import type { BoardService } from '../../src/board/board.js';
import { createMcpHttpFront } from '../../src/mcp-server/mcp-http.js';
import { bridgeStdio } from '../../src/mcp-server/stdio-bridge.js';
import type { McpGateway } from '../../src/mcp-server/switchboard-mcp.js';
import { tempConfig } from '../helpers/process.js';

const { configPath } = tempConfig(`{
  agents: { list: [
    { id: "echo", model: "scripted/echo", subagents: { allowAgents: ["helper"] } },
    { id: "helper", model: "scripted/helper" },
    { id: "hidden", model: "scripted/echo" },
  ] },
  mcpServer: { caller: "tester", agents: ["echo", "helper"] },
  models: { providers: { scripted: { type: "scripted", models: {
    echo: { rules: [{ match: "^take your time", reply: "slow: {{input}}", delayMs: 3000 }, { reply: "echo: {{input}}" }], chunkChars: 4 },
    helper: { rules: [{ reply: "done: {{input}}" }] },
  } } } },
}`);

let gw: RunningGateway;
const clients: { close(): Promise<void> }[] = [];

/** The v2 client; `auto` probes for the 2026-07-28 protocol (`legacy`, its default, opens with the 2025 handshake). */
async function connect(mode: 'auto' | 'legacy' = 'auto'): Promise<Client> {
  const client = new Client({ name: 'switchboard-test', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { authProvider: { token: async () => gw.token } }));
  clients.push(client);
  return client;
}

/** A tool's answer: its structured content, or its error text. */
function parsed(result: { isError?: boolean; content?: unknown; structuredContent?: unknown }) {
  if (result.isError) return { error: (result.content as { text: string }[])[0].text };
  return result.structuredContent as Record<string, unknown>;
}

beforeAll(async () => {
  gw = await serveGateway({ configPath, port: 0, logLevel: 'silent', version: '9.9.9' });
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  await gw?.stop();
});

describe('Switchboard as an MCP server over Streamable HTTP', () => {
  it('the token is required: /mcp without it is 401 and says how to get one', async () => {
    const answer = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect([answer.status, await answer.json()]).toEqual([
      401,
      {
        error: {
          code: 'UNAUTHORIZED',
          message:
            'missing bearer token: send "Authorization: Bearer <token>" (print it with "switchboard --config <file> token", <file> being the config this gateway was started with)',
        },
      },
    ]);
  });

  it('the 2025-era versions the SDK serves are the ones docs/mcp-server.md names (an upgrade that changes them fails here)', () => {
    expect([LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS]).toEqual([
      '2025-11-25',
      ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'],
    ]);
  });

  it('list_agents: the v2 client negotiates 2026-07-28 and sees only the agents mcpServer.agents lets it reach', async () => {
    const client = await connect();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'board_claim_task',
      'board_complete_task',
      'board_create_task',
      'list_agents',
      'send_message',
      'spawn_subagent',
    ]);
    expect(parsed(await client.callTool({ name: 'list_agents', arguments: {} }))).toEqual({
      agents: [
        { id: 'echo', name: null, description: null, model: 'scripted/echo', default: true },
        { id: 'helper', name: null, description: null, model: 'scripted/helper', default: false },
      ],
    });
  });

  it("send_message: waits for the reply with progress notifications, in the caller's own session, stamped with its id", async () => {
    const client = await connect();
    const progress: { progress: number; message?: string }[] = [];
    const result = await client.callTool(
      { name: 'send_message', arguments: { agent: 'echo', message: 'hello there' } },
      { onprogress: (update) => progress.push(update) },
    );
    const answer = parsed(result);
    expect(answer).toMatchObject({ status: 'ok', reply: 'echo: hello there', sessionKey: 'agent:echo:mcp:direct:tester', repeated: false });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toEqual({ progress: 1, message: 'agent:echo:mcp:direct:tester: run started' });
    const { input } = await gw.gateway.getRun(answer.runId as string).then((run) => ({ input: run.inputs[0] }));
    expect(input.provenance).toEqual({ kind: 'user', channel: 'mcp', peer: 'tester' });
  });

  it('send_message: a retry with the same idempotencyKey answers the first call and stores no second input', async () => {
    const client = await connect();
    const call = { name: 'send_message', arguments: { agent: 'echo', message: 'once only', idempotencyKey: 'k-1' } };
    const first = parsed(await client.callTool(call));
    const again = parsed(await client.callTool(call));
    expect(again).toEqual({ ...first, repeated: true });
    const inputs = (await gw.gateway.history('agent:echo:mcp:direct:tester')).filter(
      (entry) => entry.role === 'user' && JSON.stringify(entry.content).includes('once only'),
    );
    expect(inputs).toHaveLength(1);
  });

  it('send_message: a key given again with another message is refused, and the new message is not answered with the old reply', async () => {
    const client = await connect();
    const first = parsed(
      await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'review v1', idempotencyKey: 'review' } }),
    );
    expect(first).toMatchObject({ status: 'ok', reply: 'echo: review v1' });
    expect(
      parsed(await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'review v2', idempotencyKey: 'review' } })),
    ).toEqual({
      error: `IDEMPOTENCY_KEY_REUSED: idempotencyKey "review" was already used for the message that is input ${first.inputId} in agent:echo:mcp:direct:tester; a key names one call: give a new key for a new call, and the same key with the same arguments only to retry`,
    });
    // A true retry (the same arguments) is still answered from the first call.
    expect(
      parsed(await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'review v1', idempotencyKey: 'review' } })),
    ).toEqual({ ...first, repeated: true });
    const texts = (await gw.gateway.history('agent:echo:mcp:direct:tester')).map((entry) => JSON.stringify(entry.content));
    expect([texts.filter((text) => text.includes('review v1')).length > 0, texts.some((text) => text.includes('review v2'))]).toEqual([
      true,
      false,
    ]);
  });

  it("send_message: a client that goes away stops the tool's wait (the run goes on)", async () => {
    // The real gateway behind a door that notes when a wait ends without the answer (the tool then makes the input durable).
    const waitsGivenUp: number[] = [];
    const door = new Proxy(gw.gateway, {
      get(target, key) {
        if (key === 'durable') return () => (waitsGivenUp.push(Date.now()), target.durable());
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as McpGateway;
    // send_message does not touch the board. A session of its own (agent:echo:main), so that the run left going on
    // holds up no other test's.
    const front = createMcpHttpFront({ gateway: door, board: undefined as unknown as BoardService, version: '9.9.9' });
    const server: Server = createServer((request, response) => void front.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const leave = new AbortController();
    const client = new Client({ name: 'leaving', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), {
          fetch: (url, init) => fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, leave.signal]) : leave.signal }),
        }),
      );
      let started!: () => void;
      const runStarted = new Promise<void>((resolve) => (started = resolve));
      const call = client.callTool(
        { name: 'send_message', arguments: { agent: 'agent:echo:main', message: 'take your time', timeoutSeconds: 30 } },
        { onprogress: () => started() },
      );
      call.catch(() => {});
      await runStarted;
      const left = Date.now();
      leave.abort();
      // Well before the run's answer (3 s) and the call's own timeout (30 s).
      await vi.waitFor(() => expect(waitsGivenUp).toHaveLength(1), { timeout: 1500, interval: 20 });
      expect(waitsGivenUp[0] - left).toBeLessThan(1500);
    } finally {
      await client.close().catch(() => {});
      await front.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('send_message: an unknown agent is a tool error that lists the agents the caller can reach', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'send_message', arguments: { agent: 'nope', message: 'hi' } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      {
        type: 'text',
        text: 'AGENT_NOT_FOUND: unknown agent "nope": the agents you can reach are echo, helper; call list_agents to see them',
      },
    ]);
    // A configured agent outside mcpServer.agents is refused the same way.
    expect(parsed(await client.callTool({ name: 'send_message', arguments: { agent: 'hidden', message: 'hi' } }))).toEqual({
      error: 'AGENT_NOT_FOUND: unknown agent "hidden": the agents you can reach are echo, helper; call list_agents to see them',
    });
  });

  it('send_message: a timeout above mcpServer.maxWaitSeconds is refused with the cap named', async () => {
    const client = await connect();
    expect(
      parsed(await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'hi', timeoutSeconds: 99_999 } })),
    ).toEqual({
      error:
        'INVALID_REQUEST: timeoutSeconds is 99999; the most this server waits is 1800 (mcpServer.maxWaitSeconds): ask for less, and call again with the same idempotencyKey to keep waiting',
    });
  });

  it("spawn_subagent: spawns from the caller's session, waits for the result, and a retry answers the same sub-agent", async () => {
    const client = await connect();
    const progress: unknown[] = [];
    const call = {
      name: 'spawn_subagent',
      arguments: { agent: 'echo', subagentAgent: 'helper', task: 'sum 2 and 2', label: 'adder', idempotencyKey: 's-1' },
    };
    const answer = parsed(await client.callTool(call, { onprogress: (update) => progress.push(update) }));
    expect(answer).toMatchObject({ status: 'ok', state: 'succeeded', result: 'done: sum 2 and 2', repeated: false });
    expect(answer.sessionKey).toMatch(/^agent:helper:subagent:/);
    const { view } = await gw.gateway.getSubagent(answer.subagentId as string);
    expect([view.parentSessionKey, view.label]).toEqual(['agent:echo:mcp:direct:tester', 'adder']);
    expect(parsed(await client.callTool(call))).toEqual({ ...answer, repeated: true });
  });

  it('spawn_subagent: a key given again with another task is refused rather than answered with the first sub-agent', async () => {
    const client = await connect();
    const first = parsed(
      await client.callTool({
        name: 'spawn_subagent',
        arguments: { agent: 'echo', subagentAgent: 'helper', task: 'count to 3', idempotencyKey: 's-2' },
      }),
    );
    expect(first).toMatchObject({ status: 'ok', result: 'done: count to 3' });
    expect(
      parsed(
        await client.callTool({
          name: 'spawn_subagent',
          arguments: { agent: 'echo', subagentAgent: 'helper', task: 'count to 4', idempotencyKey: 's-2' },
        }),
      ),
    ).toEqual({
      error: `IDEMPOTENCY_KEY_REUSED: idempotencyKey "s-2" was already used for sub-agent ${first.subagentId} (${first.sessionKey}), spawned with another task, agent or label; a key names one call: give a new key for a new call, and the same key with the same arguments only to retry`,
    });
  });

  it("spawn_subagent: the spawning agent's allowlist applies, and its refusal is a tool error naming the key", async () => {
    const client = await connect();
    expect(
      parsed(await client.callTool({ name: 'spawn_subagent', arguments: { agent: 'helper', subagentAgent: 'echo', task: 'not allowed' } })),
    ).toEqual({
      error:
        'SPAWN_DENIED: agent "helper" may not spawn sub-agents of agent "echo": it is not in agents.defaults.subagents.allowAgents (empty)',
    });
  });

  it('board: create (idempotent), claim and complete a task, and read its state as a resource', async () => {
    const client = await connect();
    const create = {
      name: 'board_create_task',
      arguments: { title: 'Write the notes', assignee: 'outside-worker', idempotencyKey: 'b-1' },
    };
    const made = parsed(await client.callTool(create)) as { task: { id: string; state: string }; created: boolean };
    expect([made.created, made.task.state]).toEqual([true, 'ready']);
    const again = parsed(await client.callTool(create)) as { task: { id: string }; created: boolean };
    expect([again.created, again.task.id]).toEqual([false, made.task.id]);
    const claimed = parsed(
      await client.callTool({ name: 'board_claim_task', arguments: { taskId: made.task.id, assignee: 'outside-worker' } }),
    ) as {
      claim: { token: number; worker: string };
    };
    expect(claimed.claim.worker).toBe('mcp:tester');
    const done = parsed(
      await client.callTool({
        name: 'board_complete_task',
        arguments: { taskId: made.task.id, token: claimed.claim.token, result: 'notes written' },
      }),
    ) as { task: { state: string; result: string } };
    expect([done.task.state, done.task.result]).toEqual(['done', 'notes written']);
    const resource = await client.readResource({ uri: `switchboard://board/tasks/${made.task.id}` });
    const view = JSON.parse((resource.contents[0] as { text: string }).text) as { task: { id: string; state: string; creator: string } };
    expect(view.task).toMatchObject({ id: made.task.id, state: 'done', creator: 'mcp:tester' });
  });

  it('board: a key given again for another task is refused, and a true retry still answers the first task', async () => {
    const client = await connect();
    const create = { name: 'board_create_task', arguments: { title: 'Tidy the docs', assignee: 'outside-worker', idempotencyKey: 'b-2' } };
    const made = parsed(await client.callTool(create)) as { task: { id: string }; created: boolean };
    expect(made.created).toBe(true);
    expect(parsed(await client.callTool({ ...create, arguments: { ...create.arguments, title: 'Tidy the tests' } }))).toEqual({
      error: `IDEMPOTENCY_KEY_REUSED: idempotencyKey "b-2" was already used for task ${made.task.id} ("Tidy the docs"), created with another title, body, assignee, board or priority; a key names one call: give a new key for a new call, and the same key with the same arguments only to retry`,
    });
    expect(parsed(await client.callTool(create))).toMatchObject({ created: false, task: { id: made.task.id } });
  });

  it('board: an agent outside mcpServer.agents can be neither the assignee of a new task nor the claim filter', async () => {
    const client = await connect();
    const refusal = {
      error: 'AGENT_NOT_FOUND: unknown agent "hidden": the agents you can reach are echo, helper; call list_agents to see them',
    };
    // Else the board's dispatcher would run "hidden" for the caller, and a claim would take the tasks meant for it.
    expect(parsed(await client.callTool({ name: 'board_create_task', arguments: { title: 'Deploy it', assignee: 'hidden' } }))).toEqual(
      refusal,
    );
    expect(parsed(await client.callTool({ name: 'board_claim_task', arguments: { assignee: 'hidden' } }))).toEqual(refusal);
    // An agent it reaches, and a worker's name, are let through.
    const forEcho = parsed(await client.callTool({ name: 'board_create_task', arguments: { title: 'Say hi', assignee: 'echo' } }));
    expect(forEcho).toMatchObject({ created: true, task: { assignee: 'echo' } });
    expect(parsed(await client.callTool({ name: 'board_claim_task', arguments: { assignee: 'nobody-yet' } }))).toEqual({ claim: null });
    // Nor can it read a task made for "hidden" by someone else (its body, result and comments).
    const made = (await fetch(`${gw.url}/v1/board/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'The secret plan', assignee: 'hidden' }),
    }).then((response) => response.json())) as { task: { id: string } };
    await expect(client.readResource({ uri: `switchboard://board/tasks/${made.task.id}` })).rejects.toThrow(
      'unknown agent "hidden": the agents you can reach are echo, helper',
    );
  });

  it("resources: a session's transcript by its key, and the caller's own session by the agent's id", async () => {
    const client = await connect();
    await client.callTool({ name: 'send_message', arguments: { agent: 'helper', message: 'for the transcript' } });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate).sort()).toEqual([
      'switchboard://board/tasks/{id}',
      'switchboard://sessions/{key}/transcript',
    ]);
    const byKey = await client.readResource({
      uri: `switchboard://sessions/${encodeURIComponent('agent:helper:mcp:direct:tester')}/transcript`,
    });
    const byAgent = await client.readResource({ uri: 'switchboard://sessions/helper/transcript' });
    const transcript = JSON.parse((byKey.contents[0] as { text: string }).text) as {
      sessionKey: string;
      entries: { role: string; content: unknown }[];
    };
    expect(transcript.sessionKey).toBe('agent:helper:mcp:direct:tester');
    expect(transcript.entries.map((entry) => entry.role)).toEqual(['user', 'assistant']);
    expect(JSON.stringify(transcript.entries[1].content)).toContain('done: for the transcript');
    expect(JSON.parse((byAgent.contents[0] as { text: string }).text)).toEqual(transcript);
  });

  it('resources: the transcript of an agent outside mcpServer.agents is refused, by session key or agent id, and not listed', async () => {
    await gw.gateway.send({ target: 'hidden', message: 'not for the caller' });
    const client = await connect();
    for (const key of ['agent:hidden:main', 'hidden'])
      await expect(client.readResource({ uri: `switchboard://sessions/${encodeURIComponent(key)}/transcript` })).rejects.toThrow(
        'unknown agent "hidden": the agents you can reach are echo, helper; call list_agents to see them',
      );
    const { resources } = await client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    expect(resources.filter((resource) => resource.uri.includes('hidden'))).toEqual([]);
  });

  it('a body over the control API bound (1 MiB) is answered 413 with a JSON-RPC error, and the connection stays usable', async () => {
    const headers = {
      authorization: `Bearer ${gw.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const call = (message: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'send_message', arguments: { agent: 'echo', message } },
      });
    const tooLarge = {
      jsonrpc: '2.0',
      error: { code: -32000, message: 'MESSAGE_TOO_LARGE: request body is larger than 1048576 bytes' },
      id: null,
    };
    // Sent in chunks, with no content-length to judge it by: read to its end and refused, not cut short.
    const body = new TextEncoder().encode(call('z'.repeat(5 * 1024 * 1024)));
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length; at += 64 * 1024) controller.enqueue(body.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });
    const streamed = await fetch(`${gw.url}/mcp`, { method: 'POST', headers, body: chunked, duplex: 'half' } as RequestInit);
    expect([streamed.status, await streamed.json()]).toEqual([413, tooLarge]);
    // With its content-length.
    const answer = await fetch(`${gw.url}/mcp`, { method: 'POST', headers, body: call('x'.repeat(5 * 1024 * 1024)) });
    expect([answer.status, await answer.json()]).toEqual([413, tooLarge]);
    // The SDK's client raises it as the call's error.
    const client = await connect();
    await expect(
      client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'y'.repeat(2 * 1024 * 1024) } }),
    ).rejects.toThrow('MESSAGE_TOO_LARGE: request body is larger than 1048576 bytes');
    expect(parsed(await client.callTool({ name: 'list_agents', arguments: {} }))).toMatchObject({
      agents: [{ id: 'echo' }, { id: 'helper' }],
    });
  });

  it("switchboard mcp serve's bridge answers the refused request by its id, so that the client is not left waiting", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const bridged = bridgeStdio({ url: `${gw.url}/mcp`, token: gw.token, unreachable: 'no gateway', stdin, stdout });
    const line = new Promise<string>((resolve) => {
      let text = '';
      stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
      });
    });
    const call = { name: 'send_message', arguments: { agent: 'echo', message: 'w'.repeat(2 * 1024 * 1024) } };
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: call })}\n`);
    expect(JSON.parse(await line)).toEqual({
      jsonrpc: '2.0',
      id: 41,
      error: { code: -32000, message: 'MESSAGE_TOO_LARGE: request body is larger than 1048576 bytes' },
    });
    stdin.end();
    await bridged;
  });

  it('the v2 client on the 2025 handshake (its default) is served too', async () => {
    const client = await connect('legacy');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(parsed(await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'legacy era' } }))).toMatchObject({
      status: 'ok',
      reply: 'echo: legacy era',
    });
  });

  it("the 1.x client (the SDK the gateway's own MCP client is on) negotiates the 2025 handshake and calls a tool", async () => {
    const client = new LegacyClient({ name: 'legacy-test', version: '1.0.0' });
    await client.connect(
      new LegacyHttpTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${gw.token}` } } }),
    );
    clients.push(client);
    expect(client.getServerVersion()).toMatchObject({ name: 'switchboard', version: '9.9.9' });
    const result = await client.callTool({ name: 'send_message', arguments: { agent: 'echo', message: 'from the past' } });
    expect((result.structuredContent as { reply: string }).reply).toBe('echo: from the past');
  });
});
