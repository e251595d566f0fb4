/**
 * SIGKILL a real gateway while an ACP sub-agent (the fake agent of test/runtimes) works: after the restart the
 * child is reported `interrupted` to its parent once, is not run again, and its process tree is gone, with the
 * descendants that called setsid.
 */
import { join } from 'node:path';
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { alive, pidsIn } from '../runtimes/runtime-helpers.js';

const FAKE = join(import.meta.dirname, '../runtimes/fake-acp-agent.mjs');
const CLI = join(import.meta.dirname, '../runtimes/fake-cli.mjs');

describe('an ACP sub-agent across a gateway crash', () => {
  it('is reported interrupted after SIGKILL, never restarted, and its process tree is gone (and a process runtime child too)', async () => {
    const { dir, configPath } = tempConfig('{}');
    const workspace = realpathSync(dir);
    const cliPids = join(workspace, 'cli');
    mkdirSync(cliPids);
    writeFileSync(
      configPath,
      `{
        agents: {
          defaults: { subagents: { allowRuntimes: ["acp:fake", "process:cli"], retryInterrupted: true } },
          list: [{ id: "boss", model: "scripted/boss", workspace: ${JSON.stringify(workspace)} }],
        },
        runtimes: { cli: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(CLI)}], env: { FAKE_PIDS_DIR: ${JSON.stringify(cliPids)} } } },
        acp: { agents: { fake: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FAKE)}], env: { FAKE_PIDS_DIR: ${JSON.stringify(workspace)} } } } },
        models: { providers: { scripted: { type: "scripted", models: { boss: { rules: [
          { match: "^sub-agent", reply: "heard: {{input}}" },
          { match: "delegate", steps: [{ toolCalls: [
            { tool: "sessions_spawn", args: { task: "stubborn work", runtime: "acp", agent: "fake" } },
            { tool: "sessions_spawn", args: { task: "stubborn cli work", runtime: "process", agent: "cli" } },
          ] }, { text: "spawned" }] },
        ] } } } } },
      }`,
    );
    let gw = await startGatewayProcess(configPath);
    expect((await gw.request('POST', '/v1/send', { target: 'boss', message: 'delegate', idempotencyKey: 'delegate-1' })).status).toBe(200);
    const pids = await waitUntil(
      'the agent, its grandchild and its daemon run',
      () => (pidsIn(workspace).daemon ? pidsIn(workspace) : undefined),
      10_000,
    );
    const cli = await waitUntil(
      'the cli, its grandchild and its daemon run',
      () => (pidsIn(cliPids).daemon ? pidsIn(cliPids) : undefined),
      10_000,
    );
    // The agent exits when the killed gateway's pipe closes, and its daemon (which called setsid) becomes init's: only
    // the record of the agent's tree, scanned every few seconds, still names it. The cli stays, and leads to its daemon.
    const records = join(dir, '.switchboard', 'runtimes');
    await waitUntil(
      "the agent's daemon is recorded",
      () =>
        readdirSync(records)
          .filter((name) => name.endsWith('.json'))
          .some((name) => readFileSync(join(records, name), 'utf8').includes(`[${pids.daemon},`)),
      10_000,
    );
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    const list = async () =>
      (await gw.request<{ subagents: { subagentId: string; state: string; diagnostic: string | null }[] }>('GET', '/v1/subagents')).body
        .subagents;
    const children = await waitUntil(
      'the children settled',
      async () => {
        const all = await list();
        return all.length === 2 && all.every((child) => child.state !== 'running') ? all : undefined;
      },
      20_000,
    );
    for (const child of children) {
      expect(child.state).toBe('interrupted');
      expect(child.diagnostic).toContain('stopped while the run was active');
    }
    await waitUntil(
      'the trees are gone',
      () => [pids.agent, pids.grandchild, pids.daemon, cli.agent, cli.grandchild, cli.daemon].every((pid) => !alive(pid)),
      10_000,
    );
    // Never started again: one process of each was ever started.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(readFileSync(join(workspace, 'pids'), 'utf8').trim().split('\n')).toHaveLength(3);
    expect(readFileSync(join(cliPids, 'pids'), 'utf8').trim().split('\n')).toHaveLength(3);
    // The parent heard each once: one completion each in its history, saying interrupted.
    const history = await waitUntil('the parent heard', async () => {
      const { body } = await gw.request<{ entries: { role: string; content: unknown }[] }>(
        'GET',
        `/v1/sessions/${encodeURIComponent('agent:boss:main')}/history?limit=100`,
      );
      const told = body.entries.filter((entry) => entry.role === 'user' && JSON.stringify(entry.content).includes('interrupted'));
      return told.length > 1 ? told : undefined;
    });
    expect(history).toHaveLength(2);
    expect(await stopGatewayProcess(gw)).toBe(0);
  }, 120_000);
});
