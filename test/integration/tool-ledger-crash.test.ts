/**
 * SIGKILL a real gateway three times while tool calls are in flight, with models that pass no keys (as
 * real models do) and `recovery.retryInterrupted: 3`. The rerun makes the same calls with new tool-call
 * ids; the ledger keys them by their place, so each effect happens exactly once: one question per round
 * reaches the expert, and one child per round is spawned.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 3 },
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  agents: { defaults: { subagents: { allowAgents: ["worker"], retryInterrupted: true } }, list: [
    { id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" },
    { id: "lead", model: "scripted/lead" }, { id: "worker", model: "scripted/worker" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    asker: { rules: [
      { match: "the reply to your sessions_send", reply: "late" },
      { match: "go (\\\\d+)", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "question {{match.1}}", timeoutSeconds: 30 } }] },
        { text: "answer: {{tool.sessions_send.status}}" },
      ] },
    ] },
    expert: { rules: [{ delayMs: 700, reply: "expert says {{input}}" }] },
    lead: { rules: [
      { match: "spawn (\\\\d+)", steps: [
        { toolCalls: [{ tool: "sessions_spawn", args: { agentId: "worker", task: "job {{match.1}}" } }] },
        { toolCalls: [{ tool: "subagents", args: { action: "wait", timeoutMs: 20000 } }] },
        { text: "waited" },
      ] },
      { reply: "noted" },
    ] },
    worker: { rules: [{ delayMs: 700, reply: "done {{input}}" }] },
  } } } },
}`);
const ROUNDS = 3;

describe('tool-call ledger crash recovery', () => {
  it('SIGKILL three times during sessions_send and sessions_spawn from keyless models: each effect happens exactly once', async () => {
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    for (let i = 1; i <= ROUNDS; i += 1) {
      expect((await gw.request('POST', '/v1/send', { target: 'asker', message: `go ${i}`, idempotencyKey: `go-${i}` })).status).toBe(200);
      expect((await gw.request('POST', '/v1/send', { target: 'lead', message: `spawn ${i}`, idempotencyKey: `spawn-${i}` })).status).toBe(
        200,
      );
      // Kill once the calls are in flight: the asker waits for the expert, the lead for its worker.
      await waitUntil(
        `round ${i} is in flight`,
        async () => {
          const runs = await gw.request<{ runs: { status: string; agentId: string }[] }>('GET', '/v1/runs?limit=200');
          const running = new Set(runs.body.runs.filter((run) => run.status === 'running').map((run) => run.agentId));
          return running.has('expert') && running.has('worker');
        },
        15_000,
      );
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 300)));
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
    }
    await waitUntil(
      'every round is answered and the lanes are quiet',
      async () => {
        const runs = await gw.request<{ runs: { status: string; agentId: string; finalText: string | null }[] }>(
          'GET',
          '/v1/runs?limit=500',
        );
        const status = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
        const succeeded = (agentId: string) => runs.body.runs.filter((run) => run.agentId === agentId && run.status === 'succeeded').length;
        return (
          succeeded('asker') >= ROUNDS &&
          succeeded('lead') >= ROUNDS &&
          runs.body.runs.every((run) => run.status !== 'running') &&
          status.body.activeRuns.length === 0
        );
      },
      60_000,
    );
    expect(await stopGatewayProcess(gw)).toBe(0);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const questions = (await store.inputs.list({ sessionKey: 'agent:expert:main' })).map((input) => input.text).sort();
      expect(questions).toEqual(Array.from({ length: ROUNDS }, (_, i) => `question ${i + 1}`));
      const children = (await store.subagents.list({ parentSession: 'agent:lead:main' })).map((child) => child.task).sort();
      expect(children).toEqual(Array.from({ length: ROUNDS }, (_, i) => `job ${i + 1}`));
      // The kills landed inside the calls: the callers' runs were cut there, and resumed from the step that made the call
      // (a later attempt, its tools run again through the ledger), or interrupted and rerun when cut before it.
      const cut = (await store.runs.list({ limit: 500 })).filter((run) => run.status === 'interrupted' || run.attempt > 1);
      expect(cut.filter((run) => run.agentId === 'asker').length).toBeGreaterThan(0);
      expect(cut.filter((run) => run.agentId === 'lead').length).toBeGreaterThan(0);
      // Each call is one ledger row, made again by the reruns.
      const sends = await store.toolCalls.list({ sessionKey: 'agent:asker:main' });
      expect(sends).toHaveLength(ROUNDS);
      expect(sends.every((call) => call.tool === 'sessions_send' && call.divergedFrom === null)).toBe(true);
      expect(sends.some((call) => call.calls > 1)).toBe(true);
      const spawns = (await store.toolCalls.list({ sessionKey: 'agent:lead:main' })).filter((call) => call.tool === 'sessions_spawn');
      expect(spawns).toHaveLength(ROUNDS);
      // A spawn whose step's results were committed before the kill is replayed from the step, not made again (its row
      // counts one call); one whose results were not is made again at the same place, and finds its child by the key.
      expect(spawns.every((call) => call.divergedFrom === null && call.calls <= 2)).toBe(true);
    } finally {
      await store.close();
    }
  }, 180_000);
});
