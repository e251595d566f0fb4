/**
 * The board's agent and remote workers: the dispatcher hands ready tasks to agents' task sessions (with the
 * results of what they depend on), follows their runs, counts a run that ends without an answer as a
 * failed attempt, keeps to board.maxConcurrentPerAgent, and sends tasks for remote agents as A2A messages.
 */
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { BoardService } from '../../src/board/board.js';
import type { BoardDispatcher } from '../../src/board/dispatcher.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { ReferenceExecutor, referenceServer } from '../helpers/a2a-reference.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
let server: Server | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
  server?.close();
  server = undefined;
});

const USER = { kind: 'user' as const, name: 'user' };

const config = (extra = '') => `{
  board: { sweepIntervalMs: 50, maxConcurrentPerAgent: 1, agents: ["planner"] },
  tools: { agentToAgent: { enabled: true, allow: ["planner", "writer"] } },
  ${extra}
  agents: { list: [
    { id: "writer", model: "scripted/writer" },
    { id: "lazy", model: "scripted/lazy" },
    { id: "blocker", model: "scripted/blocker" },
    { id: "planner", model: "scripted/planner" },
    { id: "slow", model: "scripted/slow" },
    { id: "twice", model: "scripted/twice" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    writer: { rules: [{ delayMs: 100, steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "wrote: {{input}}" } }] }, { text: "done" }] }] },
    lazy: { rules: [{ reply: "I will not use the board tools" }] },
    slow: { rules: [{ delayMs: 5000, reply: "too late" }] },
    twice: { rules: [{ steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "first" } }] }, { toolCalls: [{ tool: "board_complete", args: { result: "second" } }] }, { text: "{{tool.board_complete.note}}" }] }] },
    blocker: { rules: [{ steps: [{ toolCalls: [{ tool: "board_block", args: { kind: "needs_input", reason: "which format?" } }] }, { text: "blocked" }] }] },
    planner: { rules: [
      { match: "survey", steps: [{ toolCalls: [{ tool: "board_list" }] }, { text: "{{tool.board_list}}" }] },
      { match: "peek ([0-9a-f-]+)", steps: [{ toolCalls: [{ tool: "board_show", args: { taskId: "{{match.1}}" } }] }, { text: "{{tool.board_show.status}}: {{tool.board_show.error}}" }] },
      { match: "plan", steps: [{ toolCalls: [{ tool: "board_create", args: { title: "draft the intro", assignee: "writer" } }] }, { toolCalls: [{ tool: "board_create", args: { title: "ask", assignee: "blocker" } }] }, { text: "{{tool.board_create.status}}: {{tool.board_create.layer}}" }] },
    ] },
  } } } },
}`;

describe('board: an assignee nobody will take', () => {
  it('create warns about an assignee that is no agent and no worker seen yet, with a "did you mean"; agents, remote agents and seen workers pass quietly', async () => {
    const { board } = await start(config('a2a: { remoteAgents: [{ id: "far", url: "http://127.0.0.1:9" }] },'));
    const typo = await board.create({ title: 'intro', assignee: 'writr' }, USER);
    expect(typo.task.assignee).toBe('writr');
    expect(typo.warning).toBe(
      'assignee "writr" is no agent of this gateway (writer, lazy, blocker, planner, slow, twice, far) and no worker has claimed a task under that name yet, so the task waits until one does (did you mean "writer"?)',
    );
    expect((await board.create({ title: 'etl', assignee: 'nightly-etl' }, USER)).warning).toMatch(
      /^assignee "nightly-etl" is no agent of this gateway \(.*\) and no worker has claimed a task under that name yet, so the task waits until one does$/,
    );
    for (const known of ['lazy', 'far']) expect((await board.create({ title: known, assignee: known }, USER)).warning).toBeUndefined();
    await board.claim({ worker: 'nightly-etl', assignee: 'nightly-etl' });
    expect((await board.create({ title: 'etl 2', assignee: 'nightly-etl' }, USER)).warning).toBeUndefined();
    expect((await board.create({ title: 'anyone' }, USER)).warning).toBeUndefined();
  });
});

async function start(configText: string): Promise<{ board: BoardService; dispatcher: BoardDispatcher }> {
  let board!: BoardService;
  let dispatcher!: BoardDispatcher;
  gateway = await startTestGateway(configText, {}, undefined, {
    onBoard: (made, madeDispatcher) => ((board = made), (dispatcher = madeDispatcher)),
  });
  return { board, dispatcher };
}

describe('board: agent workers', () => {
  it('a chain of tasks for one agent: each is handed over once its dependency is done, with that result in its prompt', async () => {
    const { board } = await start(config());
    const first = (await board.create({ title: 'outline', body: 'three sections', assignee: 'writer' }, USER)).task;
    const second = (await board.create({ title: 'summary', assignee: 'writer', dependsOn: [first.id] }, USER)).task;
    await waitUntil('the second task is done', async () => (await board.task(second.id))?.state === 'done', 10_000);
    const done = (await board.task(second.id))!;
    // The second task's prompt held the first task's result, which held the first task's own prompt.
    expect(done.result).toContain(
      `Results of the tasks it depends on:\n- ${first.id} "outline" (done): wrote: Board task ${first.id} (attempt 1): outline`,
    );
    const view = (await board.taskView(second.id))!;
    expect(view.attempts).toMatchObject([{ worker: 'agent:writer', outcome: 'completed' }]);
    // Seen through the board (board show), an agent's attempt names its session and the run that took it.
    const [attempt] = (await board.view(second.id, { kind: 'user', name: 'user' })).attempts;
    const [run] = await gateway!.listRuns({ sessionKey: `agent:writer:board:${second.id}` });
    expect(attempt).toMatchObject({ session: `agent:writer:board:${second.id}`, runId: run.id });
    expect(await gateway!.store.sessions.get(`agent:writer:board:${second.id}`)).toMatchObject({
      agentId: 'writer',
      label: `board:${second.id}`,
    });
  });

  it('a dispatcher whose lease another gateway took stops at its next write, long before its own idea of the lease ends', async () => {
    const { board } = await start(config());
    const first = (await board.create({ title: 'one', assignee: 'writer' }, USER)).task;
    await waitUntil('the first task is done', async () => (await board.task(first.id))?.state === 'done', 10_000);
    // Another gateway takes the lease (as it would once this one's expired: its clock says so).
    expect(await gateway!.store.board.holdDispatcher('gw-other', 60_000, Date.now() + 60_000)).toMatchObject({ owner: 'gw-other' });
    const second = (await board.create({ title: 'two', assignee: 'writer' }, USER)).task;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await board.task(second.id)).toMatchObject({ state: 'ready', attempts: 0 });
  });

  it("a task longer than the gateway's message limit is handed over cut, saying where the rest is", async () => {
    const { board } = await start(config('gateway: { maxMessageChars: 600 },'));
    const task = (await board.create({ title: 'long', body: 'x'.repeat(5000), assignee: 'writer' }, USER)).task;
    await waitUntil('the task is done', async () => (await board.task(task.id))?.state === 'done', 10_000);
    const input = (await gateway!.store.inputs.list({ sessionKey: `agent:writer:board:${task.id}` }))[0];
    expect(input.text.length).toBeLessThanOrEqual(600);
    expect(input.text).toContain(`characters; all of it: switchboard board show ${task.id}]\n\nWhen you are done, call board_complete`);
  });

  it('a run that ends without completing or blocking is a failed attempt; after max attempts the task gives up with each diagnostic', async () => {
    const { board } = await start(config());
    const task = (await board.create({ title: 'never finished', assignee: 'lazy' }, USER)).task;
    await waitUntil('the task is blocked', async () => (await board.task(task.id))?.state === 'blocked', 10_000);
    const view = (await board.taskView(task.id))!;
    expect(view.task).toMatchObject({ blockKind: 'gave_up', failures: 2, attempts: 2 });
    expect(view.attempts.map((attempt) => attempt.outcome)).toEqual(['failed', 'failed']);
    expect(view.attempts[0].error).toMatch(/^run [0-9a-f-]+ succeeded without completing or blocking the task$/);
    expect(view.task.blockReason).toContain('gave up after 2 failed attempts (max 2):\nattempt 1 (agent:lazy): run ');
    // Each attempt was one input of the task's session.
    const inputs = await gateway!.store.inputs.list({ sessionKey: `agent:lazy:board:${task.id}` });
    expect(inputs.map((input) => input.idempotencyKey).sort()).toEqual([`board:${task.id}:1`, `board:${task.id}:2`]);
  });

  it("a task cancelled by hand while its agent works on it: the claim is fenced out and the agent's run stopped", async () => {
    const { board } = await start(config());
    const task = (await board.create({ title: 'long job', assignee: 'slow' }, USER)).task;
    const sessionKey = `agent:slow:board:${task.id}`;
    await waitUntil('the run started', async () => (await gateway!.store.runs.list({ sessionKey })).length > 0, 5000);
    await board.move(task.id, 'cancelled', USER, 'not needed any more');
    const [run] = await waitUntil(
      'the run ended',
      async () => {
        const runs = await gateway!.store.runs.list({ sessionKey });
        return runs.every((r) => r.status !== 'running') ? runs : null;
      },
      3000,
    );
    expect(run.status).toBe('cancelled');
    expect((await board.taskView(task.id))!.attempts).toMatchObject([{ outcome: 'cancelled', error: 'not needed any more' }]);
  });

  it("a task's max runtime: the agent's run is stopped, the attempt counted, and the task gives up after max attempts", async () => {
    const { board } = await start(config());
    const task = (await board.create({ title: 'too long', assignee: 'slow', maxRuntimeSeconds: 1 }, USER)).task;
    await waitUntil('the task gave up', async () => (await board.task(task.id))?.state === 'blocked', 8000);
    const view = (await board.taskView(task.id))!;
    expect(view.attempts.map((attempt) => [attempt.outcome, attempt.error])).toEqual([
      ['expired', "ran longer than the task's max runtime of 1000 ms"],
      ['expired', "ran longer than the task's max runtime of 1000 ms"],
    ]);
    const runs = await waitUntil(
      'both runs ended',
      async () => {
        const listed = await gateway!.store.runs.list({ sessionKey: `agent:slow:board:${task.id}` });
        return listed.length === 2 && listed.every((r) => r.status !== 'running') ? listed : null;
      },
      3000,
    );
    expect(runs.map((r) => r.status)).toEqual(['cancelled', 'cancelled']);
  });

  it('ending the task again (a run that recovery ran again) answers with what was recorded, and changes nothing', async () => {
    const { board } = await start(config());
    const task = (await board.create({ title: 'once', assignee: 'twice' }, USER)).task;
    const sessionKey = `agent:twice:board:${task.id}`;
    const [run] = await waitUntil(
      'the run ended',
      async () => {
        const runs = await gateway!.store.runs.list({ sessionKey });
        return runs.length > 0 && runs.every((r) => r.status !== 'running') ? runs : null;
      },
      5000,
    );
    expect(run.finalText).toBe('this session already ended the task (completed); nothing changed');
    expect(await board.task(task.id)).toMatchObject({ state: 'done', result: 'first' });
  });

  it('board_block ends the attempt blocked with its kind and reason', async () => {
    const { board } = await start(config());
    const task = (await board.create({ title: 'format?', assignee: 'blocker' }, USER)).task;
    await waitUntil('the task is blocked', async () => (await board.task(task.id))?.state === 'blocked', 10_000);
    expect(await board.task(task.id)).toMatchObject({ blockKind: 'needs_input', blockReason: 'which format?', failures: 0 });
  });

  it('at most board.maxConcurrentPerAgent tasks of one agent run at once', async () => {
    const { board } = await start(config());
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await board.create({ title: `part ${i}`, assignee: 'writer' }, USER)).task.id);
    let most = 0;
    await waitUntil(
      'every task is done',
      async () => {
        const tasks = await board.tasks({ assignee: 'writer' });
        most = Math.max(most, tasks.filter((task) => task.state === 'running').length);
        return tasks.every((task) => task.state === 'done');
      },
      15_000,
    );
    expect(most).toBe(1);
  });

  it('board_create from an agent: for another agent only where the agent-to-agent policy allows; the tools are offered only to board.agents', async () => {
    const { board } = await start(config());
    const sent = await gateway!.send({ target: 'planner', message: 'plan the report' });
    const result = await gateway!.waitForInput(sent.input.id, 10_000);
    expect(result).toMatchObject({ status: 'completed' });
    expect((result as { reply: string }).reply).toBe('forbidden: agentToAgent');
    const created = await board.tasks({});
    expect(created.map((task) => [task.title, task.creator, task.idempotencyKey?.startsWith('agent:planner:main:')])).toEqual([
      ['draft the intro', 'agent:planner:main', true],
    ]);
    expect((await gateway!.toolsOf('agent:planner:main')).map((tool) => tool.name)).toContain('board_create');
    expect((await gateway!.toolsOf('agent:writer:main')).map((tool) => tool.name)).not.toContain('board_complete');
    // A board session gets the worker tools.
    const inBoardSession = (await gateway!.toolsOf('agent:writer:board:some-task')).map((tool) => tool.name);
    for (const name of ['board_comment', 'board_complete', 'board_request_review', 'board_block']) expect(inBoardSession).toContain(name);
  });
});

describe('board: who may read what', () => {
  it('an agent sees unassigned tasks, its own and those of agents the agent-to-agent policy lets it reach; others are refused, naming the layer', async () => {
    const { board } = await start(config());
    const open = (await board.create({ title: 'anyone', triage: true }, USER)).task;
    const writers = (await board.create({ title: 'for writer', assignee: 'writer', triage: true }, USER)).task;
    const blockers = (await board.create({ title: 'for blocker', assignee: 'blocker', triage: true }, USER)).task;
    const ask = async (message: string) => {
      const sent = await gateway!.send({ target: 'planner', message });
      const result = await gateway!.waitForInput(sent.input.id, 10_000);
      return (result as { reply: string }).reply;
    };
    const listed = JSON.parse(await ask('survey the board')) as { tasks: { id: string }[] };
    expect(listed.tasks.map((task) => task.id).sort()).toEqual([open.id, writers.id].sort());
    expect(await ask(`peek ${blockers.id}`)).toBe(
      `forbidden: cannot read board task ${blockers.id}: it belongs to "blocker", and tools.agentToAgent does not let "planner" reach it`,
    );
  });
});

describe('board: remote A2A workers', () => {
  it('a remote agent that does not answer gets no renewals: its claims expire, count, and the task gives up', async () => {
    const { board } = await start(
      config(`a2a: { remoteAgents: [{ id: "gone", url: "http://127.0.0.1:9" }], client: { maxPollSeconds: 1 } },`).replace(
        'board: {',
        'board: { agentClaimTtlSeconds: 1,',
      ),
    );
    const task = (await board.create({ title: 'nobody home', assignee: 'gone' }, USER)).task;
    await waitUntil('the task gave up', async () => (await board.task(task.id))?.state === 'blocked', 10_000);
    const view = (await board.taskView(task.id))!;
    expect(view.task.blockKind).toBe('gave_up');
    expect(view.attempts.map((attempt) => [attempt.worker, attempt.outcome, attempt.ref])).toEqual([
      ['a2a:gone', 'expired', null],
      ['a2a:gone', 'expired', null],
    ]);
  });

  it('a task assigned to a configured remote agent is sent as an A2A message and completed from the remote task', async () => {
    const executor = new ReferenceExecutor();
    const reference = await referenceServer(false, executor);
    server = reference.server;
    const { board } = await start(
      config(`a2a: { remoteAgents: [{ id: "ref", url: "${reference.url}" }], client: { allowPrivateTargets: true, maxPollSeconds: 1 } },`),
    );
    const asked = (await board.create({ title: 'ask about colours', assignee: 'ref' }, USER)).task;
    const quick = (await board.create({ title: 'translate', assignee: 'ref', dependsOn: [asked.id] }, USER)).task;
    await waitUntil('the first task settles', async () => !['ready', 'running'].includes((await board.task(asked.id))!.state), 10_000);
    expect(await board.task(asked.id)).toMatchObject({ state: 'done' });
    await waitUntil('the second task is done', async () => (await board.task(quick.id))?.state === 'done', 10_000);
    const done = (await board.taskView(quick.id))!;
    expect(done.task.result).toMatch(/^ref: Board task /);
    expect(done.attempts[0]).toMatchObject({ worker: 'a2a:ref', outcome: 'completed' });
    expect(done.attempts[0].ref).toBeTruthy();
    expect(executor.messageIds).toEqual([`board-${asked.id}-1`, `board-${quick.id}-1`]);
  });
});
