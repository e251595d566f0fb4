/**
 * The parent's controls: kill cascades to every descendant, cancelling an orchestrator's run does too,
 * steer reaches the child's active run, and a fan-out waited for with a failure tolerance reports which
 * child failed and why while the others succeed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const MAIN = 'agent:main:main';
const from = (sessionKey: string) => ({ sessionKey, agentId: 'main', idempotencyKey: `test:${Math.random()}` });

const config = (rules: string, subagents = '') => `{
  agents: { defaults: { subagents: { maxSpawnDepth: 2, maxChildrenPerAgent: 10 ${subagents} } }, list: [{ id: "main", model: "scripted/main" }] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [${rules}] } } } } },
}`;

const state = async (key: string) => (await gateway.store.subagents.getBySession(key))?.state;

/** A lead (orchestrator) with two workers that work for a long time. */
async function leadWithWorkers() {
  gateway = await startTestGateway(
    config(`
      { match: "lead", steps: [{ toolCalls: [
          { tool: "sessions_spawn", args: { task: "work slowly 1" } },
          { tool: "sessions_spawn", args: { task: "work slowly 2" } } ] },
          { toolCalls: [{ tool: "subagents", args: { action: "wait", timeoutMs: 20000 } }] }, { text: "lead done" }] },
      { match: "work slowly", delayMs: 5000, reply: "worked" },
      { reply: "noted" },`),
  );
  await gateway.openSession(MAIN, 'main');
  const lead = await gateway.subagents.spawn(from(MAIN), { task: 'lead', role: 'orchestrator' });
  const workers = await waitUntil('both workers run', async () => {
    const list = await gateway.listSubagents(lead.childSessionKey);
    return list.length === 2 && list.every((worker) => worker.state === 'running') && list;
  });
  return { lead, workers };
}

describe('cascade stop', () => {
  it('killing an orchestrator cancels it and every descendant, aborts their runs, and tells the top session once', async () => {
    const { lead, workers } = await leadWithWorkers();
    const cancelled = await gateway.killSubagent(lead.childSessionKey);
    expect(cancelled.sort()).toEqual([lead.childSessionKey, ...workers.map((w) => w.childSessionKey)].sort());
    for (const key of cancelled) expect(await state(key)).toBe('cancelled');
    for (const worker of workers) {
      await waitUntil('the worker run ended', async () => (await gateway.getRun(worker.runId!)).run.status === 'cancelled');
    }
    const record = (await gateway.store.subagents.getBySession(lead.childSessionKey))!;
    expect(record.diagnostic).toBe('killed by the operator');
    const told = await waitUntil('the top session was told', async () => {
      const inputs = (await gateway.store.inputs.list({ sessionKey: MAIN })).filter(
        (input) => input.provenance.kind === 'subagent_completion',
      );
      return inputs.length > 0 && inputs;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(
      (await gateway.store.inputs.list({ sessionKey: MAIN })).filter((input) => input.provenance.kind === 'subagent_completion'),
    ).toHaveLength(1);
    expect(told[0].text).toContain('was cancelled; session');
    // The workers' completions were not sent to their cancelled parent.
    for (const worker of workers) expect((await gateway.store.subagents.get(worker.subagentId))!.completion).toBe('skipped');
  });

  it("cancelling the orchestrator's run stops its descendants too, recorded cancelled", async () => {
    const { lead, workers } = await leadWithWorkers();
    const leadRun = (await gateway.store.subagents.getBySession(lead.childSessionKey))!.runId!;
    expect(await gateway.cancelRun(leadRun)).toBe(true);
    await waitUntil('the lead ended cancelled', async () => (await state(lead.childSessionKey)) === 'cancelled');
    for (const worker of workers)
      await waitUntil('the worker was cancelled', async () => (await state(worker.childSessionKey)) === 'cancelled');
  });
});

describe('steer', () => {
  it("a message steered into the child's running run is read at its next step; steering a finished child is refused", async () => {
    gateway = await startTestGateway(
      config(`
        { match: "sub-agent", reply: "noted" },
        { match: "count", delayMs: 300, steps: [{ toolCalls: [{ tool: "time_now", args: {} }] }, { text: "counted with {{inputs}}" }] },`),
    );
    await gateway.openSession(MAIN, 'main');
    const child = await gateway.subagents.spawn(from(MAIN), { task: 'count' });
    await waitUntil('the child runs', async () => (await state(child.childSessionKey)) === 'running');
    const record = (await gateway.store.subagents.getBySession(child.childSessionKey))!;
    const steered = await gateway.subagents.steer(record, { sessionKey: MAIN, agentId: 'main' }, 'count in French', 'k1');
    await waitUntil('the child finished', async () => (await state(child.childSessionKey)) === 'succeeded');
    expect((await gateway.store.inputs.get(steered.inputId))!.runId).toBe(child.runId);
    expect((await gateway.getRun(child.runId)).run.finalText).toContain('count in French');
    const done = (await gateway.store.subagents.getBySession(child.childSessionKey))!;
    await expect(gateway.subagents.steer(done, { sessionKey: MAIN, agentId: 'main' }, 'more', 'k2')).rejects.toMatchObject({
      code: 'SUBAGENT_NOT_RUNNING',
    });
  });
});

describe('fan-out', () => {
  it('subagents wait with maxFailures: one failing child does not fail the others; the aggregate says which failed and why', async () => {
    gateway = await startTestGateway(
      config(
        `
        { match: "sub-agent", reply: "noted" },
        { match: "fan out", steps: [
            { toolCalls: [
              { tool: "sessions_spawn", args: { task: "part one", label: "one" } },
              { tool: "sessions_spawn", args: { task: "part two (broken)", label: "two" } },
              { tool: "sessions_spawn", args: { task: "part three", label: "three" } } ] },
            // By label: without targets, a wait covers only the children still running, and the broken one may have ended already.
            { toolCalls: [{ tool: "subagents", args: { action: "wait", targets: ["one", "two", "three"], mode: "all", timeoutMs: 5000, maxFailures: 1 } }] },
            { text: "{{tool.subagents}}" }] },
        { match: "broken", error: "the model is down" },
        { match: "part", delayMs: 50, reply: "did {{input}}" },`,
        // The completions queue behind the waiting run instead of being steered into it.
        ', completionMode: "followup"',
      ),
    );
    const sent = await gateway.send({ target: 'main', message: 'fan out' });
    const outcome = await gateway.waitForInput(sent.input.id, 10_000);
    expect(outcome.status).toBe('completed');
    const result = JSON.parse((outcome as { reply: string }).reply);
    expect(result).toMatchObject({ status: 'partial', succeeded: 2, running: 0 });
    expect(result.failed).toEqual([
      {
        childSessionKey: expect.stringMatching(/^agent:main:subagent:/),
        label: 'two',
        state: 'failed',
        why: expect.stringContaining('the model is down'),
      },
    ]);
    expect(result.children.map((child: { label: string; state: string }) => [child.label, child.state]).sort()).toEqual([
      ['one', 'succeeded'],
      ['three', 'succeeded'],
      ['two', 'failed'],
    ]);
    expect(result.children.find((child: { label: string }) => child.label === 'one').resultPreview).toBe('did part one');
  });

  it('more failures than maxFailures ends the wait early with status failed', async () => {
    gateway = await startTestGateway(
      config(`
        { match: "sub-agent", reply: "noted" },
        { match: "broken", error: "down" },
        { match: "slow", delayMs: 3000, reply: "slow" },`),
    );
    await gateway.openSession(MAIN, 'main');
    const a = await gateway.subagents.spawn(from(MAIN), { task: 'broken a' });
    const b = await gateway.subagents.spawn(from(MAIN), { task: 'slow b' });
    const records = await Promise.all([a, b].map((s) => gateway.subagents.find(s.childSessionKey, MAIN)));
    const started = Date.now();
    const outcome = await gateway.subagents.wait(records, { mode: 'all', timeoutMs: 10_000, maxFailures: 0 });
    expect(Date.now() - started).toBeLessThan(2500);
    expect(outcome).toMatchObject({ status: 'failed', succeeded: 0, running: 1, failed: [{ state: 'failed' }] });
  });
});

describe('the subagents tool, as a model calls it', () => {
  it('list, steer and kill by label, and result by the short id sessions_spawn returned (no signed handle in the history)', async () => {
    gateway = await startTestGateway(
      config(
        `
        { match: "sub-agent", reply: "noted" },
        { match: "manage", steps: [
            { toolCalls: [{ tool: "sessions_spawn", args: { task: "quick job", label: "quick" } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "wait", targets: ["quick"], timeoutMs: 5000 } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "result", target: "{{tool.sessions_spawn.subagentId}}" } }] },
            { toolCalls: [{ tool: "sessions_spawn", args: { task: "slow job", label: "slow" } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "steer", target: "slow", message: "hurry up" } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "list" } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "kill", target: "slow" } }] },
            { toolCalls: [{ tool: "subagents", args: { action: "kill", target: "nobody" } }] },
            { text: "managed" }] },
        { match: "quick job", reply: "quick result" },
        { match: "slow job", delayMs: 5000, reply: "slow result" },`,
        ', completionMode: "followup"',
      ),
    );
    const sent = await gateway.send({ target: 'main', message: 'manage' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed', reply: 'managed' });
    const results = (await gateway.history(MAIN))
      .filter((entry) => entry.role === 'tool')
      .flatMap((entry) =>
        (entry.content as { toolName: string; output: { value: Record<string, unknown> } }[]).map(
          (part) => [part.toolName, part.output.value] as const,
        ),
      );
    const subagentResults = results.filter(([name]) => name === 'subagents').map(([, value]) => value);
    const spawnResults = results.filter(([name]) => name === 'sessions_spawn').map(([, value]) => value);
    expect(spawnResults[0]).toEqual({
      status: 'accepted',
      subagentId: expect.any(String),
      childSessionKey: `agent:main:subagent:${spawnResults[0].subagentId}`,
    });
    expect(JSON.stringify(results)).not.toContain('capability');
    expect(subagentResults[0]).toMatchObject({
      status: 'ok',
      succeeded: 1,
      children: [{ label: 'quick', state: 'succeeded', resultPreview: 'quick result' }],
    });
    expect(subagentResults[1]).toMatchObject({
      label: 'quick',
      state: 'succeeded',
      result: 'quick result',
      resultHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(subagentResults[2]).toMatchObject({ status: 'steered' });
    expect(
      (subagentResults[3] as { subagents: { label: string; state: string }[] }).subagents.map((child) => [child.label, child.state]),
    ).toEqual([
      ['quick', 'succeeded'],
      ['slow', 'running'],
    ]);
    expect(subagentResults[4]).toMatchObject({ status: 'killed', cancelled: [expect.stringMatching(/^agent:main:subagent:/)] });
    expect(subagentResults[5]).toEqual({
      status: 'error',
      code: 'SUBAGENT_NOT_FOUND',
      error: 'no sub-agent "nobody" among the ones this session spawned (subagents list shows them)',
    });
    const slow = (await gateway.listSubagents(MAIN)).find((child) => child.label === 'slow')!;
    expect(slow.state).toBe('cancelled');
    expect((await gateway.store.subagents.get(slow.subagentId))!.completion).toBe('skipped');
  });
});
