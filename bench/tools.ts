/**
 * What the tools for real work cost (docs/tools.md, docs/memory.md): the bytes a model call sends with every tool
 * enabled, on the wire against a fake OpenAI-compatible server; memory_search against a raw FTS5 query on the same
 * data; tool definitions with three MCP servers attached and one allowed; an MCP call through the gateway against the
 * same call with the SDK's client.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startGateway } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import { configSchema } from '../src/config/schema.js';
import type { ToolContext } from '../src/ports/tools.js';
import { McpService } from '../src/mcp/mcp-tools.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { percentile } from './judged.js';

/** The test MCP server (test/helpers/mcp-server.ts) on stdio, as a config entry. */
export const mcpServer = (root: string) => ({
  command: process.execPath,
  args: ['--import', 'tsx', join(root, 'test/helpers/mcp-server.ts'), 'stdio'],
  cwd: root,
});

/** Two workspaces with prompt files like the examples', and memory folders. */
function workspaces(): string {
  const base = mkdtempSync(join(tmpdir(), 'sb-bench-ws-'));
  for (const agent of ['a', 'b']) {
    mkdirSync(join(base, agent, 'memory'), { recursive: true });
    writeFileSync(
      join(base, agent, 'AGENTS.md'),
      `# ${agent}\nYou are agent ${agent}. Answer briefly; ask the other agent when you need its view.\n`,
    );
    writeFileSync(join(base, agent, 'SOUL.md'), 'Be precise and kind. Say what you do not know.\n');
    writeFileSync(join(base, agent, 'memory', 'notes.md'), '# Notes\nThe deploy runs on Fridays.\n');
  }
  return base;
}

/**
 * The waited send with five ping-pong turns and an announce, on a fake OpenAI-compatible server (the wire format
 * OpenClaw was measured on): the bytes of the HTTP request bodies of its nine model calls. `withTools`: both agents
 * have a workspace with prompt files, exec on, memory, and an MCP server attached.
 */
export async function wireBytes(
  root: string,
  withTools: boolean,
): Promise<{ bytes: number; calls: number; recorded: number; toolBytes: number }> {
  const { FakeProviderServer } = await import('../test/helpers/fake-provider.js');
  const server = await new FakeProviderServer().start();
  const base = withTools ? workspaces() : undefined;
  const agent = (id: string) =>
    withTools
      ? `{ id: "${id}", model: "fake/m", workspace: "${base}/${id}", exec: { enabled: true }, mcp: ["tools"] }`
      : `{ id: "${id}", model: "fake/m" }`;
  const { config } = parseConfigText(
    `{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxPingPongTurns: 5 } },
      agents: { list: [${agent('a')}, ${agent('b')}] },
      ${withTools ? `mcp: { servers: { tools: ${JSON.stringify(mcpServer(root))} } },` : ''}
      models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } },
    }`,
    '/bench-wire.json5',
    {},
  );
  const store = await SqliteStore.open({ path: ':memory:' });
  const gateway = await startGateway({ config, store, gatewayId: 'bench-wire' });
  const target = 'agent:b:bench:direct:p';
  // b's session has a channel (a user wrote to it), so the announce step runs.
  server.reply({ text: 'hello back' });
  await gateway.waitForInput((await gateway.send({ target, message: 'hello', inbound: { channel: 'bench', peer: 'p' } })).input.id, 30_000);
  const before = server.requests.length;
  const since = Date.now();
  server.reply(
    { toolCall: { name: 'sessions_send', args: { sessionKey: target, message: 'question', timeoutSeconds: 30 } } },
    { text: 'the answer' },
    { text: 'b said: the answer' },
    ...['a follows up', 'b follows up', 'a follows up again', 'b follows up again', 'a, last turn'].map((text) => ({ text })),
    { text: 'b announces the outcome' },
  );
  const requester = 'agent:a:bench:direct:p';
  await gateway.waitForInput((await gateway.send({ target: requester, message: 'ask b' })).input.id, 30_000);
  for (;;) {
    const [exchange] = await gateway.listExchanges({ sessionKey: requester });
    if (exchange?.phase === 'done') break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const requests = server.requests.slice(before);
  const runs = [...(await gateway.listRuns({ sessionKey: requester })), ...(await gateway.listRuns({ sessionKey: target }))].filter(
    (run) => run.startedAt >= since,
  );
  await gateway.stop();
  await store.close();
  await server.close();
  return {
    bytes: requests.reduce((sum, request) => sum + request.bytes, 0),
    calls: requests.length,
    recorded: runs.reduce((sum, run) => sum + run.request.bytes, 0),
    toolBytes: requests.reduce((sum, request) => sum + Buffer.byteLength(JSON.stringify(request.body.tools ?? [])), 0),
  };
}

const VOCABULARY = (
  'deploy rollback canary release tag database backup restore index query cache latency budget invoice customer refund ' +
  'policy escalation incident pager rota runbook kernel network firewall certificate token secret rotation audit review ' +
  'migration schema replica failover quorum lease fence epoch journal outbox retry backoff timeout queue lane worker'
).split(' ');

function words(count: number, seed: number): string {
  let state = seed;
  const out: string[] = [];
  for (let i = 0; i < count; i += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    out.push(VOCABULARY[state % VOCABULARY.length]!);
  }
  return out.join(' ');
}

/**
 * memory_search over `files` indexed Markdown files (SQLite, WAL, synchronous=FULL), against a raw FTS5 query on the
 * same database: the same words, bm25, the same limit, through better-sqlite3 directly.
 */
export async function memorySearch(
  files: number,
  queries: number,
): Promise<{ p50: number; p99: number; rawP50: number; rawP99: number; chunks: number }> {
  const BetterSqlite3 = (await import('better-sqlite3')).default;
  const { createMemoryTools } = await import('../src/memory/memory-tools.js');
  const path = join(mkdtempSync(join(tmpdir(), 'sb-bench-memory-')), 'store.db');
  const store = await SqliteStore.open({ path });
  for (let file = 0; file < files; file += 1) {
    const text = `# Note ${file}\n${words(40, file + 1)}\n\n## More\n${words(40, file + 7919)}\n`;
    const { chunkText } = await import('../src/memory/chunks.js');
    await store.memory.index(
      { agentId: 'a', path: `notes/${file}.md`, source: 'file', hash: String(file), bytes: text.length, modifiedAt: file },
      chunkText(text),
      file,
    );
  }
  const config = configSchema.parse({ agents: { list: [{ id: 'a', memory: {} }] } });
  const search = createMemoryTools(config, store.memory).find((tool) => tool.name === 'memory_search')!;
  const context = { agentId: 'a', clock: { now: () => Date.now() } } as unknown as ToolContext;
  const raw = new BetterSqlite3(path, { readonly: true });
  const statement = raw.prepare(
    'SELECT rowid, text, bm25(memory_fts) AS rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT 8',
  );
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let i = 0; i < queries; i += 1) {
    const query = words(2, 100_000 + i);
    let start = performance.now();
    await search.execute({ query }, context);
    ours.push(performance.now() - start);
    start = performance.now();
    statement.all(
      query
        .split(' ')
        .map((word) => `"${word}"`)
        .join(' OR '),
    );
    theirs.push(performance.now() - start);
  }
  const chunks = (raw.prepare('SELECT count(*) AS n FROM memory_chunks').get() as { n: number }).n;
  raw.close();
  await store.close();
  return { p50: percentile(ours, 50), p99: percentile(ours, 99), rawP50: percentile(theirs, 50), rawP99: percentile(theirs, 99), chunks };
}

/** Bytes of tool definitions in one model call: no MCP server, and three attached with one of them allowed. */
export async function mcpDefinitionBytes(root: string): Promise<{ none: number; threeOneAllowed: number; loaded: number }> {
  const { FakeProviderServer } = await import('../test/helpers/fake-provider.js');
  const server = await new FakeProviderServer().start();
  const measure = async (mcp: string, agentExtra: string, replies: object[]) => {
    const { config } = parseConfigText(
      `{ ${mcp} agents: { list: [{ id: "a", model: "fake/m" ${agentExtra} }] },
         models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } } }`,
      '/bench-mcp.json5',
      {},
    );
    const store = await SqliteStore.open({ path: ':memory:' });
    const gateway = await startGateway({ config, store, gatewayId: 'bench-mcp' });
    const before = server.requests.length;
    server.reply(...(replies as never[]));
    await gateway.waitForInput((await gateway.send({ target: 'agent:a:main', message: 'hi' })).input.id, 30_000);
    const sizes = server.requests.slice(before).map((request) => Buffer.byteLength(JSON.stringify(request.body.tools ?? [])));
    await gateway.stop();
    await store.close();
    return sizes;
  };
  const servers = `mcp: { servers: { s1: ${JSON.stringify(mcpServer(root))}, s2: ${JSON.stringify(mcpServer(root))}, s3: ${JSON.stringify(mcpServer(root))} } },`;
  const [none] = await measure('', '', [{ text: 'ok' }]);
  const [three, loaded] = await measure(servers, ', mcp: ["s1", "s2", "s3"], tools: { deny: ["mcp__s2__*", "mcp__s3__*"] }', [
    { toolCall: { name: 'tools_load', args: { names: ['mcp__s1__echo', 'mcp__s1__add'] } } },
    { text: 'ok' },
  ]);
  await server.close();
  return { none: none!, threeOneAllowed: three!, loaded: loaded! };
}

/**
 * One MCP tool call through the gateway's tool path (the run's tool set: argument check, ledger record for a tool with
 * effects, the shared connection) against the same call with the SDK's own client on its own connection.
 */
export async function mcpCallOverhead(root: string, calls: number): Promise<{ direct: number; readOnly: number; withLedger: number }> {
  const { runToolSet, CallPlaces } = await import('../src/gateway/tooling/run-tools.js');
  const direct = new Client({ name: 'bench', version: '1' });
  await direct.connect(new StdioClientTransport(mcpServer(root)));
  const config = configSchema.parse({ agents: { list: [{ id: 'a', mcp: ['s'] }] }, mcp: { servers: { s: mcpServer(root) } } });
  const service = new McpService(config);
  const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-bench-mcp-')), 'store.db') });
  const tools = await service.toolsFor('a');
  const settled: never[] = [];
  const set = runToolSet(
    {
      tools,
      toolContext: { runId: 'r', sessionKey: 'agent:a:main', agentId: 'a', workspace: undefined, clock: { now: () => Date.now() } },
      ledger: { store: store.toolCalls, scope: 'in-1', sessionKey: 'agent:a:main', runId: 'r', settled },
      signal: new AbortController().signal,
    },
    new CallPlaces(),
  );
  const time = async (call: (i: number) => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < calls; i += 1) {
      const start = performance.now();
      await call(i);
      times.push(performance.now() - start);
    }
    return percentile(times, 50);
  };
  const options = (i: number) => ({ toolCallId: `c${i}`, messages: [], abortSignal: undefined as never });
  // Interleaved rounds, so that the machine's noise falls on both alike.
  const rounds = { direct: [] as number[], readOnly: [] as number[], withLedger: [] as number[] };
  for (let round = 0; round < 3; round += 1) {
    rounds.direct.push(await time(() => direct.callTool({ name: 'echo', arguments: { text: 'x' } })));
    rounds.readOnly.push(await time((i) => set.mcp__s__echo!.execute!({ text: 'x' }, options(i))));
    rounds.withLedger.push(await time((i) => set.mcp__s__add!.execute!({ a: i, b: 1 }, options(i))));
  }
  await direct.close();
  await service.stop();
  await store.close();
  return {
    direct: percentile(rounds.direct, 50),
    readOnly: percentile(rounds.readOnly, 50),
    withLedger: percentile(rounds.withLedger, 50),
  };
}
