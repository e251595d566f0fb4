import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

// "slow" answers its first step after a tool call, so a run has a step boundary where steering lands.
const config = (extra = '') => `{
  ${extra}
  agents: { list: [{ id: "worker", model: "scripted/worker" }] },
  messages: { queue: { mode: "followup", debounceMs: 150 } },
  models: { providers: { scripted: { type: "scripted", models: {
    worker: { rules: [
      { match: "slow", delayMs: 300, steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "done with: {{inputs}}" }] },
      { reply: "got: {{inputs}}" },
    ] },
  } } } },
}`;

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const S = 'agent:worker:main';

async function startSlowRun() {
  const first = await gateway.send({ target: 'worker', message: 'slow job' });
  await waitUntil('the slow run is active', () => gateway.status().activeRuns.some((run) => run.runId));
  return first;
}

async function userTexts() {
  return (await gateway.history(S)).filter((entry) => entry.role === 'user').map((entry) => entry.content);
}

describe('queue modes on a busy session', () => {
  it('steer: reaches the running run at its next step and is answered by it', async () => {
    gateway = await startTestGateway(config());
    const first = await startSlowRun();
    const steer = await gateway.send({ target: 'worker', message: 'also this', mode: 'steer' });
    const done = await gateway.waitForInput(first.input.id, 10_000);
    const steered = await gateway.waitForInput(steer.input.id, 10_000);
    expect(done.status).toBe('completed');
    if (done.status !== 'completed' || steered.status !== 'completed') throw new Error('not completed');
    expect(steered.run.id).toBe(done.run.id);
    // The steered message is the newest the model sees, so the same run answers it.
    expect(done.reply).toBe('got: also this');
    expect(await gateway.listRuns({ sessionKey: S })).toHaveLength(1);
    expect((await gateway.history(S)).map((e) => e.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
  });

  it('followup: runs after the current run, as a run of its own', async () => {
    gateway = await startTestGateway(config());
    const first = await startSlowRun();
    const next = await gateway.send({ target: 'worker', message: 'next one', mode: 'followup' });
    const a = await gateway.waitForInput(first.input.id, 10_000);
    const b = await gateway.waitForInput(next.input.id, 10_000);
    if (a.status !== 'completed' || b.status !== 'completed') throw new Error('not completed');
    expect(a.run.id).not.toBe(b.run.id);
    expect(b.run.startedAt).toBeGreaterThanOrEqual(a.run.endedAt!);
    expect(b.reply).toBe('got: next one');
  });

  it('collect: queued inputs are merged into one run after the quiet window', async () => {
    gateway = await startTestGateway(config());
    const first = await startSlowRun();
    const ids = [];
    for (const text of ['one', 'two', 'three'])
      ids.push((await gateway.send({ target: 'worker', message: text, mode: 'collect' })).input.id);
    await gateway.waitForInput(first.input.id, 10_000);
    const results = await Promise.all(ids.map((id) => gateway.waitForInput(id, 10_000)));
    const runIds = new Set(results.map((r) => (r.status === 'completed' ? r.run.id : 'x')));
    expect(runIds.size).toBe(1);
    expect(results[0]).toMatchObject({ reply: 'got: one\ntwo\nthree' });
    expect(await gateway.listRuns({ sessionKey: S })).toHaveLength(2);
  });

  it('interrupt: aborts the active run, records it interrupted with its partial output, then runs the new input', async () => {
    gateway = await startTestGateway(config());
    const first = await startSlowRun();
    const urgent = await gateway.send({ target: 'worker', message: 'stop, do this', mode: 'interrupt' });
    const a = await gateway.waitForInput(first.input.id, 10_000);
    const b = await gateway.waitForInput(urgent.input.id, 10_000);
    expect(a).toMatchObject({ status: 'completed', run: { status: 'interrupted', errorCode: 'INTERRUPTED' } });
    expect(b).toMatchObject({ status: 'completed', reply: 'got: stop, do this', run: { status: 'succeeded' } });
    expect(await userTexts()).toEqual(['slow job', 'stop, do this']);
  });

  it('notify: stores the message in the session and starts no run, busy or idle', async () => {
    gateway = await startTestGateway(config());
    const note = await gateway.send({ target: 'worker', message: 'fyi: the build is green', mode: 'notify' });
    expect(await gateway.waitForInput(note.input.id, 5000)).toMatchObject({ status: 'stored' });
    expect(await gateway.listRuns({ sessionKey: S })).toHaveLength(0);
    const first = await startSlowRun();
    const busyNote = await gateway.send({ target: 'worker', message: 'fyi again', mode: 'notify' });
    expect(await gateway.waitForInput(busyNote.input.id, 5000)).toMatchObject({ status: 'stored' });
    await gateway.waitForInput(first.input.id, 10_000);
    expect(await gateway.listRuns({ sessionKey: S })).toHaveLength(1);
    expect(await userTexts()).toContain('fyi: the build is green');
  });

  it('notify: one still queued at start (its storing lost with the power) is stored then, once', async () => {
    // Storing a notify input is an internal write, not synced on its own: what a power loss takes back is this.
    const store = await SqliteStore.open({ path: ':memory:' });
    await store.sessions.ensure({ key: S, agentId: 'worker' }, Date.now());
    const left = { id: 'in-left', sessionKey: S, idempotencyKey: 'k-left', text: 'fyi: deployed' };
    await store.inputs.enqueue({ ...left, mode: 'notify', provenance: { kind: 'user' } }, Date.now());
    gateway = await startTestGateway(config(), {}, store);
    expect(await gateway.waitForInput('in-left', 5000)).toMatchObject({ status: 'stored' });
    expect(await userTexts()).toEqual(['fyi: deployed']);
    expect(await gateway.listRuns({ sessionKey: S })).toHaveLength(0);
  });

  it('queue: the per-channel default mode applies when the input names none', async () => {
    gateway = await startTestGateway(
      config().replace('debounceMs: 150', 'debounceMs: 150, byChannel: { ops: "notify", chat: { mode: "collect", debounceMs: 20 } }'),
    );
    const sent = await gateway.send({ target: 'worker', message: 'status ping', inbound: { channel: 'ops' } });
    expect(sent.input.mode).toBe('notify');
    expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({ status: 'stored' });
    const chat = await gateway.send({ target: 'worker', message: 'quick', inbound: { channel: 'chat' } });
    expect(chat.input.mode).toBe('collect');
    const result = await gateway.waitForInput(chat.input.id, 5000);
    if (result.status !== 'completed') throw new Error('not completed');
    // The channel's 20 ms window, not the default 150 ms.
    expect(result.run.startedAt - chat.input.createdAt).toBeLessThan(150);
  });

  it('lanes: the main lane cap holds runs back without losing them', async () => {
    gateway = await startTestGateway(
      config('lanes: { main: { maxConcurrent: 1 } },').replace(
        '{ id: "worker", model: "scripted/worker" }',
        '{ id: "worker", model: "scripted/worker" }, { id: "other", model: "scripted/worker" }',
      ),
    );
    const a = await gateway.send({ target: 'worker', message: 'slow a' });
    const b = await gateway.send({ target: 'other', message: 'slow b' });
    await waitUntil('a session waits for a lane slot', () => gateway.status().lanes.main.waiting > 0);
    expect(gateway.status().lanes.main).toMatchObject({ active: 1, waiting: 1, max: 1 });
    const ra = await gateway.waitForInput(a.input.id, 10_000);
    const rb = await gateway.waitForInput(b.input.id, 10_000);
    if (ra.status !== 'completed' || rb.status !== 'completed') throw new Error('not completed');
    expect(rb.run.startedAt).toBeGreaterThanOrEqual(ra.run.endedAt!);
  });

  it('lanes: a full wait queue refuses new work with LANE_QUEUE_FULL before accepting it', async () => {
    gateway = await startTestGateway(
      config('lanes: { main: { maxConcurrent: 1 }, maxWaiting: 1 },').replace(
        '{ id: "worker", model: "scripted/worker" }',
        '{ id: "worker", model: "scripted/worker" }, { id: "b", model: "scripted/worker" }, { id: "c", model: "scripted/worker" }',
      ),
    );
    await gateway.send({ target: 'worker', message: 'slow a' });
    await gateway.send({ target: 'b', message: 'slow b' });
    await waitUntil('a session waits for a lane slot', () => gateway.status().lanes.main.waiting > 0);
    await expect(gateway.send({ target: 'c', message: 'c' })).rejects.toMatchObject({
      code: 'LANE_QUEUE_FULL',
      message: 'the main lane already has 1 sessions waiting (lanes.maxWaiting); retry later',
    });
    expect(await gateway.store.inputs.list({ sessionKey: 'agent:c:main' })).toHaveLength(0);
  });
});
