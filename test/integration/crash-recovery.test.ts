/**
 * SIGKILL a real gateway repeatedly while eight clients stream sends into it; after a final restart every
 * acknowledged input must be consumed by exactly one committed run: never lost, never consumed twice.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const AGENTS = ['a', 'b', 'c'];
const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 10 },
  agents: { list: [${AGENTS.map((id) => `{ id: "${id}", model: "scripted/work" }`).join(', ')}] },
  models: { providers: { scripted: { type: "scripted", models: {
    work: { rules: [{ delayMs: 40, steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "done: {{input}}" }] }] },
  } } } },
}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('crash recovery', () => {
  it('recovery: SIGKILL during streams of concurrent sends loses no accepted input and consumes none twice', async () => {
    // Eight senders at once, so that accepts and runs share the store's grouped commits when the kill lands.
    const total = 120;
    const parallel = 8;
    const acked = new Map<string, string>(); // idempotency key -> input id
    const changed: string[] = [];
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    let next = 0;
    let kills = 0;

    const trySend = async (i: number) => {
      const key = `msg-${i}`;
      try {
        const response = await gw.request<{ inputId: string }>('POST', '/v1/send', {
          target: AGENTS[i % AGENTS.length],
          message: `job ${i}`,
          idempotencyKey: key,
        });
        if (response.status !== 200) return;
        if (acked.has(key) && acked.get(key) !== response.body.inputId) changed.push(key);
        acked.set(key, response.body.inputId);
      } catch {
        // The gateway died mid-request: the client sends again with the same key.
      }
    };
    const sendSome = async () => {
      await Promise.all(Array.from({ length: Math.min(parallel, total - next) }, (_, k) => trySend(next + k)));
      while (next < total && acked.has(`msg-${next}`)) next += 1;
    };

    while (kills < 5) {
      const killAt = Date.now() + 150 + Math.floor(Math.random() * 250);
      while (Date.now() < killAt && next < total) {
        await sendSome();
        await sleep(5);
      }
      await stopGatewayProcess(gw, 'SIGKILL');
      kills += 1;
      gw = await startGatewayProcess(configPath);
    }
    while (next < total) await sendSome();
    expect(changed).toEqual([]);
    // Resending with the same key returns the same input; waiting on it drains the queues.
    for (let i = 0; i < total; i += 1) {
      const again = await gw.request<{ inputId: string; status: string; runStatus: string }>('POST', '/v1/send', {
        target: AGENTS[i % AGENTS.length],
        message: `job ${i}`,
        idempotencyKey: `msg-${i}`,
        wait: true,
        timeoutSeconds: 60,
      });
      expect(again.body.inputId).toBe(acked.get(`msg-${i}`));
      expect(again.body).toMatchObject({ status: 'ok', runStatus: 'succeeded' });
    }
    expect(await stopGatewayProcess(gw)).toBe(0);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const inputs = await store.inputs.list({});
      expect(inputs).toHaveLength(total);
      for (const input of inputs) {
        expect(input.status).toBe('consumed');
        const run = await store.runs.get(input.runId!);
        expect(run?.status).toBe('succeeded');
      }
      const userEntries = [];
      for (const agent of AGENTS)
        userEntries.push(...(await store.transcript.list(`agent:${agent}:main`)).filter((e) => e.role === 'user'));
      const perInput = new Map<string, number>();
      for (const entry of userEntries) perInput.set(entry.inputId!, (perInput.get(entry.inputId!) ?? 0) + 1);
      expect(perInput.size).toBe(total);
      expect([...perInput.values()].every((count) => count === 1)).toBe(true);
      const interrupted = await store.runs.list({ status: 'interrupted' });
      // The kills landed on active runs: otherwise this test proves nothing about recovery.
      expect(interrupted.length).toBeGreaterThan(0);
      for (const run of interrupted) expect(run.errorMessage).toMatch(/stopped while the run was active/);
      expect(await store.runs.list({ status: 'running' })).toHaveLength(0);
    } finally {
      await store.close();
    }
  }, 120_000);
});
