/**
 * SIGKILL a real gateway at several points of a 20-child fan-out: while children run, while completions
 * are being delivered, while the parent reads them. Afterwards every child is succeeded or interrupted
 * (never silently run again), and the parent received exactly one completion per child, each in its
 * transcript once.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const CHILDREN = 20;
const spawns = Array.from(
  { length: CHILDREN },
  (_, i) => `{ tool: "sessions_spawn", args: { task: "part ${i + 1}", label: "p${i + 1}", correlationId: "part-${i + 1}" } }`,
).join(',\n');

const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 10 },
  agents: {
    defaults: { subagents: { maxChildrenPerAgent: ${CHILDREN} } },
    list: [{ id: "boss", model: "scripted/boss" }],
  },
  models: { providers: { scripted: { type: "scripted", models: {
    boss: { rules: [
      { match: "sub-agent", delayMs: 120, reply: "ack" },
      { match: "fan out", steps: [{ toolCalls: [${spawns}] }, { text: "spawned" }] },
      { match: "part", delayMs: 700, reply: "result of {{input}}" },
    ] },
  } } } },
}`);
const BOSS = 'agent:boss:main';

interface View {
  subagentId: string;
  childSessionKey: string;
  state: string;
}

describe('sub-agent crash recovery', () => {
  it('SIGKILL at several points of a 20-child fan-out: each child succeeded or interrupted, one completion each', async () => {
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    const list = async () => (await gw.request<{ subagents: View[] }>('GET', '/v1/subagents')).body.subagents;
    expect((await gw.request('POST', '/v1/send', { target: 'boss', message: 'fan out', idempotencyKey: 'fan-out' })).status).toBe(200);
    await waitUntil(
      '20 children spawned and some running',
      async () => {
        const children = await list();
        return children.length === CHILDREN && children.some((child) => child.state === 'running');
      },
      10_000,
    );
    // 1: children running. 2 and 3: later, with completions being delivered and the parent reading them.
    for (const pause of [0, 900, 600]) {
      await new Promise((resolve) => setTimeout(resolve, pause + Math.floor(Math.random() * 200)));
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
    }
    await waitUntil(
      'every child settled, every completion consumed, nothing running',
      async () => {
        const children = await list();
        const status = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
        const inputs = await gw.request<{ session: unknown; queuedInputs: number }>('GET', `/v1/sessions/${encodeURIComponent(BOSS)}`);
        return (
          children.length === CHILDREN &&
          children.every((child) => !['pending', 'running'].includes(child.state)) &&
          status.body.activeRuns.length === 0 &&
          inputs.body.queuedInputs === 0
        );
      },
      60_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await stopGatewayProcess(gw)).toBe(0);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const children = await store.subagents.list();
      expect(children).toHaveLength(CHILDREN);
      const states = children.map((child) => child.state);
      expect(states.every((state) => state === 'succeeded' || state === 'interrupted')).toBe(true);
      expect(states.filter((state) => state === 'interrupted').length).toBeGreaterThan(0);
      const parentInputs = (await store.inputs.list({ sessionKey: BOSS })).filter(
        (input) => input.provenance.kind === 'subagent_completion',
      );
      const transcript = await store.transcript.list(BOSS);
      for (const child of children) {
        const mine = parentInputs.filter((input) => input.provenance.subagent?.id === child.id);
        expect({ child: child.label, completions: mine.length, status: mine[0]?.status }).toEqual({
          child: child.label,
          completions: 1,
          status: 'consumed',
        });
        expect(transcript.filter((entry) => entry.inputId === mine[0].id)).toHaveLength(1);
        expect(child.completion).toBe('delivered');
        const runs = await store.runs.list({ sessionKey: child.sessionKey });
        if (child.state === 'interrupted') {
          // Told the truth, not run again.
          expect(runs.map((run) => run.status)).toEqual(['interrupted']);
          expect(mine[0].text).toContain('was interrupted');
          expect((await store.inputs.list({ sessionKey: child.sessionKey }))[0].status).toBe('dropped');
        } else {
          expect(runs.filter((run) => run.status === 'succeeded')).toHaveLength(1);
          expect(mine[0].text).toContain(`Result:\nresult of ${child.task}`);
        }
      }
      expect(await store.runs.list({ status: 'running' })).toHaveLength(0);
    } finally {
      await store.close();
    }
  }, 180_000);
});
