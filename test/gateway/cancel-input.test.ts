/** Gateway.cancelInput: a running input's run is cancelled; a queued one is dropped, journalled, and its exchange told. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const config = `{
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  agents: { list: [{ id: "boss", model: "scripted/w" }, { id: "worker", model: "scripted/w" }] },
  models: { providers: { scripted: { type: "scripted", models: { w: { rules: [{ delayMs: 3000, reply: "done: {{input}}" }] } } } } },
}`;

describe('cancelInput', () => {
  it('cancels the run of a running input, and drops a queued one with the reason, telling its exchange', async () => {
    gateway = await startTestGateway(config);
    const running = await gateway.send({ target: 'worker', message: 'first' });
    await waitUntil('the first run is active', () => gateway.status().activeRuns.some((run) => run.runId));
    const queued = await gateway.sendAs('agent:boss:main', {
      agentId: 'worker',
      message: 'second',
      timeoutSeconds: 0,
      idempotencyKey: 'q',
    });

    await gateway.cancelInput(queued.inputId, 'cancelled by the test');
    await gateway.cancelInput(running.input.id, 'not used for a running input');
    expect(await gateway.waitForInput(running.input.id, 5000)).toMatchObject({ status: 'completed', run: { status: 'cancelled' } });
    expect(await gateway.store.inputs.get(queued.inputId)).toMatchObject({ status: 'dropped', note: 'cancelled by the test' });
    const dropped = (await gateway.journalAfter(0)).filter((event) => event.type === 'input.dropped');
    expect(dropped.map((event) => event.payload)).toEqual([{ inputId: queued.inputId, note: 'cancelled by the test' }]);
    const exchange = await waitUntil('the exchange learns of the drop', async () =>
      (await gateway.store.exchanges.list()).find((e) => e.phase === 'done'),
    );
    expect(exchange).toMatchObject({ replyStatus: 'dropped', replyText: 'cancelled by the test' });
  });
});
