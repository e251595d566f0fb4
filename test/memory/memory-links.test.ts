/**
 * Memory never reads through a link (docs/memory.md#links): an agent whose `memory/` folder is a symlink to another
 * agent's memory gets none of that memory as its own, and a linked file or folder inside a memory folder is skipped;
 * each refusal is a warning in `memory status` and a log line, and the agent's real memory is indexed as before.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { ToolContext } from '../../src/ports/tools.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'sb-memory-links-')));

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const config = (root: string) => `{
  agents: { list: [
    { id: "ops", model: "scripted/m", workspace: "${root}/ops", memory: {} },
    { id: "guest", model: "scripted/m", workspace: "${root}/guest", memory: {} },
  ] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } },
}`;

async function start(root: string) {
  const logged: string[] = [];
  let memory!: MemoryService;
  const { config: parsed } = parseConfigText(config(root), '/test/switchboard.json5', {});
  gateway = await startGateway(
    {
      config: parsed,
      store: await SqliteStore.open({ path: ':memory:' }),
      gatewayId: 'gw-test',
      log: (_level, message) => logged.push(message),
    },
    { onMemory: (made) => (memory = made) },
  );
  return { logged, memory, gateway };
}

async function search(g: Gateway, agent: string, query: string) {
  const found = (await g.toolsOf(`agent:${agent}:main`)).find((candidate) => candidate.name === 'memory_search');
  if (!found) throw new Error(`${agent} is not offered memory_search`);
  const context = { agentId: agent, sessionKey: `agent:${agent}:main`, clock: { now: () => Date.now() }, idempotencyKey: 'k' };
  const answer = (await found.execute({ query }, context as unknown as ToolContext)) as { hits: { agent: string; path: string }[] };
  return answer.hits.map((hit) => `${hit.agent}:${hit.path}`);
}

describe('memory and links', () => {
  it("an agent whose memory/ folder is a symlink to another agent's memory gets none of it, with a warning and a log line", async () => {
    const root = join(base, 'folder');
    mkdirSync(join(root, 'ops', 'memory'), { recursive: true });
    mkdirSync(join(root, 'guest'), { recursive: true });
    writeFileSync(join(root, 'ops', 'memory', 'deploy.md'), '# Deploy\nThe release password lives in the vault.\n');
    symlinkSync(join(root, 'ops', 'memory'), join(root, 'guest', 'memory'));
    const { logged, memory, gateway: g } = await start(root);
    const status = await memory.status();
    const warning = `${root}/guest/memory is a symbolic link (to ${root}/ops/memory), refused: memory is read only from a real folder, never through a link, so that no agent takes another's memory as its own; replace the link with a folder (memory.readFrom and memory.shareWith share a memory between agents)`;
    expect(status.find((agent) => agent.agentId === 'guest')).toMatchObject({ files: 0, warnings: [warning] });
    expect(status.find((agent) => agent.agentId === 'ops')).toMatchObject({ files: 1, warnings: [] });
    expect(logged).toContain(`memory of agent "guest": ${warning}`);
    expect(await search(g, 'guest', 'release password')).toEqual([]);
    expect(await search(g, 'ops', 'release password')).toEqual(['ops:deploy.md']);
  });

  it('a linked file or folder inside a memory folder is skipped with a warning, even when it points inside', async () => {
    const root = join(base, 'inside');
    mkdirSync(join(root, 'ops', 'memory', 'notes'), { recursive: true });
    mkdirSync(join(root, 'guest', 'memory'), { recursive: true });
    writeFileSync(join(root, 'ops', 'memory', 'notes', 'own.md'), 'The canary checklist.\n');
    writeFileSync(join(root, 'guest', 'memory', 'secret.md'), 'The guest canary secret.\n');
    symlinkSync(join(root, 'guest', 'memory', 'secret.md'), join(root, 'ops', 'memory', 'stolen.md'));
    symlinkSync(join(root, 'guest', 'memory'), join(root, 'ops', 'memory', 'theirs'));
    symlinkSync(join(root, 'ops', 'memory', 'notes', 'own.md'), join(root, 'ops', 'memory', 'alias.md'));
    const { logged, memory, gateway: g } = await start(root);
    const ops = (await memory.status()).find((agent) => agent.agentId === 'ops')!;
    expect(ops.files).toBe(1);
    const refused = (path: string) =>
      `${path} is a symbolic link, skipped: memory files and folders are read only as themselves, never through a link`;
    expect(ops.warnings).toEqual([refused('alias.md'), refused('stolen.md'), refused('theirs')]);
    for (const warning of ops.warnings) expect(logged).toContain(`memory of agent "ops": ${warning}`);
    expect(await search(g, 'ops', 'canary')).toEqual(['ops:notes/own.md']);
    expect(await search(g, 'guest', 'canary')).toEqual(['guest:secret.md']);
  });
});
