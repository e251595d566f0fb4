/**
 * sessions_spawn end to end on scripted models: a leaf at depth 1, an orchestrator with two workers at
 * depth 2 (the announce chain and the wake on descendants), the child's isolated context, and the
 * completion event's shape and idempotency key.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const MAIN = 'agent:main:main';

const config = (rules: string, extra = '', agentExtra = '') => `{
  agents: {
    defaults: { subagents: { maxSpawnDepth: 2 } ${extra} },
    list: [{ id: "main", model: "scripted/main" ${agentExtra} }],
  },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [${rules}] } } } } },
}`;

async function ask(message: string): Promise<string> {
  const sent = await gateway.send({ target: 'main', message });
  const result = await gateway.waitForInput(sent.input.id, 10_000);
  if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
  return result.reply ?? '';
}

/** The parent's runs that consumed completion events, once `count` of them have ended. */
async function completionRuns(sessionKey: string, count: number) {
  return waitUntil(`${count} completion runs ended in ${sessionKey}`, async () => {
    const inputs = (await gateway.store.inputs.list({ sessionKey })).filter((input) => input.provenance.kind === 'subagent_completion');
    if (inputs.length < count || !inputs.every((input) => input.status === 'consumed')) return false;
    const runs = await Promise.all(inputs.map(async (input) => (await gateway.getRun(input.runId!)).run));
    return runs.every((run) => run.status !== 'running') && { inputs, runs };
  });
}

describe('sessions_spawn at depth 1', () => {
  it('returns {accepted, subagentId, childSessionKey} at once; the child runs the task; the parent hears the completion once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-spawn-'));
    for (const [name, text] of Object.entries({
      'AGENTS.md': 'rules: be brief',
      'SOUL.md': 'persona: pirate',
      'USER.md': 'user: Alice',
      'TOOLS.md': 'tools: use read_file',
    })) {
      writeFileSync(join(dir, name), text);
    }
    gateway = await startTestGateway(
      config(
        `{ match: "sub-agent \\"researcher\\" succeeded", reply: "relayed: {{input}}" },
         { match: "research (\\\\w+)", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "find facts about {{match.1}}", label: "researcher" } }] }, { text: "{{tool.sessions_spawn}}" }] },
         { match: "find facts about (\\\\w+)", reply: "facts about {{match.1}}: it is blue" },`,
        '',
        `, workspace: ${JSON.stringify(dir)}`,
      ),
    );
    const spawned = JSON.parse(await ask('research whales'));
    // The model gets a short id, not the signed handle (the API still has that: gateway.subagents.spawn).
    expect(spawned).toEqual({
      status: 'accepted',
      subagentId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      childSessionKey: `agent:main:subagent:${spawned.subagentId}`,
    });
    spawned.runId = (await gateway.getSubagent(spawned.subagentId)).view.runId;
    const child = spawned.childSessionKey;

    const { inputs, runs } = await completionRuns(MAIN, 1);
    const [childRun] = await gateway.listRuns({ sessionKey: child });
    expect(childRun).toMatchObject({ id: spawned.runId, status: 'succeeded', finalText: 'facts about whales: it is blue' });
    expect(inputs[0].idempotencyKey).toBe(`completion:${child}:${spawned.runId}`);
    expect(inputs[0].provenance).toMatchObject({ kind: 'subagent_completion', sourceSession: child, sourceTool: 'sessions_spawn' });
    expect(inputs[0].text).toContain(`[sub-agent "researcher" succeeded; session ${child}]`);
    expect(inputs[0].text).toContain('Result:\nfacts about whales: it is blue');
    expect(inputs[0].text).toMatch(/Stats: runtime \d+\.\ds, tokens \d+ in \/ \d+ out \(\d+ total\), 1 model calls in 1 runs/);
    expect(inputs[0].text).toContain('Tell your user what came of it');
    expect(runs[0].finalText).toMatch(/^relayed: \[sub-agent "researcher" succeeded/);

    const session = await gateway.getSession(child);
    expect(session).toMatchObject({ parentKey: MAIN, depth: 1, label: 'researcher', agentId: 'main' });
    const record = (await gateway.store.subagents.getBySession(child))!;
    expect(record).toMatchObject({
      state: 'succeeded',
      completion: 'delivered',
      result: 'facts about whales: it is blue',
      resultChars: 30,
    });
    expect(record.resultHash).toMatch(/^[0-9a-f]{64}$/);
    expect(record.history.map((step) => step.state)).toEqual(['pending', 'running', 'succeeded']);
    expect(record.usage).toMatchObject({ modelCalls: 1, runs: 1 });

    // The child's context: its agent's AGENTS.md and TOOLS.md and the task; no SOUL/USER, no parent transcript.
    const history = await gateway.history(child);
    expect(history[0].content).toBe('find facts about whales');
    expect(history.some((entry) => JSON.stringify(entry.content).includes('research whales'))).toBe(false);
    expect((await gateway.getRun(childRun.id)).run.preambleChars).toBeGreaterThan(0);
  });

  it('a repeated correlationId returns the same handle and starts no second child', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "twice", steps: [{ toolCalls: [
            { tool: "sessions_spawn", args: { task: "count sheep", correlationId: "sheep-1" } },
            { tool: "sessions_spawn", args: { task: "count sheep", correlationId: "sheep-1" } } ] },
            { text: "{{tool.sessions_spawn}}" }] },
         { match: "count sheep", reply: "42 sheep" },
         { match: "succeeded", reply: "ok" },`,
      ),
    );
    const second = JSON.parse(await ask('twice'));
    expect(second.existing).toBe(true);
    await completionRuns(MAIN, 1);
    const children = await gateway.listSubagents(MAIN);
    expect(children).toHaveLength(1);
    expect(second.childSessionKey).toBe(children[0].childSessionKey);
    expect(second.subagentId).toBe(children[0].subagentId);
    const again = await gateway.subagents.spawn(
      { sessionKey: MAIN, agentId: 'main', idempotencyKey: 'other' },
      { task: 'count sheep', correlationId: 'sheep-1' },
    );
    expect(again).toMatchObject({
      status: 'accepted',
      childSessionKey: second.childSessionKey,
      existing: true,
      handle: { subagentId: second.subagentId },
    });
  });
});

describe('an orchestrator at depth 2', () => {
  const orchestration = (wakeReply: string) =>
    config(`
      { match: "All your sub-agents have finished", reply: "${wakeReply}" },
      { match: "sub-agent \\"lead\\" succeeded", reply: "to the user: {{input}}" },
      { match: "sub-agent \\"(train|hotel)\\" succeeded", reply: "noted" },
      { match: "plan the trip", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "lead: organise the trip", role: "orchestrator", label: "lead" } }] }, { text: "lead started" }] },
      { match: "lead: organise", steps: [{ toolCalls: [
          { tool: "sessions_spawn", args: { task: "worker: book the train", label: "train" } },
          { tool: "sessions_spawn", args: { task: "worker: book the hotel", label: "hotel" } } ] },
          { text: "lead: waiting for the workers" }] },
      { match: "worker: book the train", delayMs: 50, reply: "train booked" },
      { match: "worker: book the hotel", delayMs: 150, reply: "hotel booked" },`);

  it('workers report to the lead internally; the lead is woken once both are in; its answer reaches the top session', async () => {
    gateway = await startTestGateway(orchestration('lead: train and hotel booked'));
    await ask('plan the trip');
    const { runs } = await completionRuns(MAIN, 1);
    const [lead] = await gateway.listSubagents(MAIN);
    expect(lead).toMatchObject({ label: 'lead', role: 'orchestrator', depth: 1, state: 'succeeded' });
    const workers = await gateway.listSubagents(lead.childSessionKey);
    expect(workers.map((worker) => [worker.label, worker.depth, worker.state]).sort()).toEqual([
      ['hotel', 2, 'succeeded'],
      ['train', 2, 'succeeded'],
    ]);
    expect(workers[0].childSessionKey).toMatch(new RegExp(`^${lead.childSessionKey}:subagent:[0-9a-f-]{36}$`));

    // Inside the lead: the first completion was stored without a run; the second woke it.
    const leadInputs = (await gateway.store.inputs.list({ sessionKey: lead.childSessionKey })).filter(
      (input) => input.provenance.kind === 'subagent_completion',
    );
    expect(leadInputs.map((input) => input.mode)).toEqual(['notify', 'followup']);
    expect(leadInputs[1].text).toContain('All your sub-agents have finished');
    const leadRecord = (await gateway.store.subagents.getBySession(lead.childSessionKey))!;
    expect(leadRecord.history.map((step) => step.state)).toEqual(['pending', 'running', 'waiting', 'succeeded']);
    expect(leadRecord.result).toBe('lead: train and hotel booked');
    expect(await gateway.listRuns({ sessionKey: lead.childSessionKey })).toHaveLength(2);

    // The top session got exactly one completion (the lead's), and its answer went to the user's channel.
    expect(runs[0].finalText).toContain('to the user: [sub-agent "lead" succeeded');
    expect(runs[0].finalText).toContain('lead: train and hotel booked');
    const replies = await gateway.journalAfter(0, { sessionKey: MAIN });
    expect(replies.filter((event) => event.type === 'session.reply').map((event) => (event.payload as { text: string }).text)).toContain(
      runs[0].finalText,
    );
  });

  it('the lead settles however late the hand-over of its last worker finishes (a wake run may commit first)', async () => {
    // The completion's bookkeeping is slowed down: the lead's wake run can start and commit while the last
    // worker's hand-over is still under way, and must still find the lead's workers all handed over.
    const store = await SqliteStore.open({ path: ':memory:' });
    const subagents = store.subagents;
    const later = () => new Promise((resolve) => setTimeout(resolve, 300));
    const slowed: Pick<typeof subagents, 'markCompletion' | 'handOver'> = {
      markCompletion: async (...args) => (await later(), subagents.markCompletion(...args)),
      handOver: async (...args) => (await later(), subagents.handOver(...args)),
    };
    Object.defineProperty(store, 'subagents', { value: Object.assign(Object.create(subagents), slowed) });
    gateway = await startTestGateway(orchestration('lead: train and hotel booked'), {}, store);
    await ask('plan the trip');
    await completionRuns(MAIN, 1);
    const [lead] = await gateway.listSubagents(MAIN);
    expect(lead).toMatchObject({ label: 'lead', state: 'succeeded' });
    expect((await gateway.store.subagents.get(lead.subagentId))!.result).toBe('lead: train and hotel booked');
  });

  it(`a wake run that answers NO_REPLY keeps the frozen answer`, async () => {
    gateway = await startTestGateway(orchestration('NO_REPLY'));
    await ask('plan the trip');
    await completionRuns(MAIN, 1);
    const [lead] = await gateway.listSubagents(MAIN);
    expect((await gateway.store.subagents.get(lead.subagentId))!.result).toBe('lead: waiting for the workers');
  });
});
