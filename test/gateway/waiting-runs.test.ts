/**
 * Durable waits hold nothing while they wait (ARCHITECTURE.md 4.7): 500 runs suspended in waited sessions_sends at once
 * hold no lane slot, and the gateway's heap grows by less than 40 KB for each (20 MB for the 500) while they wait.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const WAITS = 500;
const BYTES_PER_WAIT = 40 * 1024;

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

// A full collection before each reading, so that what is counted is what is held, not garbage not yet collected.
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

describe('runs suspended in waits', () => {
  it(`${WAITS} waiting runs hold no lane slot and stay under ${BYTES_PER_WAIT / 1024} KB of heap each`, async () => {
    gateway = await startTestGateway(`{
      lanes: { main: { maxConcurrent: 4 }, suspendWaitsAfterMs: 0 },
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      agents: { list: [{ id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" }] },
      models: { providers: { scripted: { type: "scripted", models: {
        asker: { rules: [{ match: "ask (\\\\d+)", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "question {{match.1}}", timeoutSeconds: 3600 } }] },
          { text: "answer: {{tool.sessions_send.reply}}" },
        ] }] },
        expert: { rules: [{ delayMs: 3600000, reply: "much later" }] },
      } } } },
    }`);
    const gw = gateway;
    const before = heapUsed();
    for (let i = 0; i < WAITS; i += 1) {
      await gw.send({ target: 'asker', message: `ask ${i}`, inbound: { channel: 'api', peer: `p${i}` } });
    }
    await waitUntil(
      `${WAITS} runs wait`,
      async () => {
        const status = gw.status();
        return status.waitingRuns === WAITS && status.lanes.main.active === 0 && status.lanes.main.waiting === 0;
      },
      120_000,
      50,
    );
    expect(await gw.store.runs.list({ status: 'suspended', limit: 10_000 })).toHaveLength(WAITS);
    const grown = heapUsed() - before;
    expect(grown, `heap grew by ${Math.round(grown / 1024)} KB for ${WAITS} waiting runs`).toBeLessThan(WAITS * BYTES_PER_WAIT);
  }, 180_000);
});

describe('a run suspended in a wait can still be stopped', () => {
  const config = `{
    lanes: { suspendWaitsAfterMs: 0 },
    tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
    agents: { list: [{ id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" }] },
    models: { providers: { scripted: { type: "scripted", models: {
      asker: { rules: [
        { match: "ask", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "expert", message: "q", timeoutSeconds: 3600 } }] },
          { text: "answer: {{tool.sessions_send.reply}}" },
        ] },
        { reply: "handled {{input}}" },
      ] },
      expert: { rules: [{ delayMs: 3600000, reply: "much later" }] },
    } } } },
  }`;

  async function suspendedRun(gw: Gateway) {
    const sent = await gw.send({ target: 'asker', message: 'ask' });
    let runId = '';
    await waitUntil(
      'the asker waits',
      async () => {
        runId = (await gw.store.inputs.get(sent.input.id))?.runId ?? '';
        return runId !== '' && (await gw.store.runs.get(runId))?.waitingUntil !== null && gw.status().waitingRuns === 1;
      },
      10_000,
    );
    return runId;
  }

  it('runs cancel ends it cancelled', async () => {
    gateway = await startTestGateway(config);
    const gw = gateway;
    const runId = await suspendedRun(gw);
    expect(await gw.cancelRun(runId)).toBe(true);
    await waitUntil('the run is cancelled', async () => (await gw.store.runs.get(runId))?.status === 'cancelled', 10_000);
    const cancelled = (await gw.store.runs.get(runId))!;
    expect(cancelled.errorMessage).toBe('run was cancelled');
    // The step it committed before it waited is spent, and stays on the run.
    const [step] = await gw.store.steps.list(runId);
    expect(cancelled.usage).toMatchObject({ modelCalls: 1, steps: 1, inputTokens: step!.usage.inputTokens });
    expect(step!.usage.inputTokens).toBeGreaterThan(0);
  });

  it('an interrupt input ends it interrupted, then runs', async () => {
    gateway = await startTestGateway(config);
    const gw = gateway;
    const runId = await suspendedRun(gw);
    const sent = await gw.send({ target: 'asker', message: 'stop that', mode: 'interrupt' });
    const outcome = await gw.waitForInput(sent.input.id, 10_000);
    expect(outcome).toMatchObject({ status: 'completed', reply: 'handled stop that' });
    expect((await gw.store.runs.get(runId))?.status).toBe('interrupted');
  });
});

describe('a step whose calls wait beside calls that do not', () => {
  it("commits the other calls' results when it suspends: the resume runs only the wait again", async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-waits-ws-'));
    gateway = await startTestGateway(`{
      lanes: { suspendWaitsAfterMs: 0 },
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      agents: { defaults: { workspace: ${JSON.stringify(workspace)} }, list: [{ id: "asker", model: "scripted/asker" }, { id: "expert", model: "scripted/expert" }] },
      models: { providers: { scripted: { type: "scripted", models: {
        asker: { rules: [{ match: "ask", steps: [
          { toolCalls: [
            { tool: "sessions_send", args: { agentId: "expert", message: "q", timeoutSeconds: 60 } },
            { tool: "write_file", args: { path: "notes.txt", content: "asked" } },
          ] },
          { text: "answer: {{tool.sessions_send.reply}}" },
        ] }] },
        expert: { rules: [{ delayMs: 500, reply: "the answer" }] },
      } } } },
    }`);
    const gw = gateway;
    const sent = await gw.send({ target: 'asker', message: 'ask' });
    const outcome = await gw.waitForInput(sent.input.id, 20_000);
    expect(outcome).toMatchObject({ status: 'completed', reply: 'answer: the answer' });
    const run = (outcome as { run: { id: string; attempt: number } }).run;
    expect(run.attempt).toBeGreaterThan(1);
    // The write ran once: its result was committed with the suspension, and the resume did not call it again.
    const [write] = (await gw.store.toolCalls.list({ runId: run.id })).filter((call) => call.tool === 'write_file');
    expect(write).toMatchObject({ state: 'completed', calls: 1 });
    const [step] = await gw.store.steps.list(run.id);
    expect(step?.results?.map((result) => result.toolName).sort()).toEqual(['sessions_send', 'write_file']);
  });
});
