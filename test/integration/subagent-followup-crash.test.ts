/**
 * SIGKILL a real gateway just after `subagents followup` reopened a finished child, while the child runs the follow-up
 * and the parent's run that sent it has not committed: after the restart the follow-up is in the child once (the
 * retried parent run finds it in the ledger), the child's cut run is reported `interrupted` and not run again, and the
 * parent holds exactly one completion per child run.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 3 },
  agents: { list: [{ id: "boss", model: "scripted/boss" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    boss: { rules: [
      { match: "sub-agent", reply: "ack" },
      { match: "delegate", steps: [
          { toolCalls: [{ tool: "sessions_spawn", args: { task: "part a", label: "w", correlationId: "w" } }] },
          { text: "spawned" }] },
      { match: "more", delayMs: 1500, steps: [
          { toolCalls: [{ tool: "subagents", args: { action: "followup", target: "w", message: "slow part b" } }] },
          { text: "{{tool.subagents}}" }] },
      { match: "slow part", delayMs: 5000, reply: "result of {{input}}" },
      { match: "part", reply: "result of {{input}}" },
    ] },
  } } } },
}`);
const BOSS = 'agent:boss:main';

interface View {
  childSessionKey: string;
  state: string;
  history: { state: string }[];
}

describe('sub-agent follow-up crash recovery', () => {
  it('SIGKILL after a follow-up reopened the child: one follow-up, the cut run reported interrupted, one completion per run', async () => {
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    const child = async () => (await gw.request<{ subagents: View[] }>('GET', '/v1/subagents')).body.subagents[0];
    const bossIdle = async () =>
      (await gw.request<{ queuedInputs: number }>('GET', `/v1/sessions/${encodeURIComponent(BOSS)}`)).body.queuedInputs === 0 &&
      (await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status')).body.activeRuns.length === 0;
    expect((await gw.request('POST', '/v1/send', { target: 'boss', message: 'delegate', idempotencyKey: 'delegate' })).status).toBe(200);
    await waitUntil(
      'the child finished and the boss read its result',
      async () => (await child())?.state === 'succeeded' && bossIdle(),
      10_000,
    );

    expect((await gw.request('POST', '/v1/send', { target: 'boss', message: 'more', idempotencyKey: 'more' })).status).toBe(200);
    await waitUntil(
      'the follow-up reopened the child and it runs',
      async () => {
        const view = await child();
        return view.state === 'running' && view.history.filter((step) => step.state === 'pending').length === 2;
      },
      10_000,
    );
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    await waitUntil('the child settled and the boss is idle', async () => (await child()).state === 'interrupted' && bossIdle(), 30_000);
    expect(await stopGatewayProcess(gw)).toBe(0);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const [record] = await store.subagents.list();
      expect(record.history.map((step) => step.state)).toEqual(['pending', 'running', 'succeeded', 'pending', 'running', 'interrupted']);
      const childInputs = await store.inputs.list({ sessionKey: record.sessionKey });
      expect(childInputs.filter((input) => input.idempotencyKey.startsWith('followup:'))).toHaveLength(1);
      expect((await store.runs.list({ sessionKey: record.sessionKey })).map((run) => run.status).sort()).toEqual([
        'interrupted',
        'succeeded',
      ]);
      const completions = (await store.inputs.list({ sessionKey: BOSS })).filter(
        (input) => input.provenance.kind === 'subagent_completion',
      );
      expect(completions).toHaveLength(2);
      expect(new Set(completions.map((input) => input.idempotencyKey)).size).toBe(2);
      expect(completions.every((input) => input.status === 'consumed')).toBe(true);
      expect(completions.map((input) => input.text).join('\n')).toContain('was interrupted');
      expect(await store.runs.list({ status: 'running' })).toHaveLength(0);
    } finally {
      await store.close();
    }
  }, 120_000);
});
