/**
 * Durable waits (ARCHITECTURE.md 4.7): a run waiting in a sessions_send is suspended (it holds no lane slot and no
 * memory) and resumes when the reply is committed. With the main lane at one run, another session of the same agent
 * runs while the first waits; the gateway is SIGKILLed during the wait and restarted; the reply resumes the sender
 * once, as its tool result.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { RunRecord } from '../../src/ports/index.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig(`{
  lanes: { main: { maxConcurrent: 1 } },
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  agents: { list: [{ id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    asker: { rules: [
      { match: "the reply to your sessions_send", reply: "late: {{input}}" },
      { match: "ask", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "the question", timeoutSeconds: 120 } }] },
        { text: "answer: {{tool.sessions_send.status}} {{tool.sessions_send.reply}}" },
      ] },
      { reply: "hello back" },
    ] },
    expert: { rules: [{ delayMs: 8000, reply: "the expert's answer" }] },
  } } } },
}`);
const ASKER = 'agent:asker:main';

const runsOf = async (gw: GatewayProcess, sessionKey: string) =>
  (await gw.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}`)).body.runs;

describe('durable waits', () => {
  it('a waited sessions_send frees its lane slot, survives a SIGKILL, and the reply resumes it once', async () => {
    let gw = await startGatewayProcess(configPath);
    expect((await gw.request('POST', '/v1/send', { target: 'asker', message: 'ask', idempotencyKey: 'ask-1' })).status).toBe(200);
    let waiting: RunRecord | undefined;
    // Suspended: its row says it waits, the main lane's one slot is free, and the gateway listens for its wake.
    await waitUntil(
      'the asker suspends in its wait and lets its lane slot go',
      async () => {
        waiting = (await runsOf(gw, ASKER)).find((run) => run.status === 'suspended' && run.waitingUntil !== null);
        const status = await gw.request<{ lanes: { main: { active: number } }; waitingRuns: number }>('GET', '/v1/status');
        return waiting !== undefined && status.body.lanes.main.active === 0 && status.body.waitingRuns === 1;
      },
      15_000,
    );

    // The main lane holds one run: another session of the asker runs while the first waits.
    const other = await gw.request<{ status: string; reply: string }>('POST', '/v1/send', {
      target: 'asker',
      peer: 'someone',
      message: 'hi',
      wait: true,
      timeoutSeconds: 30,
    });
    expect(other.body).toMatchObject({ status: 'ok', reply: 'hello back' });
    expect((await runsOf(gw, ASKER)).find((run) => run.id === waiting!.id)?.status).toBe('suspended');

    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    let done: RunRecord | undefined;
    await waitUntil(
      'the asker is resumed by the reply and succeeds',
      async () => {
        done = (await runsOf(gw, ASKER)).find((run) => run.id === waiting!.id && run.status === 'succeeded');
        return done !== undefined;
      },
      60_000,
    );
    expect(done!.finalText).toBe("answer: ok the expert's answer");
    expect(done!.attempt).toBeGreaterThan(1);
    // The model was asked for the sessions_send step once: the resumes replayed it.
    const steps = (await gw.request<{ steps: { step: number; attempt: number; state: string }[] }>('GET', `/v1/runs/${done!.id}`)).body
      .steps;
    expect(steps.map((step) => [step.step, step.attempt, step.state])).toEqual([
      [0, 1, 'settled'],
      [1, done!.attempt, 'final'],
    ]);
    await stopGatewayProcess(gw);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const transcript = await store.transcript.list(ASKER);
      const asToolResult = transcript.filter(
        (entry) => entry.role === 'tool' && JSON.stringify(entry.content).includes("the expert's answer"),
      );
      const asMessage = transcript.filter((entry) => entry.role === 'user' && String(entry.content).includes("the expert's answer"));
      expect({ asToolResult: asToolResult.length, asMessage: asMessage.length }).toEqual({ asToolResult: 1, asMessage: 0 });
      const events = (await store.events.list({ afterSeq: 0, limit: 10_000 })).filter((event) => event.runId === waiting!.id);
      expect(events.filter((event) => event.type === 'run.suspended').length).toBeGreaterThan(0);
      expect(events.filter((event) => event.type === 'run.resumed').length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  }, 120_000);
});
