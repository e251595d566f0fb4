/**
 * SIGKILL a real gateway three times while a keyless model waits in a2a_send, with
 * `recovery.retryInterrupted: 3`. The remote (an SDK reference server in this process) gets one task per
 * round, whose messageId is the call's ledger key; the rerun sends nothing, and each result reaches the
 * session exactly once (as the tool result or as a message).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ReferenceExecutor, referenceServer } from '../helpers/a2a-reference.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const ROUNDS = 3;
const executor = new ReferenceExecutor();
let remote: Awaited<ReturnType<typeof referenceServer>>;
beforeAll(async () => {
  remote = await referenceServer(true, executor);
});
afterAll(() => {
  remote.server.closeAllConnections();
  remote.server.close();
});

describe('a2a_send crash recovery', () => {
  it('SIGKILL three times during a waited a2a_send from a keyless model: one remote task per round, each result delivered once', async () => {
    const { dir, configPath } = tempConfig(`{
      recovery: { retryInterrupted: 3 },
      tools: { agentToAgent: { enabled: true, allow: ["caller", "ref"] } },
      a2a: { remoteAgents: [{ id: "ref", url: "${remote.url}" }], client: { maxPollSeconds: 1 } },
      agents: { list: [{ id: "caller", model: "scripted/c" }] },
      models: { providers: { scripted: { type: "scripted", models: { c: { rules: [
        { match: "the result of your a2a_send", reply: "late result" },
        { match: "ask (\\\\d+)", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "slow question {{match.1}}", timeoutSeconds: 30 } }] }, { text: "answer: {{tool.a2a_send.text}}" }] },
      ] } } } } },
    }`);
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    for (let i = 1; i <= ROUNDS; i += 1) {
      expect((await gw.request('POST', '/v1/send', { target: 'caller', message: `ask ${i}`, idempotencyKey: `ask-${i}` })).status).toBe(
        200,
      );
      await waitUntil(`the remote works on question ${i}`, async () => executor.messageIds.length >= i, 15_000);
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.floor(Math.random() * 800)));
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
    }
    await waitUntil(
      'every question is answered and the lanes are quiet',
      async () => {
        const { body } = await gw.request<{ runs: { status: string; finalText: string | null }[] }>('GET', '/v1/runs?limit=200');
        const status = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
        const settled = body.runs.filter((run) => run.status === 'succeeded').length;
        return settled >= ROUNDS && body.runs.every((run) => run.status !== 'running') && status.body.activeRuns.length === 0;
      },
      60_000,
    );
    // Results that were still on their way are delivered by the follower; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await stopGatewayProcess(gw)).toBe(0);

    // One message (one task) per round reached the remote, and each carries the call's ledger key.
    expect(executor.messageIds).toHaveLength(ROUNDS);
    expect(new Set(executor.messageIds).size).toBe(ROUNDS);
    expect(executor.messageIds.every((id) => id.startsWith('tc:'))).toBe(true);
    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const transcript = await store.transcript.list('agent:caller:main');
      for (let i = 1; i <= ROUNDS; i += 1) {
        const answer = `ref: slow question ${i}`;
        const asToolResult = transcript.filter((entry) => entry.role === 'tool' && JSON.stringify(entry.content).includes(answer)).length;
        const asMessage = transcript.filter((entry) => entry.role === 'user' && String(entry.content).includes(answer)).length;
        expect({ round: i, deliveries: asToolResult + asMessage }).toEqual({ round: i, deliveries: 1 });
      }
      // The kills cut runs: resumed from their last step (a later attempt), or interrupted when cut before one.
      const cut = (await store.runs.list({ limit: 100 })).filter((run) => run.status === 'interrupted' || run.attempt > 1);
      expect(cut.length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  }, 180_000);
});
