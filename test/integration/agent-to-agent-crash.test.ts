/**
 * SIGKILL a real gateway while an agent waits in sessions_send. After restarts, each question reached
 * the expert once, and each answer reached the asking session exactly once: as its tool result or as a
 * late-reply message, never both, never neither. The same for sends the asker did not wait for and then
 * collected with sessions_wait: the reply is in the wait's answer or comes as a message, once.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const configText = `{
  recovery: { retryInterrupted: 10 },
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  agents: { list: [{ id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    asker: { rules: [
      { match: "the reply to your sessions_send", reply: "late: {{input}}" },
      { match: "hold (\\\\d+)", delayMs: 300, steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "held question {{match.1}}", timeoutSeconds: 0, idempotencyKey: "h-{{match.1}}" } }] },
        { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: ["agent:expert:main"], timeoutMs: 200 } }] },
        { text: "waited: {{tool.sessions_wait.sessions.0.replies.0.reply}}" },
      ] },
      { match: "go (\\\\d+)", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "question {{match.1}}", timeoutSeconds: 30, idempotencyKey: "q-{{match.1}}" } }] },
        { text: "answer: {{tool.sessions_send.status}} {{tool.sessions_send.reply}}" },
      ] },
    ] },
    expert: { rules: [{ delayMs: 500, reply: "expert says {{input}}!" }] },
  } } } },
}`;
const ASKER = 'agent:asker:main';
const EXPERT = 'agent:expert:main';
const ROUNDS = 4;

/**
 * Sends `<word> N` for N = 1..ROUNDS to the asker, each time killing its gateway within `killWithinMs` after the
 * expert starts answering. Then each question reached the expert once, and each answer reached the asker once:
 * as a tool result or as a late-reply message.
 */
async function killDuringAnswers(word: string, question: string, killWithinMs: number) {
  const { dir, configPath } = tempConfig(configText);
  let gw: GatewayProcess = await startGatewayProcess(configPath);
  for (let i = 1; i <= ROUNDS; i += 1) {
    const sent = await gw.request('POST', '/v1/send', { target: 'asker', message: `${word} ${i}`, idempotencyKey: `${word}-${i}` });
    expect(sent.status).toBe(200);
    // Kill while the expert is answering, so the asker is inside its wait (or holds the exchange).
    await waitUntil(
      `the expert works on question ${i}`,
      async () => {
        const runs = await gw.request<{ runs: { status: string }[] }>('GET', `/v1/runs?sessionKey=${EXPERT}`);
        return runs.body.runs.some((run) => run.status === 'running');
      },
      10_000,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * killWithinMs)));
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
  }
  await waitUntil(
    'every exchange is settled and the lanes are quiet',
    async () => {
      const { body } = await gw.request<{ exchanges: { phase: string; replyState: string }[] }>('GET', '/v1/exchanges');
      const status = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
      return (
        body.exchanges.length === ROUNDS &&
        body.exchanges.every((e) => e.phase === 'done' && e.replyState === 'delivered') &&
        status.body.activeRuns.length === 0
      );
    },
    30_000,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await stopGatewayProcess(gw)).toBe(0);

  const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
  try {
    const questions = (await store.inputs.list({ sessionKey: EXPERT })).map((input) => input.text).sort();
    expect(questions).toEqual(Array.from({ length: ROUNDS }, (_, i) => `${question} ${i + 1}`));
    const transcript = await store.transcript.list(ASKER);
    for (let i = 1; i <= ROUNDS; i += 1) {
      const answer = `expert says ${question} ${i}!`;
      const asToolResult = transcript.filter((entry) => entry.role === 'tool' && JSON.stringify(entry.content).includes(answer));
      const asMessage = transcript.filter(
        (entry) => entry.role === 'user' && entry.provenance?.exchange?.step === 'reply' && entry.content === answer,
      );
      expect({ question: i, deliveries: asToolResult.length + asMessage.length }).toEqual({ question: i, deliveries: 1 });
    }
    // The kills landed inside waits: the asker's runs had committed the step that sent, and resumed from it (a later
    // attempt of the same run). An expert's run cut too (one model call, no step to resume from) is interrupted; under
    // load the kill may come after it answered, so only the asker's is counted.
    const resumed = (await store.runs.list({})).filter((run) => run.agentId === 'asker' && run.attempt > 1);
    expect(resumed.length).toBeGreaterThan(0);
    expect(await store.runs.list({ status: 'running' })).toHaveLength(0);
  } finally {
    await store.close();
  }
}

describe('agent-to-agent crash recovery', () => {
  it('SIGKILL during a waited sessions_send: after restart the reply reaches the requester exactly once', async () => {
    await killDuringAnswers('go', 'question', 400);
  }, 120_000);

  it("SIGKILL around a sessions_wait for sends it did not wait for: each reply is in a wait's answer or comes as a message, once", async () => {
    await killDuringAnswers('hold', 'held question', 700);
  }, 120_000);
});
