import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

const config = (extra = '') => `{
  ${extra}
  agents: { list: [{ id: "w", model: "scripted/w" }] },
  models: { providers: { scripted: { type: "scripted", models: { w: { rules: [{ reply: "seen: {{input}}" }] } } } } },
}`;
const S = 'agent:w:main';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

/** A store as a crashed gateway "gw-test" leaves it: a run still `running` with a claimed input. */
async function crashedStore() {
  const store = await SqliteStore.open({ path: ':memory:' });
  await store.sessions.ensure({ key: S, agentId: 'w' }, 1);
  await store.inputs.enqueue(
    { id: 'in-1', sessionKey: S, idempotencyKey: 'k1', mode: 'followup', text: 'charge the card', provenance: { kind: 'user' } },
    1,
  );
  await store.runs.start(
    { id: 'run-1', sessionKey: S, agentId: 'w', owner: 'gw-test', leaseTtlMs: 60_000, model: 'scripted/w', inputIds: ['in-1'] },
    2,
  );
  return store;
}

describe('recovery on start', () => {
  it('recovery: an orphaned run becomes interrupted and its input is retried once with a note', async () => {
    const store = await crashedStore();
    gateway = await startTestGateway(config(), {}, store);
    expect(gateway.lastRecovery).toEqual({
      interruptedRuns: ['run-1'],
      suspendedRuns: [],
      requeuedInputs: ['in-1'],
      droppedInputs: [],
      sessionKeys: [S],
    });
    const result = await gateway.waitForInput('in-1', 5000);
    expect(result).toMatchObject({ status: 'completed', reply: 'seen: charge the card', run: { status: 'succeeded' } });
    expect(await store.runs.get('run-1')).toMatchObject({ status: 'interrupted', errorCode: 'INTERRUPTED' });
    expect((await store.runs.get('run-1'))!.errorMessage).toMatch(/^gateway gw-test stopped while the run was active; recovered at /);
    const input = await store.inputs.get('in-1');
    expect(input).toMatchObject({ status: 'consumed', attempts: 2 });
    expect(input!.note).toMatch(/^previous attempt was interrupted: /);
  });

  it('recovery: with recovery.retryInterrupted = 0 the input is dropped, visibly, not rerun', async () => {
    const store = await crashedStore();
    gateway = await startTestGateway(config('recovery: { retryInterrupted: 0 },'), {}, store);
    expect(gateway.lastRecovery.droppedInputs).toEqual(['in-1']);
    expect(await gateway.waitForInput('in-1', 1000)).toMatchObject({
      status: 'dropped',
      input: { note: 'dropped after 1 interrupted attempts (recovery.retryInterrupted = 0)' },
    });
    expect((await store.events.list({ sessionKey: S })).map((e) => e.type)).toContain('input.dropped');
    expect(await store.runs.list({ sessionKey: S })).toHaveLength(1);
  });

  it('watchdog: a lane with queued inputs and no run is reported and repaired', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    gateway = await startTestGateway(config('watchdog: { intervalMs: 20, stallMs: 50 },'), {}, store);
    // Written behind the gateway's back, as a lost wake-up would leave it.
    await store.sessions.ensure({ key: S, agentId: 'w' }, Date.now());
    await store.inputs.enqueue(
      { id: 'in-2', sessionKey: S, idempotencyKey: 'k2', mode: 'followup', text: 'stuck?', provenance: { kind: 'user' } },
      Date.now(),
    );
    expect(await gateway.waitForInput('in-2', 5000)).toMatchObject({ status: 'completed', reply: 'seen: stuck?' });
    const stalled = (await store.events.list({ sessionKey: S })).filter((e) => e.type === 'lane.stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0].payload).toMatchObject({ sessionKey: S });
  });
});

describe('inputs nothing can run', () => {
  it('recovery: queued inputs for an agent removed from the config are dropped with the reason, not retried forever', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await store.sessions.ensure({ key: 'agent:gone:main', agentId: 'gone' }, 1);
    await store.inputs.enqueue(
      { id: 'in-9', sessionKey: 'agent:gone:main', idempotencyKey: 'k9', mode: 'followup', text: 'hello?', provenance: { kind: 'user' } },
      1,
    );
    gateway = await startTestGateway(config(), {}, store);
    expect(await gateway.waitForInput('in-9', 5000)).toMatchObject({
      status: 'dropped',
      input: { note: 'dropped: agent "gone" is no longer configured (agents.list)' },
    });
    expect(await store.runs.list({})).toHaveLength(0);
  });

  it('recovery: queued inputs for a session that was never created are dropped with the reason, and no run is made', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await store.inputs.enqueue(
      {
        id: 'in-8',
        sessionKey: 'agent:w:api:direct:nobody',
        idempotencyKey: 'k8',
        mode: 'followup',
        text: 'hi',
        provenance: { kind: 'user' },
      },
      1,
    );
    gateway = await startTestGateway(config(), {}, store);
    expect(await gateway.waitForInput('in-8', 5000)).toMatchObject({
      status: 'dropped',
      input: { note: 'dropped: session agent:w:api:direct:nobody does not exist' },
    });
    expect(await store.runs.list({})).toHaveLength(0);
  });

  it('leases: a session whose lease another gateway holds is left alone, and runs once the lease is free', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    await store.sessions.ensure({ key: S, agentId: 'w' }, 1);
    const held = await store.leases.acquire(S, 'gw-other', 60_000);
    gateway = await startTestGateway(config(), {}, store);
    const first = await gateway.send({ target: S, message: 'first' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await store.inputs.get(first.input.id)).toMatchObject({ status: 'queued', attempts: 0 });
    expect(await store.runs.list({})).toHaveLength(0);
    expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-other', epoch: held!.epoch });
    await store.leases.release(S, 'gw-other', held!.epoch);
    const second = await gateway.send({ target: S, message: 'second' });
    expect(await gateway.waitForInput(first.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'seen: first' });
    expect(await gateway.waitForInput(second.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'seen: second' });
    expect(await store.leases.get(S)).toBeUndefined();
  });
});
