/**
 * Memory end to end on SQLite and PostgreSQL: the index follows the memory folders (scan at start, watch after),
 * memory_search ranks with provenance, grants work only when both sides agree and each refusal is exact, entries
 * are written once per call, and an empty source is a warning with its reason.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { ToolContext } from '../../src/ports/tools.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import type { Store } from '../../src/ports/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'sb-memory-')));
const schemas: string[] = [];
afterAll(() => dropSchemas(...schemas));

const stores: [string, () => Promise<Store>][] = [['sqlite', () => SqliteStore.open({ path: ':memory:' })]];
if (process.env.CI || (await postgresReachable()))
  stores.push([
    'postgres',
    () => {
      const schema = `sb_memory_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      return PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
    },
  ]);

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

function workspaces(name: string) {
  const root = join(base, name);
  for (const agent of ['ops', 'dev', 'guest']) mkdirSync(join(root, agent), { recursive: true });
  mkdirSync(join(root, 'ops', 'memory', 'runbooks'), { recursive: true });
  mkdirSync(join(root, 'ops', 'memory', 'private'), { recursive: true });
  writeFileSync(
    join(root, 'ops', 'memory', 'runbooks', 'deploy.md'),
    '# Deploy\nRun the deploy script.\nThen check the canary.\n\n# Rollback\nRevert the release tag.\n',
  );
  writeFileSync(join(root, 'ops', 'memory', 'private', 'oncall.md'), 'The deploy pager rota.\n');
  mkdirSync(join(root, 'dev', 'memory'));
  writeFileSync(join(root, 'dev', 'memory', 'notes.txt'), 'not markdown');
  return root;
}

const config = (root: string) => `{
  agents: { list: [
    { id: "ops", model: "scripted/m", workspace: "${root}/ops", memory: { shareWith: ["dev"] } },
    { id: "dev", model: "scripted/m", workspace: "${root}/dev", memory: { readFrom: [{ agent: "ops", paths: ["runbooks/"] }] } },
    { id: "guest", model: "scripted/m", workspace: "${root}/guest" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } },
}`;

async function tool(g: Gateway, agent: string, name: string) {
  const found = (await g.toolsOf(`agent:${agent}:main`)).find((candidate) => candidate.name === name);
  if (!found) throw new Error(`${agent} is not offered ${name}`);
  const context = {
    agentId: agent,
    sessionKey: `agent:${agent}:main`,
    clock: { now: () => Date.now() },
    idempotencyKey: `k-${Math.random()}`,
  } as unknown as ToolContext;
  return (args: Record<string, unknown>, extra: Partial<ToolContext> = {}) => found.execute(args, { ...context, ...extra });
}

describe.each(stores)('memory on %s', (name, open) => {
  it('indexes at start, ranks with provenance, and follows a file written later', async () => {
    const root = workspaces(`${name}-a`);
    let memory!: MemoryService;
    gateway = await startTestGateway(config(root), {}, await open(), { onMemory: (made) => (memory = made) });
    const status = await memory.status();
    expect(status.find((agent) => agent.agentId === 'ops')).toMatchObject({ files: 2, warnings: [] });
    expect(status.find((agent) => agent.agentId === 'dev')!.warnings).toEqual([
      `no memory files: ${root}/dev/memory holds 1 files, none of them Markdown (.md)`,
    ]);
    expect(status.find((agent) => agent.agentId === 'guest')!.warnings).toEqual([
      `no memory files: ${root}/guest/memory does not exist; create it and put Markdown (.md) files in it`,
    ]);
    const search = await tool(gateway, 'ops', 'memory_search');
    const found = (await search({ query: 'deploy canary' })) as {
      hits: { agent: string; path: string; lines: string; age: string; text: string }[];
    };
    expect(found.hits[0]).toMatchObject({
      agent: 'ops',
      path: 'runbooks/deploy.md',
      lines: '1-3',
      age: expect.stringMatching(/^(now|\d+[mhd])$/),
    });
    expect(found.hits.map((hit) => hit.path)).toContain('private/oncall.md');
    writeFileSync(join(root, 'ops', 'memory', 'incident.md'), 'The incident with the flaky canary.\n');
    await waitUntil('the new file is indexed', async () => {
      const hits = ((await search({ query: 'flaky' })) as { hits: { path: string }[] }).hits;
      return hits.some((hit) => hit.path === 'incident.md');
    });
  });

  it('grants: only both sides together open a memory, only the granted paths, and each refusal is exact', async () => {
    const root = workspaces(`${name}-b`);
    gateway = await startTestGateway(config(root), {}, await open());
    const devSearch = await tool(gateway, 'dev', 'memory_search');
    const hits = ((await devSearch({ query: 'deploy' })) as { hits: { agent: string; path: string }[] }).hits;
    expect(hits.map((hit) => `${hit.agent}:${hit.path}`)).toEqual(['ops:runbooks/deploy.md']);
    expect(await devSearch({ query: 'deploy', agent: 'guest' })).toEqual({
      status: 'forbidden',
      error:
        'agent "dev" has no grant to read the memory of "guest": add { agent: "guest" } to agents.list[dev].memory.readFrom, and "dev" to agents.list[guest].memory.shareWith',
    });
    const guestSearch = await tool(gateway, 'guest', 'memory_search');
    expect(await guestSearch({ query: 'deploy', agent: 'ops' })).toEqual({
      status: 'forbidden',
      error:
        'agent "guest" has no grant to read the memory of "ops": add { agent: "ops" } to agents.list[guest].memory.readFrom, and "guest" to agents.list[ops].memory.shareWith',
    });
    expect(((await guestSearch({ query: 'deploy' })) as { hits: unknown[] }).hits).toEqual([]);
    // The other direction: ops shares with dev but reads nothing of dev's.
    const opsSearch = await tool(gateway, 'ops', 'memory_search');
    expect(await opsSearch({ query: 'x', agent: 'dev' })).toMatchObject({
      status: 'forbidden',
      error: expect.stringMatching(/^agent "ops" has no grant to read the memory of "dev"/),
    });
    const devGet = await tool(gateway, 'dev', 'memory_get');
    expect(await devGet({ agent: 'ops', path: 'runbooks/deploy.md' })).toMatchObject({
      agent: 'ops',
      path: 'runbooks/deploy.md',
      content: expect.stringContaining('Revert the release tag.'),
    });
    expect(await devGet({ agent: 'ops', path: 'private/oncall.md' })).toEqual({
      status: 'forbidden',
      error: 'agent "dev" may read only "runbooks/" of the memory of "ops" (agents.list[dev].memory.readFrom), not "private/oncall.md"',
    });
    // A grant the owner takes back (a config reload) closes it at the next search.
    gateway.config.agents.list[0].memory!.shareWith = [];
    expect(await devSearch({ query: 'deploy', agent: 'ops' })).toEqual({
      status: 'forbidden',
      error: 'agent "ops" does not share its memory with "dev": agents.list[ops].memory.shareWith does not list it',
    });
  });

  it("memory_write keeps an entry in the writer's own memory, once per call, and a search finds it", async () => {
    const root = workspaces(`${name}-c`);
    gateway = await startTestGateway(config(root), {}, await open());
    const write = await tool(gateway, 'guest', 'memory_write');
    const first = (await write({ text: 'The customer Ada prefers email.' }, { idempotencyKey: 'tc:1' })) as { path: string };
    expect(first).toMatchObject({ status: 'ok', path: expect.stringMatching(/^entries\//) });
    expect(await write({ text: 'The customer Ada prefers email.' }, { idempotencyKey: 'tc:1' })).toEqual({
      status: 'ok',
      path: first.path,
      note: 'kept already by an earlier attempt of this run',
    });
    const hits = (
      (await (
        await tool(gateway, 'guest', 'memory_search')
      )({ query: 'Ada email' })) as { hits: { agent: string; path: string }[] }
    ).hits;
    expect(hits).toMatchObject([{ agent: 'guest', path: first.path }]);
    expect(((await (await tool(gateway, 'ops', 'memory_search'))({ query: 'Ada' })) as { hits: unknown[] }).hits).toEqual([]);
  });
});

describe('memory at start', () => {
  it('a gateway is ready before its first memory scan ends; status and searches wait for that scan', async () => {
    const root = workspaces('start');
    const store = await SqliteStore.open({ path: ':memory:' });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const documents = store.memory.documents.bind(store.memory);
    store.memory.documents = async (...args) => {
      await gate;
      return documents(...args);
    };
    let memory!: MemoryService;
    gateway = await startTestGateway(config(root), {}, store, { onMemory: (made) => (memory = made) });
    expect(await gateway.ready()).toBe(true);
    let answered = false;
    const status = memory.status().then((agents) => {
      answered = true;
      return agents;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    release();
    expect((await status).find((agent) => agent.agentId === 'ops')).toMatchObject({ files: 2 });
  });
});
