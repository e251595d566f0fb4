/**
 * SIGKILL a real gateway while an ACP sub-agent (the fake agent of test/runtimes) works: after the restart the
 * child is reported `interrupted` to its parent once, is not run again, and its process tree is gone.
 */
import { join } from 'node:path';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { alive, pidsIn } from '../runtimes/runtime-helpers.js';

const FAKE = join(import.meta.dirname, '../runtimes/fake-acp-agent.mjs');

describe('an ACP sub-agent across a gateway crash', () => {
  it('is reported interrupted after SIGKILL, never restarted, and its process tree is gone', async () => {
    const { dir, configPath } = tempConfig('{}');
    const workspace = realpathSync(dir);
    writeFileSync(
      configPath,
      `{
        agents: {
          defaults: { subagents: { allowRuntimes: ["acp:fake"], retryInterrupted: true } },
          list: [{ id: "boss", model: "scripted/boss", workspace: ${JSON.stringify(workspace)} }],
        },
        acp: { agents: { fake: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FAKE)}], env: { FAKE_PIDS_DIR: ${JSON.stringify(workspace)} } } } },
        models: { providers: { scripted: { type: "scripted", models: { boss: { rules: [
          { match: "^sub-agent", reply: "heard: {{input}}" },
          { match: "delegate", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "stubborn work", runtime: "acp", agent: "fake" } }] }, { text: "spawned" }] },
        ] } } } } },
      }`,
    );
    let gw = await startGatewayProcess(configPath);
    expect((await gw.request('POST', '/v1/send', { target: 'boss', message: 'delegate', idempotencyKey: 'delegate-1' })).status).toBe(200);
    const pids = await waitUntil(
      'the agent and its grandchild run',
      () => (pidsIn(workspace).grandchild ? pidsIn(workspace) : undefined),
      10_000,
    );
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    const list = async () =>
      (await gw.request<{ subagents: { subagentId: string; state: string; diagnostic: string | null }[] }>('GET', '/v1/subagents')).body
        .subagents;
    const [child] = await waitUntil(
      'the child settled',
      async () => {
        const children = await list();
        return children.length === 1 && children[0].state !== 'running' ? children : undefined;
      },
      20_000,
    );
    expect(child.state).toBe('interrupted');
    expect(child.diagnostic).toContain('stopped while the run was active');
    await waitUntil('the tree is gone', () => !alive(pids.agent) && !alive(pids.grandchild), 10_000);
    // Never started again: one agent process was ever started.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(readFileSync(join(workspace, 'pids'), 'utf8').trim().split('\n')).toHaveLength(2);
    // The parent heard it once: one completion in its history, saying interrupted.
    const history = await waitUntil('the parent heard', async () => {
      const { body } = await gw.request<{ entries: { role: string; content: unknown }[] }>(
        'GET',
        `/v1/sessions/${encodeURIComponent('agent:boss:main')}/history?limit=100`,
      );
      const told = body.entries.filter((entry) => entry.role === 'user' && JSON.stringify(entry.content).includes('interrupted'));
      return told.length > 0 ? told : undefined;
    });
    expect(history).toHaveLength(1);
    expect(await stopGatewayProcess(gw)).toBe(0);
  });
});
