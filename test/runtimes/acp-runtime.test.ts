/**
 * ACP agents as sub-agents (docs/runtimes.md), in process, against a fake agent built with the official SDK
 * (fake-acp-agent.mjs): the spawn, the updates in the journal and the transcript, the permission policy, file writes
 * confined to the workdir, the completion to the parent exactly once, kill and timeout ending the process tree, a
 * crash reported with the exit code and stderr, and the refusals.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { toolJsonSchema } from '../../src/tools/tool-contract.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';
import { spanIdOf } from '../../src/kit/trace-context.js';
import { alive, pidsIn, runtimeUpdates, settledSubagent } from './runtime-helpers.js';

const FAKE = join(import.meta.dirname, 'fake-acp-agent.mjs');
const MAIN = 'agent:main:main';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

function setup(options: { permissions?: string; allow?: string; timeout?: number; agentExtra?: string } = {}) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-acp-')));
  const config = `{
    agents: {
      defaults: { subagents: { allowRuntimes: [${options.allow ?? '"acp:*"'}] ${options.timeout ? `, runTimeoutSeconds: ${options.timeout}` : ''} } },
      list: [{ id: "main", model: "scripted/main", workspace: ${JSON.stringify(dir)} ${options.agentExtra ?? ''} }],
    },
    acp: {
      cancelGraceMs: 500,
      agents: { fake: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FAKE)}], env: { FAKE_PIDS_DIR: ${JSON.stringify(dir)} } ${options.permissions ?? ''} } },
    },
    models: { providers: { scripted: { type: "scripted", models: { main: { rules: [
      { match: "^sub-agent", reply: "relayed: {{input}}" },
      { match: "delegate (.*)", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "{{match.1}}", runtime: "acp", agent: "fake" } }] }, { text: "{{tool.sessions_spawn}}" }] },
    ] } } } } },
  }`;
  return { dir, config };
}

async function delegate(task: string): Promise<{ subagentId: string; childSessionKey: string; error?: { code: string; message: string } }> {
  const sent = await gateway!.send({ target: 'main', message: `delegate ${task}` });
  const result = await gateway!.waitForInput(sent.input.id, 10_000);
  if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
  return JSON.parse(result.reply ?? '{}');
}

const settled = (subagentId: string) => settledSubagent(gateway!, subagentId);

describe('sessions_spawn with runtime "acp"', () => {
  it('runs the task in the fake agent: updates journaled, the write allowed inside the workdir, the result delivered once', async () => {
    const { dir, config } = setup();
    gateway = await startTestGateway(config);
    const spawned = await delegate('write notes.txt please');
    expect(spawned.childSessionKey).toBe(`agent:main:acp:${spawned.subagentId}`);
    const { view, record } = await settled(spawned.subagentId);
    expect(view.state).toBe('succeeded');
    expect(record.runtime).toBe('acp:fake');
    expect(record.result).toBe('Done: the task is finished.');
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('written by the fake agent\n');

    const updates = await runtimeUpdates(gateway, spawned.childSessionKey);
    const kinds = updates.map((update) => update.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['plan', 'message', 'session', 'tool_call', 'permission', 'file', 'tool_call_update', 'stop']),
    );
    expect(updates.find((update) => update.kind === 'permission')).toMatchObject({
      answered: 'allowed',
      why: expect.stringContaining('inside the workdir'),
    });
    // Streamed chunks are merged into few journaled updates (those that arrive within one flush make one; on a loaded
    // machine a flush may fall between two), and nothing of the text is lost or reordered.
    const messages = updates.filter((update) => update.kind === 'message').map((update) => update.text as string);
    expect(messages.join('')).toMatch(/^Working on: write notes\.txt please/);

    const transcript = await gateway.store.transcript.list(spawned.childSessionKey, {});
    const parts = transcript.flatMap((entry) => (Array.isArray(entry.content) ? entry.content : []));
    expect(parts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'tool-call', toolCallId: 'call-write', toolName: 'edit' }),
        expect.objectContaining({ type: 'tool-result', output: { type: 'text', value: 'completed: Write notes.txt\nwrote it' } }),
      ]),
    );
    // The parent hears it once, and its run relays the result.
    const completions = await waitUntil('the completion consumed', async () => {
      const inputs = (await gateway!.store.inputs.list({ sessionKey: MAIN })).filter(
        (input) => input.provenance.kind === 'subagent_completion',
      );
      return inputs.length > 0 && inputs.every((input) => input.status === 'consumed') ? inputs : undefined;
    });
    expect(completions).toHaveLength(1);
    expect(completions[0].text).toContain('Done: the task is finished.');
    // The agent process is gone once the run is over.
    await waitUntil('the agent exited', () => !alive(pidsIn(dir).agent));
  });

  it('denies a write outside the workdir by policy and never writes it', async () => {
    const { dir, config } = setup();
    gateway = await startTestGateway(config);
    const outside = join(mkdtempSync(join(tmpdir(), 'sb-acp-out-')), 'escape.txt');
    const spawned = await delegate(`write ${outside}`);
    const { view } = await settled(spawned.subagentId);
    expect(view.state).toBe('succeeded');
    expect(existsSync(outside)).toBe(false);
    const updates = await runtimeUpdates(gateway, spawned.childSessionKey);
    expect(updates.find((update) => update.kind === 'permission')).toMatchObject({
      answered: 'denied',
      why: `${outside} is outside the workdir ${dir}`,
    });
  });

  it.each([true, false])(
    'puts a permission whose kind is "ask" to a person (approved: %s): the write happens only when approved',
    async (approve) => {
      const { dir, config } = setup({ permissions: ', permissions: { edit: "ask" }' });
      gateway = await startTestGateway(config);
      const gw = gateway;
      const sent = await gw.send({ target: 'main', message: 'delegate write asked.txt please' });
      const asked = await waitUntil('the approval request', async () => (await gw.listApprovals({ status: 'pending' }))[0], 10_000, 10);
      expect(asked).toMatchObject({
        subject: 'acp:fake:edit',
        reason: 'acp.agents.fake.permissions.edit is "ask"',
        details: { title: 'Write asked.txt', kind: 'edit', cwd: dir },
        editable: false,
      });
      expect(existsSync(join(dir, 'asked.txt'))).toBe(false);
      await gw.decideApproval(asked.id, { approve, by: 'cli:ann', note: 'checked' });
      const spawned = (await gw.waitForInput(sent.input.id, 10_000)) as { reply: string | null };
      const { subagentId, childSessionKey } = JSON.parse(spawned.reply ?? '{}') as { subagentId: string; childSessionKey: string };
      await settled(subagentId);
      expect(existsSync(join(dir, 'asked.txt'))).toBe(approve);
      const updates = await runtimeUpdates(gw, childSessionKey);
      expect(updates.find((update) => update.kind === 'permission')).toMatchObject({
        answered: approve ? 'allowed' : 'denied',
        why: `cli:ann ${approve ? 'approved' : 'denied'} approval request ${asked.id}: checked`,
      });
    },
  );

  it("denies edits by the agent's permissions, and refuses terminals unless execute is allowed", async () => {
    const { config } = setup({ permissions: ', permissions: { edit: "deny" }' });
    gateway = await startTestGateway(config);
    const spawned = await delegate('write a.txt then run');
    const { record } = await settled(spawned.subagentId);
    const updates = await runtimeUpdates(gateway, spawned.childSessionKey);
    expect(updates.find((update) => update.kind === 'permission')).toMatchObject({
      answered: 'denied',
      why: 'edit is denied (acp.agents.fake.permissions.edit)',
    });
    const text = updates
      .filter((update) => update.kind === 'message')
      .map((update) => update.text)
      .join('');
    expect(text).toContain('no terminal: Invalid params: running commands is denied (acp.agents.fake.permissions.execute is not "allow")');
    expect(record.state).toBe('succeeded');
  });

  it('serves a terminal in the workdir when execute is allowed', async () => {
    const { config } = setup({ permissions: ', permissions: { execute: "allow" }' });
    gateway = await startTestGateway(config);
    const spawned = await delegate('run it');
    const { record } = await settled(spawned.subagentId);
    const transcript = await gateway.store.transcript.list(spawned.childSessionKey, {});
    expect(JSON.stringify(transcript.map((entry) => entry.content))).toContain('terminal said from the terminal (exit 0)');
    expect(record.state).toBe('succeeded');
  });

  it("gives the agent and its terminals the allowlisted environment and their own env, never the gateway's secrets", async () => {
    const secrets = { ANTHROPIC_API_KEY: 'sk-ant-never-shown', SWITCHBOARD_TOKEN: 'token-never-shown' };
    Object.assign(process.env, secrets);
    try {
      const { config } = setup({ permissions: ', permissions: { execute: "allow" }' });
      gateway = await startTestGateway(config);
      const spawned = await delegate('show-env');
      const { record } = await settled(spawned.subagentId);
      expect(record.state).toBe('succeeded');
      const text = (await runtimeUpdates(gateway, spawned.childSessionKey))
        .filter((update) => update.kind === 'message')
        .map((update) => update.text)
        .join('');
      const agentEnv = /agent env: (.*)/.exec(text)?.[1].split(',');
      const terminalEnv = /terminal env: (.*)/.exec(text)?.[1].split(',');
      // The agent: the allowlist and its configured env. A terminal: the allowlist and what the agent asked for.
      expect(agentEnv).toEqual(expect.arrayContaining(['FAKE_PIDS_DIR', 'PATH']));
      expect(terminalEnv).toEqual(expect.arrayContaining(['ASKED_BY_AGENT', 'PATH']));
      expect(terminalEnv).not.toContain('FAKE_PIDS_DIR');
      for (const name of Object.keys(secrets)) {
        expect(agentEnv).not.toContain(name);
        expect(terminalEnv).not.toContain(name);
      }
    } finally {
      for (const name of Object.keys(secrets)) delete process.env[name];
    }
  });

  it("hands the agent the run's trace context in session/prompt's _meta", async () => {
    const { config } = setup();
    gateway = await startTestGateway(config);
    const spawned = await delegate('show-trace');
    const { record } = await settled(spawned.subagentId);
    expect(record.state).toBe('succeeded');
    const text = (await runtimeUpdates(gateway, spawned.childSessionKey))
      .filter((update) => update.kind === 'message')
      .map((update) => update.text)
      .join('');
    // The sub-agent's run span, in the trace of the run that spawned it; telemetry is off, so not sampled.
    expect(/trace: (\S+)/.exec(text)?.[1]).toMatch(new RegExp(`^00-[0-9a-f]{32}-${spanIdOf('run', record.firstRunId)}-00$`));
  });

  it('reports a crash as failed with the exit code and the last stderr lines', async () => {
    const { config } = setup();
    gateway = await startTestGateway(config);
    const spawned = await delegate('crash now');
    const { view } = await settled(spawned.subagentId);
    expect(view.state).toBe('failed');
    expect(view.diagnostic).toBe(
      'ACP agent "fake" exited with code 3; its last stderr lines:\nfatal: the fake agent crashed on purpose\nsecond line of the trace',
    );
  });

  it('kill sends session/cancel and the agent stops; a stubborn one has its process tree ended', async () => {
    const { dir, config } = setup();
    gateway = await startTestGateway(config);
    const polite = await delegate('hang until cancelled');
    await waitUntil('the agent started', () => pidsIn(dir).agent > 0);
    await waitUntil('the run is active', async () => (await gateway!.getSubagent(polite.subagentId)).view.state === 'running');
    await gateway.killSubagent(polite.subagentId);
    expect((await settled(polite.subagentId)).view.state).toBe('cancelled');
    await waitUntil('the agent exited', () => !alive(pidsIn(dir).agent));

    const stubborn = await delegate('stubborn child');
    const pids = await waitUntil('the grandchild and the daemon started', () => (pidsIn(dir).daemon ? pidsIn(dir) : undefined));
    await gateway.killSubagent(stubborn.subagentId);
    expect((await settled(stubborn.subagentId)).view.state).toBe('cancelled');
    // The daemon left the process group (setsid): it is ended all the same.
    await waitUntil('the whole tree is gone', () => !alive(pids.agent) && !alive(pids.grandchild) && !alive(pids.daemon));
  });

  it('a timeout ends the process tree and reports timed_out', async () => {
    const { dir, config } = setup({ timeout: 2 });
    gateway = await startTestGateway(config);
    const spawned = await delegate('stubborn and slow');
    const pids = await waitUntil('the grandchild and the daemon started', () => (pidsIn(dir).daemon ? pidsIn(dir) : undefined));
    const { view } = await settled(spawned.subagentId);
    expect(view.state).toBe('timed_out');
    expect(view.diagnostic).toContain('sub-agent run exceeded its timeout of 2s');
    await waitUntil('the whole tree is gone', () => !alive(pids.agent) && !alive(pids.grandchild) && !alive(pids.daemon));
  });
});

describe('refusals', () => {
  it('a program that cannot be started fails the sub-agent with the reason', async () => {
    const { config } = setup();
    gateway = await startTestGateway(config.replace(JSON.stringify(process.execPath), '"switchboard-no-such-program"'));
    const spawned = await delegate('anything');
    const { view } = await settled(spawned.subagentId);
    expect(view.state).toBe('failed');
    expect(view.diagnostic).toBe('ACP agent "fake" could not be started: spawn switchboard-no-such-program ENOENT');
  });

  it('sessions_spawn shows runtime and agent only to an agent allowed a runtime', async () => {
    const shownArgs = async () => {
      const spawn = (await gateway!.toolsOf(MAIN)).find((tool) => tool.name === 'sessions_spawn')!;
      return Object.keys(toolJsonSchema(spawn.parameters).properties as object);
    };
    gateway = await startTestGateway(setup().config);
    expect(await shownArgs()).toEqual(expect.arrayContaining(['task', 'runtime', 'agent']));
    await stopTestGateway(gateway);
    gateway = await startTestGateway(setup({ allow: '' }).config);
    expect(await shownArgs()).not.toContain('runtime');
    expect(await shownArgs()).not.toContain('agent');
  });

  it('names the missing runtime, the allowRuntimes policy, and the sandbox', async () => {
    const { config } = setup({ allow: '' });
    gateway = await startTestGateway(config);
    const spawn = (args: Record<string, unknown>) =>
      gateway!.subagents.spawn({ sessionKey: MAIN, agentId: 'main', idempotencyKey: `k-${Math.random()}` }, { task: 'x', ...args });
    await expect(spawn({ runtime: 'acp', agent: 'nope' })).rejects.toThrow('no acp runtime "nope" in acp.agents (configured: fake)');
    await expect(spawn({ runtime: 'acp', agent: 'fake' })).rejects.toThrow(
      'agent "main" may not spawn on runtime "acp:fake": it is not in agents.defaults.subagents.allowRuntimes (empty)',
    );
    await expect(spawn({ runtime: 'acp' })).rejects.toThrow('runtime "acp" needs agent: the name of one of acp.agents to run the task');
    await expect(spawn({ agent: 'fake' })).rejects.toThrow('agent names an external runtime: give it with runtime "acp" or "process"');
    await stopTestGateway(gateway);
    gateway = await startTestGateway(setup({ agentExtra: ', sandbox: { mode: "all" }' }).config);
    await expect(spawn({ runtime: 'acp', agent: 'fake' })).rejects.toThrow(
      'external runtimes run on the host, never from a sandboxed session (agents.list[main].sandbox.mode "all"); spawn a model sub-agent instead',
    );
  });
});
