/**
 * When a lane looks at its session's queue again after a run: when the run's commit saw queued inputs, or an input
 * was accepted here since the run began. Another gateway's input shows in the commit (CommittedRun.queued).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

// A lease far longer than the tests: an input that waited for it would time out.
const config = `{
  lanes: { leaseTtlSeconds: 600 },
  agents: { list: [{ id: "worker", model: "scripted/worker" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    worker: { rules: [{ match: "slow", delayMs: 400, reply: "slow done" }, { reply: "got: {{inputs}}" }] },
  } } } },
}`;
const S = 'agent:worker:main';

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
  vi.restoreAllMocks();
});

/** Counts the lane's reads of session S's queue. */
function countQueueReads(gateway: Gateway): () => number {
  const read = vi.spyOn(gateway.store.inputs, 'listQueuedForPlan');
  return () => read.mock.calls.filter(([sessionKey]) => sessionKey === S).length;
}

describe('a lane after its run', () => {
  it('does not read the queue again when the commit saw nothing queued and nothing came since', async () => {
    const gateway = await startTestGateway(config);
    stop = () => stopTestGateway(gateway);
    const reads = countQueueReads(gateway);
    const sent = await gateway.send({ target: 'worker', message: 'hello', waiting: true });
    expect(await gateway.waitForInput(sent.input.id, 5000, true)).toMatchObject({ status: 'completed', reply: 'got: hello' });
    // Give a second look, were one coming, its turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reads()).toBe(1);
  });

  it('runs what was sent here during the run once it ends', async () => {
    const gateway = await startTestGateway(config);
    stop = () => stopTestGateway(gateway);
    const slow = await gateway.send({ target: 'worker', message: 'slow' });
    await waitUntil('the slow run is active', () => gateway.status().activeRuns.length === 1);
    const next = await gateway.send({ target: 'worker', message: 'next' });
    expect(await gateway.waitForInput(slow.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'slow done' });
    expect(await gateway.waitForInput(next.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'got: next' });
  });

  it('runs what another gateway on the store accepted during the run, without waiting out the lease', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    const { config: parsed } = parseConfigText(config, '/test/switchboard.json5', {});
    const here = await startGateway({ config: parsed, store, gatewayId: 'gw-here' });
    const there = await startGateway({ config: parsed, store, gatewayId: 'gw-there' });
    stop = async () => {
      await there.stop();
      await here.stop();
      await store.close();
    };
    const slow = await here.send({ target: 'worker', message: 'slow' });
    await waitUntil('the slow run is active here', () => here.status().activeRuns.length === 1);
    // The other gateway finds the session leased here and waits for the lease; nothing wakes this gateway's lane.
    const next = await there.send({ target: 'worker', message: 'next' });
    expect(await here.waitForInput(slow.input.id, 5000)).toMatchObject({ status: 'completed' });
    expect(await here.waitForInput(next.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'got: next' });
  });
});
