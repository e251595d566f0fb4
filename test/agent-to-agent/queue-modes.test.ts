/** sessions_send to a busy target: each queue mode does what ARCHITECTURE.md section 5 says. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { QueueMode } from '../../src/core/queue-mode.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const W = 'agent:worker:main';
const config = `{
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  messages: { queue: { debounceMs: 150 } },
  agents: { list: [{ id: "boss", model: "scripted/worker" }, { id: "worker", model: "scripted/worker" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    worker: { rules: [
      { match: "slow", delayMs: 300, steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "done with: {{inputs}}" }] },
      { reply: "got: {{inputs}}" },
    ] },
  } } } },
}`;

async function busyWorker() {
  const first = await gateway.send({ target: 'worker', message: 'slow job' });
  await waitUntil('the worker is busy', () => gateway.status().activeRuns.some((run) => run.sessionKey === W && run.runId));
  return first;
}

let counter = 0;
const sendFromBoss = (message: string, mode: QueueMode) =>
  gateway.sendAs('agent:boss:main', { agentId: 'worker', message, mode, timeoutSeconds: 0, idempotencyKey: `k${++counter}` });

async function runOf(inputId: string) {
  const input = await waitUntil(`input ${inputId} consumed`, async () => {
    const found = await gateway.store.inputs.get(inputId);
    return found?.status === 'consumed' && found.runId ? found : undefined;
  });
  return (await gateway.getRun(input.runId!)).run;
}

describe('sessions_send to a busy target', () => {
  it('steer: reaches the running run at its next step', async () => {
    gateway = await startTestGateway(config);
    const first = await busyWorker();
    const sent = await sendFromBoss('also this', 'steer');
    const run = await runOf(sent.inputId);
    expect(run.id).toBe((await runOf(first.input.id)).id);
    expect(run.finalText).toBe('got: also this');
  });

  it('followup: runs after the current run, as its own run', async () => {
    gateway = await startTestGateway(config);
    const first = await busyWorker();
    const sent = await sendFromBoss('next', 'followup');
    const [a, b] = [await runOf(first.input.id), await runOf(sent.inputId)];
    expect(b.id).not.toBe(a.id);
    expect(b.startedAt).toBeGreaterThanOrEqual(a.endedAt!);
    expect(b.finalText).toBe('got: next');
  });

  it('collect: messages queued together are merged into one run', async () => {
    gateway = await startTestGateway(config);
    await busyWorker();
    const sent = [await sendFromBoss('one', 'collect'), await sendFromBoss('two', 'collect'), await sendFromBoss('three', 'collect')];
    const runs = await Promise.all(sent.map((s) => runOf(s.inputId)));
    expect(new Set(runs.map((run) => run.id)).size).toBe(1);
    expect(runs[0].finalText).toBe('got: one\ntwo\nthree');
  });

  it('interrupt: aborts the active run, records it interrupted, and runs the new message', async () => {
    gateway = await startTestGateway(config);
    const first = await busyWorker();
    const sent = await sendFromBoss('stop that', 'interrupt');
    const [aborted, next] = [await runOf(first.input.id), await runOf(sent.inputId)];
    expect(aborted).toMatchObject({ status: 'interrupted', errorCode: 'INTERRUPTED' });
    expect(next).toMatchObject({ status: 'succeeded', finalText: 'got: stop that' });
  });

  it('notify: stored in the target session, no run starts, no reply is expected', async () => {
    gateway = await startTestGateway(config);
    const first = await busyWorker();
    const sent = await sendFromBoss('fyi', 'notify');
    expect(sent).toMatchObject({
      status: 'accepted',
      note: 'stored in the target session without starting a run (mode "notify"); no reply will come',
    });
    await runOf(first.input.id);
    const stored = await waitUntil('the note is stored', async () => {
      const input = await gateway.store.inputs.get(sent.inputId);
      return input?.status === 'consumed' && input;
    });
    expect(stored.runId).toBeNull();
    expect(await gateway.listRuns({ sessionKey: W })).toHaveLength(1);
    expect(await gateway.store.exchanges.list()).toEqual([]);
  });
});
