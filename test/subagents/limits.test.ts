/**
 * Every sub-agent limit refused with its exact error, depth-aware and narrowed tool sets, broadening
 * refused, the subagent lane's cap queueing (not dropping) spawns, the hard run timeout, and handles:
 * a forged one refused, a real one valid across a restart.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const MAIN = 'agent:main:main';

const config = (subagents = '', agentExtra = '', rules = '{ reply: "done: {{input}}" }') => `{
  agents: {
    defaults: { subagents: { ${subagents} } },
    list: [{ id: "main", model: "scripted/main" ${agentExtra} }, { id: "other", model: "scripted/main" }],
  },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [${rules}] } } } } },
}`;

/** The tools every session of this config has, before any session tools. */
// No exec: it is off for these agents (exec.enabled), so it is not offered at all.
const FILES = ['time_now', 'read_file', 'write_file', 'edit_file', 'list_files', 'search_files'];
const MEMORY = ['memory_search', 'memory_get', 'memory_write'];
const BASIC = [...FILES, ...MEMORY];

const from = (sessionKey: string, agentId = 'main') => ({ sessionKey, agentId, idempotencyKey: `test:${Math.random()}` });

async function start(text: string): Promise<Gateway> {
  gateway = await startTestGateway(text);
  await gateway.openSession(MAIN, 'main');
  return gateway;
}

async function settled(g: Gateway, childSessionKey: string) {
  return waitUntil(`${childSessionKey} settled`, async () => {
    const record = await g.store.subagents.getBySession(childSessionKey);
    return record && !['pending', 'running'].includes(record.state) && record;
  });
}

describe('limits, each refused with its exact error', () => {
  it('subagents show lists what the sub-agent is offered; none once its agent left the config', async () => {
    const g = await start(config());
    await g.openSession('agent:other:main', 'other');
    const { childSessionKey } = await g.subagents.spawn(from('agent:other:main', 'other'), { task: 'one' });
    // Without a workspace the file and memory tools cannot succeed, so a run's steps do not offer them: nor does show.
    expect((await g.toolsOf(childSessionKey)).map((tool) => tool.name)).toEqual(BASIC);
    expect(await g.offeredToolNames(childSessionKey)).toEqual(['time_now']);
    const without = config().replace(', { id: "other", model: "scripted/main" }', '');
    g.reloadConfig(parseConfigText(without, '/test/switchboard.json5', {}).config);
    expect(await g.offeredToolNames(childSessionKey)).toEqual([]);
  });

  it('maxSpawnDepth: the default 1 lets a top session spawn a leaf, and the leaf neither has nor may use sessions_spawn', async () => {
    const g = await start(config());
    const { childSessionKey } = await g.subagents.spawn(from(MAIN), { task: 'one' });
    expect((await g.toolsOf(childSessionKey)).map((tool) => tool.name)).toEqual(BASIC);
    await expect(g.subagents.spawn(from(childSessionKey), { task: 'two' })).rejects.toMatchObject({
      code: 'SPAWN_DENIED',
      message:
        'a sub-agent spawned here would be at depth 2, past agents.defaults.subagents.maxSpawnDepth (1); do the work yourself, or raise the limit',
      details: { layer: 'spawn', limit: 'maxSpawnDepth' },
    });
  });

  it('maxSpawnDepth 0 (per agent) turns spawning off and hides the tools', async () => {
    const g = await start(config('', ', subagents: { maxSpawnDepth: 0 }'));
    expect((await g.toolsOf(MAIN)).map((tool) => tool.name)).not.toContain('sessions_spawn');
    await expect(g.subagents.spawn(from(MAIN), { task: 'x' })).rejects.toThrow(
      'sub-agents are off for agent "main" (agents.list[main].subagents.maxSpawnDepth is 0); do the work yourself',
    );
  });

  it('an orchestrator only where it could spawn: at the deepest level it is refused', async () => {
    const g = await start(config());
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', role: 'orchestrator' })).rejects.toThrow(
      'a sub-agent at depth 1 can never spawn (agents.defaults.subagents.maxSpawnDepth is 1), so it cannot be an orchestrator; spawn it with role "leaf", or raise the limit',
    );
  });

  it('depth-aware tools with maxSpawnDepth 2: an orchestrator gets spawn, subagents, list and history; a leaf no session tools; depth 2 never spawns', async () => {
    const g = await start(
      config('maxSpawnDepth: 2', '', '{ match: "^lead$", delayMs: 1000, reply: "lead done" }, { reply: "done: {{input}}" }'),
    );
    const names = async (key: string) => (await g.toolsOf(key)).map((tool) => tool.name);
    expect(await names(MAIN)).toEqual(expect.arrayContaining(['sessions_send', 'sessions_spawn', 'subagents']));
    const lead = await g.subagents.spawn(from(MAIN), { task: 'lead', role: 'orchestrator' });
    expect(await names(lead.childSessionKey)).toEqual([
      ...FILES,
      'sessions_list',
      'sessions_history',
      'subagents',
      ...MEMORY,
      // Given per agent (its variant shows `runtime` and `agent` only to agents allowed a runtime), so after the rest.
      'sessions_spawn',
    ]);
    const leaf = await g.subagents.spawn(from(MAIN), { task: 'leaf' });
    expect(await names(leaf.childSessionKey)).toEqual(BASIC);
    const worker = await g.subagents.spawn(from(lead.childSessionKey), { task: 'worker' });
    expect(worker.handle).toMatchObject({ depth: 2, role: 'leaf' });
    expect(await names(worker.childSessionKey)).toEqual(BASIC);
    await expect(g.subagents.spawn(from(worker.childSessionKey), { task: 'deeper' })).rejects.toMatchObject({ code: 'SPAWN_DENIED' });
    const ended = await settled(g, lead.childSessionKey);
    await expect(g.subagents.spawn(from(lead.childSessionKey), { task: 'late' })).rejects.toMatchObject({
      code: 'SUBAGENT_NOT_RUNNING',
      message: `sub-agent ${lead.childSessionKey} has already ended (${ended.state}); it cannot spawn sub-agents any more`,
    });
  });

  it('allowAgents: another agent only when listed', async () => {
    let g = await start(config());
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', agentId: 'other' })).rejects.toMatchObject({
      code: 'SPAWN_DENIED',
      message: 'agent "main" may not spawn sub-agents of agent "other": it is not in agents.defaults.subagents.allowAgents (empty)',
      details: { layer: 'spawn' },
    });
    await stopTestGateway(g);
    g = await start(config('allowAgents: ["oth*"]'));
    const spawned = await g.subagents.spawn(from(MAIN), { task: 'x', agentId: 'other' });
    expect(spawned.childSessionKey).toMatch(/^agent:other:subagent:/);
  });

  it('maxChildrenPerAgent: the next spawn is refused while that many are pending or running', async () => {
    const g = await start(config('maxChildrenPerAgent: 2', '', '{ delayMs: 400, reply: "slow" }'));
    await g.subagents.spawn(from(MAIN), { task: 'a' });
    await g.subagents.spawn(from(MAIN), { task: 'b' });
    await expect(g.subagents.spawn(from(MAIN), { task: 'c' })).rejects.toMatchObject({
      code: 'SUBAGENT_LIMIT',
      message:
        'this session already has 2 sub-agents pending or running, the limit of agents.defaults.subagents.maxChildrenPerAgent (2); wait for one to finish (subagents wait) before spawning another',
    });
  });

  it('timeoutSeconds past runTimeoutSeconds is refused', async () => {
    const g = await start(config('runTimeoutSeconds: 60'));
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', timeoutSeconds: 61 })).rejects.toThrow(
      'timeoutSeconds 61 is past agents.defaults.subagents.runTimeoutSeconds (60); ask for 60 or less',
    );
  });

  it('an unknown model is refused before anything is stored', async () => {
    const g = await start(config());
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', model: 'scripted/nope' })).rejects.toMatchObject({
      code: 'MODEL_PROVIDER_NOT_FOUND',
    });
    expect(await g.store.subagents.list()).toEqual([]);
  });

  it('lanes.subagent.maxConcurrent and agents.defaults.subagents.maxConcurrent must agree', () => {
    const text = config('maxConcurrent: 4').replace('agents: {', 'lanes: { subagent: { maxConcurrent: 3 } },\n  agents: {');
    expect(() => parseConfigText(text, '/t.json5')).toThrow(
      'lanes.subagent.maxConcurrent: 3 disagrees with agents.defaults.subagents.maxConcurrent (4); both set the subagent lane, so keep one',
    );
  });
});

describe('tool narrowing', () => {
  it('tools asks for a subset: the child gets only those; asking for more is refused naming the extra tools', async () => {
    const g = await start(config());
    const narrow = await g.subagents.spawn(from(MAIN), { task: 'x', tools: ['time_now'] });
    expect((await g.toolsOf(narrow.childSessionKey)).map((tool) => tool.name)).toEqual(['time_now']);
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', tools: ['time_now', 'shell', 'http_get'] })).rejects.toMatchObject({
      code: 'TOOL_DENIED',
      message: expect.stringMatching(
        /^a sub-agent's tools are a subset of yours; you do not have "shell", "http_get" \(yours: time_now, read_file, /,
      ),
      details: { layer: 'tool', extra: ['shell', 'http_get'] },
    });
  });

  it('a parent denied a tool cannot hand it on, and the sub-agent layer narrows further', async () => {
    const g = await start(config('tools: { deny: ["*_file*", "exec", "memory_*"] }', ', tools: { deny: ["sessions_send"] }'));
    expect((await g.toolsOf(MAIN)).map((tool) => tool.name)).not.toContain('sessions_send');
    await expect(g.subagents.spawn(from(MAIN), { task: 'x', tools: ['sessions_send'] })).rejects.toMatchObject({ code: 'TOOL_DENIED' });
    const child = await g.subagents.spawn(from(MAIN), { task: 'x' });
    expect((await g.toolsOf(child.childSessionKey)).map((tool) => tool.name)).toEqual(['time_now']);
  });
});

describe('the sandbox layer', () => {
  it('sandbox.tools narrows only sandboxed sessions: with mode "non-main" the main session keeps its tools and its sub-agents lose them', async () => {
    const g = await start(config('', ', sandbox: { mode: "non-main", tools: { deny: ["*_file*", "exec", "memory_*"] } }'));
    expect((await g.toolsOf(MAIN)).map((tool) => tool.name)).toContain('read_file');
    const child = await g.subagents.spawn(from(MAIN), { task: 'x' });
    expect((await g.toolsOf(child.childSessionKey)).map((tool) => tool.name)).toEqual(['time_now']);
  });
});

describe('the subagent lane and the hard timeout', () => {
  it('maxConcurrent 1: five spawns all run, one at a time; none is dropped', async () => {
    const g = await start(config('maxConcurrent: 1', '', '{ delayMs: 60, reply: "done" }'));
    const children = [];
    for (let i = 0; i < 5; i += 1) children.push(await g.subagents.spawn(from(MAIN), { task: `t${i}` }));
    expect(g.status().lanes.subagent.max).toBe(1);
    const runs = [];
    for (const child of children) {
      expect((await settled(g, child.childSessionKey)).state).toBe('succeeded');
      runs.push((await g.getRun(child.runId)).run);
    }
    const spans = runs.map((run) => [run.startedAt, run.endedAt!]).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i += 1) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1]);
  });

  it('a child whose model sleeps past runTimeoutSeconds is aborted and recorded timed_out; the parent is told', async () => {
    const g = await start(
      config('runTimeoutSeconds: 1', '', '{ match: "timed out", reply: "parent saw: {{input}}" }, { delayMs: 5000, reply: "too late" }'),
    );
    const child = await g.subagents.spawn(from(MAIN), { task: 'sleep' });
    const started = Date.now();
    const record = await settled(g, child.childSessionKey);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(record).toMatchObject({
      state: 'timed_out',
      diagnostic:
        'sub-agent run exceeded its timeout of 1s (sessions_spawn timeoutSeconds, else agents.defaults.subagents.runTimeoutSeconds) and was aborted',
    });
    expect((await g.getRun(child.runId)).run.status).toBe('timed_out');
    const told = await waitUntil(
      'the parent was told',
      async () => (await g.store.inputs.getByIdempotencyKey(`completion:${child.childSessionKey}:${child.runId}`)) ?? false,
    );
    expect(told.text).toContain('timed out; session');
    expect(told.text).toContain('Diagnostic: sub-agent run exceeded its timeout of 1s');
  });
});

describe("the spawning agent's limits govern the child", () => {
  it("a child of another agent lives under its parent's agent's runTimeoutSeconds, and the diagnostic names that key", async () => {
    const g = await start(
      config(
        '',
        ', subagents: { runTimeoutSeconds: 1, allowAgents: ["other"] }',
        '{ match: "timed out", reply: "seen" }, { delayMs: 5000, reply: "too late" }',
      ),
    );
    const child = await g.subagents.spawn(from(MAIN), { task: 'sleep', agentId: 'other' });
    expect(await settled(g, child.childSessionKey)).toMatchObject({
      agentId: 'other',
      state: 'timed_out',
      diagnostic:
        'sub-agent run exceeded its timeout of 1s (sessions_spawn timeoutSeconds, else agents.list[main].subagents.runTimeoutSeconds) and was aborted',
    });
  });
});

describe('handles', () => {
  it('the real handle gets the frozen result; any altered field or capability is refused', async () => {
    const g = await start(config());
    const { handle, childSessionKey } = await g.subagents.spawn(from(MAIN), { task: 'hello' });
    await settled(g, childSessionKey);
    expect(await g.subagents.result(handle)).toMatchObject({
      state: 'succeeded',
      result: 'done: hello',
      resultHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      truncated: false,
    });
    const refused = {
      code: 'CAPABILITY_INVALID',
      message:
        'the handle is not one sessions_spawn gave out (its capability does not match its fields); pass the handle exactly as you received it',
    };
    for (const forged of [
      { ...handle, depth: 2 },
      { ...handle, parentSessionKey: 'agent:other:main' },
      { ...handle, subagentId: 'someone-else' },
      { ...handle, capability: handle.capability.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) },
      { ...handle, capability: undefined },
      'not a handle',
    ]) {
      await expect(g.subagents.result(forged)).rejects.toMatchObject(refused);
    }
  });

  it("a handle stays valid across a restart and on every gateway of the store (the store keeps the secret); another store's handle is refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-handle-'));
    const { config: parsed } = parseConfigText(config(), '/t.json5');
    const open = async (secret: string, db = 'db.sqlite') =>
      startGateway({
        config: parsed,
        store: await SqliteStore.open({ path: join(dir, db) }),
        gatewayId: 'gw-h',
        capabilitySecret: secret,
      });
    let g = await open('secret-one');
    await g.openSession(MAIN, 'main');
    const { handle, childSessionKey } = await g.subagents.spawn(from(MAIN), { task: 'persist' });
    await settled(g, childSessionKey);
    await stopTestGateway(g);
    g = await open('secret-one');
    expect(await g.subagents.result(handle)).toMatchObject({ result: 'done: persist' });
    await stopTestGateway(g);
    // Another gateway (its data directory has a secret of its own) on the same store signs with the store's.
    g = await open('secret-two');
    expect(await g.subagents.result(handle)).toMatchObject({ result: 'done: persist' });
    await stopTestGateway(g);
    g = await open('secret-two', 'other.sqlite');
    await expect(g.subagents.result(handle)).rejects.toMatchObject({ code: 'CAPABILITY_INVALID' });
    gateway = g;
  });
});
