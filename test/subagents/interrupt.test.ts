/**
 * Codex's interrupt_agent as `subagents interrupt`: the sub-agent's current run stops and the sub-agent is kept. Without
 * a message it is recorded `interrupted` with the reason (its parent is not told, its live descendants are cancelled)
 * and takes a follow-up later; with one it goes on at once with that task, live throughout, and reports once.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const MAIN = 'agent:main:main';
const from = (idempotencyKey = `test:${Math.random()}`) => ({ sessionKey: MAIN, agentId: 'main', idempotencyKey });

const config = `{
  agents: { defaults: { subagents: { maxSpawnDepth: 2, maxChildrenPerAgent: 5 } }, list: [{ id: "main", model: "scripted/main" }] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [
    { match: "All your sub-agents have finished", reply: "lead done" },
    { match: "kill the worker", steps: [{ toolCalls: [{ tool: "subagents", args: { action: "kill", target: "w1" } }] }, { text: "{{tool.subagents}}" }] },
    { match: "sub-agent \\"counter\\"", reply: "noted" },
    { match: "stop it", steps: [
        { toolCalls: [{ tool: "subagents", args: { action: "interrupt", target: "counter", reason: "wrong approach" } }] },
        { text: "{{tool.subagents}}" }] },
    { match: "lead", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "count slowly", label: "w1" } }] }, { text: "lead waits" }] },
    { match: "slowly", delayMs: 30000, reply: "counted slowly" },
    { match: "count (\\\\w+)", reply: "counted {{match.1}}" },
    { reply: "noted" },
  ] } } } } },
}`;

const record = async (key: string) => (await gateway.store.subagents.getBySession(key))!;
const completionRows = async (childSessionKey: string) =>
  (await gateway.store.outbox.list()).filter(
    (row) => row.kind === 'subagent.completion' && (row.payload as { childSessionKey: string }).childSessionKey === childSessionKey,
  );

async function slowCounter() {
  await gateway.openSession(MAIN, 'main');
  const child = await gateway.subagents.spawn(from(), { task: 'count slowly', label: 'counter' });
  await waitUntil('the child runs', async () => (await record(child.childSessionKey)).state === 'running');
  return child;
}

describe('subagents interrupt', () => {
  it('without a message: its run stops, it is recorded interrupted with the reason, the parent is not told, and a follow-up runs it again', async () => {
    gateway = await startTestGateway(config);
    const child = await slowCounter();
    const sent = await gateway.send({ target: 'main', message: 'stop it' });
    const outcome = await gateway.waitForInput(sent.input.id, 10_000);
    expect(outcome.status).toBe('completed');
    expect(JSON.parse((outcome as { reply: string }).reply)).toMatchObject({
      status: 'interrupted',
      childSessionKey: child.childSessionKey,
      previousState: 'running',
      cancelled: [],
    });
    const interrupted = await record(child.childSessionKey);
    expect(interrupted).toMatchObject({ state: 'interrupted', completion: 'skipped' });
    expect(interrupted.diagnostic).toBe(`interrupted by ${MAIN}: wrong approach`);
    await waitUntil('its run ended', async () => (await gateway.getRun(child.runId)).run.status !== 'running');
    expect(await completionRows(child.childSessionKey)).toHaveLength(0);

    const again = await gateway.subagents.followup(interrupted, from(), 'count goats');
    expect(again).toMatchObject({ reopened: true, previousState: 'interrupted' });
    const done = await waitUntil('the follow-up settled', async () => {
      const current = await record(child.childSessionKey);
      return current.state === 'succeeded' && current;
    });
    expect(done.result).toBe('counted goats');
    expect(await completionRows(child.childSessionKey)).toHaveLength(1);
  });

  it('with a message: the current run is aborted and it goes on at once with the new task, live throughout, reporting once', async () => {
    gateway = await startTestGateway(config);
    const child = await slowCounter();
    const answer = await gateway.subagents.interrupt(await record(child.childSessionKey), from(), { message: 'count goats' });
    expect(answer).toMatchObject({ status: 'accepted', previousState: 'running', reopened: false });
    const done = await waitUntil('it settled with the new task', async () => {
      const current = await record(child.childSessionKey);
      return current.state === 'succeeded' && current;
    });
    expect(done.result).toBe('counted goats');
    expect((await gateway.getRun(child.runId)).run.status).toBe('interrupted');
    expect(done.history.map((step) => step.state)).toEqual(['pending', 'running', 'succeeded']);
    expect(await completionRows(child.childSessionKey)).toHaveLength(1);
  });

  it("interrupting a worker of one's orchestrator tells the orchestrator, which is woken instead of waiting for good", async () => {
    gateway = await startTestGateway(config);
    await gateway.openSession(MAIN, 'main');
    const lead = await gateway.subagents.spawn(from(), { task: 'lead', role: 'orchestrator' });
    const [worker] = await waitUntil('the lead waits for its running worker', async () => {
      const workers = await gateway.listSubagents(lead.childSessionKey);
      return workers.length === 1 && workers[0].state === 'running' && (await record(lead.childSessionKey)).waiting && workers;
    });
    expect(await gateway.subagents.interrupt(await record(worker.childSessionKey), from(), { reason: 'enough' })).toMatchObject({
      status: 'interrupted',
    });
    const done = await waitUntil('the lead was woken and finished', async () => {
      const current = await record(lead.childSessionKey);
      return current.state === 'succeeded' && current;
    });
    expect(done.result).toBe('lead done');
    expect((await record(worker.childSessionKey)).completion).toBe('delivered');
  });

  it("subagents kill of a worker of one's orchestrator tells the orchestrator, which is woken instead of waiting for good", async () => {
    gateway = await startTestGateway(config);
    await gateway.openSession(MAIN, 'main');
    const lead = await gateway.subagents.spawn(from(), { task: 'lead', role: 'orchestrator' });
    const [worker] = await waitUntil('the lead waits for its running worker', async () => {
      const workers = await gateway.listSubagents(lead.childSessionKey);
      return workers.length === 1 && workers[0].state === 'running' && (await record(lead.childSessionKey)).waiting && workers;
    });
    const sent = await gateway.send({ target: 'main', message: 'kill the worker' });
    const outcome = await gateway.waitForInput(sent.input.id, 10_000);
    expect(JSON.parse((outcome as { reply: string }).reply)).toEqual({ status: 'killed', cancelled: [worker.childSessionKey] });
    const done = await waitUntil('the lead was woken and finished', async () => {
      const current = await record(lead.childSessionKey);
      return current.state === 'succeeded' && current;
    });
    expect(done.result).toBe('lead done');
  });

  it('interrupting an orchestrator cancels its live workers; a sub-agent that is not working is left as it is', async () => {
    gateway = await startTestGateway(config);
    await gateway.openSession(MAIN, 'main');
    const lead = await gateway.subagents.spawn(from(), { task: 'lead', role: 'orchestrator' });
    const [worker] = await waitUntil('the worker runs', async () => {
      const workers = await gateway.listSubagents(lead.childSessionKey);
      return workers.length === 1 && workers[0].state === 'running' && workers;
    });
    const answer = await gateway.subagents.interrupt(await record(lead.childSessionKey), from(), {});
    expect(answer).toMatchObject({ cancelled: [worker.childSessionKey] });
    expect((await record(worker.childSessionKey)).state).toBe('cancelled');
    expect((await record(lead.childSessionKey)).state).toBe('interrupted');
    expect(await gateway.subagents.interrupt(await record(worker.childSessionKey), from(), {})).toEqual({
      status: 'not_running',
      childSessionKey: worker.childSessionKey,
      previousState: 'cancelled',
      cancelled: [],
    });
  });

  it('a gateway stopping after a run was superseded but before the new task ran: at the next start the task runs, the sub-agent is not reported interrupted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-interrupt-'));
    // One sub-agent slot: a second child waits for it, so the superseding task's run is still waiting when the gateway stops.
    const { config: parsed } = parseConfigText(
      config.replace('maxChildrenPerAgent: 5', 'maxChildrenPerAgent: 5, maxConcurrent: 1'),
      '/t.json5',
    );
    const open = async () => {
      gateway = await startGateway({
        config: parsed,
        store: await SqliteStore.open({ path: join(dir, 'db.sqlite') }),
        gatewayId: 'gw-i',
        capabilitySecret: 's',
      });
      await gateway.openSession(MAIN, 'main');
      return gateway;
    };
    let g = await open();
    const child = await g.subagents.spawn(from(), { task: 'count slowly', label: 'counter' });
    await waitUntil('the child runs', async () => (await record(child.childSessionKey)).state === 'running');
    const other = await g.subagents.spawn(from(), { task: 'count slowly too', label: 'other' });
    await g.subagents.interrupt(await record(child.childSessionKey), from(), { message: 'count goats' });
    await waitUntil('the other child took the slot', async () => (await record(other.childSessionKey)).state === 'running');
    expect((await g.getRun(child.runId)).run.status).toBe('interrupted');
    await stopTestGateway(g);
    gateway = undefined as unknown as Gateway;
    g = await open();
    const done = await waitUntil('the superseding task ran after the restart', async () => {
      const current = await record(child.childSessionKey);
      return current.state !== 'running' && current.state !== 'pending' && current;
    });
    expect(done).toMatchObject({ state: 'succeeded', result: 'counted goats' });
    expect((await record(other.childSessionKey)).state).toBe('interrupted');
  });
});
