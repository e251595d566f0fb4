/**
 * Codex's followup_task as `subagents followup`: a finished sub-agent takes another task in its own session, is live
 * again and reports back with a new completion event; a busy one takes it after its current run; a repeat of the
 * same call sends it once; an archived one comes back with its history (Codex reloads an evicted agent); a killed one or one
 * past the children limit is refused with the reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const MAIN = 'agent:main:main';
const from = (idempotencyKey = `test:${Math.random()}`) => ({ sessionKey: MAIN, agentId: 'main', idempotencyKey });

const config = (rules: string, subagents = '') => `{
  agents: { defaults: { subagents: { maxSpawnDepth: 1 ${subagents} } }, list: [{ id: "main", model: "scripted/main" }] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [${rules}] } } } } },
}`;

const RULES = `
  { match: "sub-agent \\"counter\\"", reply: "noted" },
  { match: "follow up", steps: [
      { toolCalls: [{ tool: "subagents", args: { action: "followup", target: "counter", message: "count goats" } }] },
      { text: "{{tool.subagents}}" }] },
  { match: "slowly", delayMs: 400, reply: "counted slowly" },
  { match: "count (\\\\w+)", reply: "counted {{match.1}}" },`;

const record = async (key: string) => (await gateway.store.subagents.getBySession(key))!;
const completions = async () =>
  (await gateway.store.inputs.list({ sessionKey: MAIN })).filter((input) => input.provenance.kind === 'subagent_completion');

async function finishedCounter() {
  await gateway.openSession(MAIN, 'main');
  const child = await gateway.subagents.spawn(from(), { task: 'count sheep', label: 'counter' });
  await waitUntil('the first completion reached the parent', async () => (await record(child.childSessionKey)).completion === 'delivered');
  return child;
}

describe('subagents followup', () => {
  it('a finished sub-agent takes a follow-up task in its own session, is live again and reports back with a second completion', async () => {
    gateway = await startTestGateway(config(RULES));
    const child = await finishedCounter();
    const sent = await gateway.send({ target: 'main', message: 'follow up' });
    const outcome = await gateway.waitForInput(sent.input.id, 10_000);
    expect(outcome.status).toBe('completed');
    expect(JSON.parse((outcome as { reply: string }).reply)).toMatchObject({
      status: 'accepted',
      childSessionKey: child.childSessionKey,
      previousState: 'succeeded',
      reopened: true,
    });
    const done = await waitUntil('the follow-up settled', async () => {
      const current = await record(child.childSessionKey);
      return current.state === 'succeeded' && current.result === 'counted goats' && current;
    });
    expect(done.history.map((step) => step.state)).toEqual(['pending', 'running', 'succeeded', 'pending', 'running', 'succeeded']);
    expect(done.runId).not.toBe(child.runId);
    const told = await waitUntil('both completions reached the parent', async () => {
      const inputs = await completions();
      return inputs.length === 2 && inputs;
    });
    expect(told.map((input) => input.idempotencyKey)).toEqual([
      `completion:${child.childSessionKey}:${child.runId}`,
      `completion:${child.childSessionKey}:${done.runId}`,
    ]);
    expect(told[1].text).toContain('Result:\ncounted goats');
    // One session: the follow-up's run read the first task and its answer.
    const transcript = (await gateway.store.transcript.list(child.childSessionKey, { limit: 50 })).map((entry) => JSON.stringify(entry));
    expect(transcript.some((entry) => entry.includes('count sheep'))).toBe(true);
    expect(transcript.some((entry) => entry.includes('count goats'))).toBe(true);
  });

  it('a follow-up to a busy sub-agent runs after its current run, and the sub-agent reports once, with the last answer', async () => {
    gateway = await startTestGateway(config(RULES));
    await gateway.openSession(MAIN, 'main');
    const child = await gateway.subagents.spawn(from(), { task: 'count slowly', label: 'counter' });
    await waitUntil('the child runs', async () => (await record(child.childSessionKey)).state === 'running');
    const accepted = await gateway.subagents.followup(await record(child.childSessionKey), from(), 'count cows');
    expect(accepted).toMatchObject({ status: 'accepted', previousState: 'running', reopened: false });
    const done = await waitUntil('it settled', async () => {
      const current = await record(child.childSessionKey);
      return current.state === 'succeeded' && current.completion === 'delivered' && current;
    });
    expect(done.result).toBe('counted cows');
    expect(await completions()).toHaveLength(1);
  });

  it('the same call made again (a retried run) sends the task once and reopens the sub-agent once', async () => {
    gateway = await startTestGateway(config(RULES));
    const child = await finishedCounter();
    const finished = await record(child.childSessionKey);
    const first = await gateway.subagents.followup(finished, from('same-call'), 'count goats');
    const again = await gateway.subagents.followup(finished, from('same-call'), 'count goats');
    expect(again.inputId).toBe(first.inputId);
    expect(again.reopened).toBe(false);
    await waitUntil('the follow-up settled', async () => (await record(child.childSessionKey)).result === 'counted goats');
    const tasks = (await gateway.store.inputs.list({ sessionKey: child.childSessionKey })).filter((input) =>
      input.idempotencyKey.startsWith('followup:'),
    );
    expect(tasks).toHaveLength(1);
    expect((await record(child.childSessionKey)).history.filter((step) => step.state === 'pending')).toHaveLength(2);
  });

  it('a killed sub-agent takes no follow-up, and nor does one whose reopening would pass maxChildrenPerAgent', async () => {
    gateway = await startTestGateway(config(RULES, ', maxChildrenPerAgent: 1'));
    const child = await finishedCounter();
    const busy = await gateway.subagents.spawn(from(), { task: 'count slowly', label: 'other' });
    await expect(gateway.subagents.followup(await record(child.childSessionKey), from(), 'count goats')).rejects.toMatchObject({
      code: 'SUBAGENT_LIMIT',
      message: expect.stringContaining('maxChildrenPerAgent'),
    });
    await gateway.killSubagent(busy.childSessionKey);
    await expect(gateway.subagents.followup(await record(busy.childSessionKey), from(), 'count goats')).rejects.toMatchObject({
      code: 'SUBAGENT_NOT_RUNNING',
      message: expect.stringContaining('was cancelled (killed)'),
    });
    expect((await record(child.childSessionKey)).state).toBe('succeeded');
    expect((await gateway.store.inputs.list({ sessionKey: busy.childSessionKey })).map((input) => input.idempotencyKey)).not.toContainEqual(
      expect.stringMatching(/^followup:/),
    );
  });

  it("a follow-up made while the child's last completion is still on its way waits for it, then reopens the child", async () => {
    gateway = await startTestGateway(config(RULES));
    const child = await finishedCounter();
    // As if the completion's outbox row had not been delivered yet.
    (gateway.store as SqliteStore).raw.prepare("UPDATE subagents SET completion = 'pending' WHERE id = ?").run(child.handle.subagentId);
    const followup = gateway.subagents.followup(await record(child.childSessionKey), from(), 'count goats');
    expect((await record(child.childSessionKey)).state).toBe('succeeded');
    await gateway.store.subagents.markCompletion(child.handle.subagentId, 'delivered', Date.now());
    expect(await followup).toMatchObject({ reopened: true, previousState: 'succeeded' });
    await waitUntil('the follow-up settled', async () => (await record(child.childSessionKey)).result === 'counted goats');
  });

  it('a sub-agent on an external runtime is refused: each of its runs starts a new process that knows nothing of the last', async () => {
    gateway = await startTestGateway(config(RULES));
    const child = await finishedCounter();
    const onRuntime = { ...(await record(child.childSessionKey)), runtime: 'process:cli' };
    await expect(gateway.subagents.followup(onRuntime, from(), 'count goats')).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('starts a new process that knows nothing of the last; spawn a new one with the whole task'),
    });
    expect((await record(child.childSessionKey)).state).toBe('succeeded');
  });

  it('an archived sub-agent (Codex: evicted) comes back out of the archive with its session and history', async () => {
    gateway = await startTestGateway(config(RULES));
    const child = await finishedCounter();
    await gateway.store.subagents.markArchived(child.handle.subagentId, Date.now());
    expect((await gateway.store.sessions.get(child.childSessionKey))!.state).toBe('archived');
    const again = await gateway.subagents.followup(await record(child.childSessionKey), from(), 'count goats');
    expect(again).toMatchObject({ reopened: true, previousState: 'succeeded' });
    const done = await waitUntil('the follow-up settled', async () => {
      const current = await record(child.childSessionKey);
      return current.state === 'succeeded' && current;
    });
    expect(done).toMatchObject({ result: 'counted goats', archivedAt: null });
    expect((await gateway.store.sessions.get(child.childSessionKey))!.state).not.toBe('archived');
  });
});
