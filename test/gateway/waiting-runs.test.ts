/**
 * Durable waits hold nothing while they wait (ARCHITECTURE.md 4.7): 500 runs suspended in waited sessions_sends at once
 * hold no lane slot, and the gateway's heap grows by less than 40 KB for each (20 MB for the 500) while they wait.
 */
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
