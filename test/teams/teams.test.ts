/**
 * A team of a lead and three members works through a six-task board with dependencies: every task done once, by a
 * member whose skills match; the lead hears one idle notice per member state change (never again on a later poll);
 * a member's run killed mid-task returns the task as a counted attempt; the lead's shutdown lets members finish or
 * releases what they hold.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BoardService } from '../../src/board/board.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { Teams } from '../../src/mailbox/teams.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const USER = { kind: 'user' as const, name: 'user' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const config = `{
  board: { sweepIntervalMs: 50, maxAttempts: 3 },
  teams: [{ id: "crew", lead: "lead", members: ["ann", "bob", "cy"], skills: { cy: ["docs"], ann: ["code"], bob: ["code"] } }],
  agents: { list: [
    { id: "lead", model: "scripted/lead" },
    { id: "ann", model: "scripted/worker" },
    { id: "bob", model: "scripted/worker" },
    { id: "cy", model: "scripted/worker" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    lead: { rules: [{ reply: "noted" }] },
    worker: { rules: [
      { match: "attempt 1.: slow", delayMs: 20000, reply: "never" },
      { match: "attempt \\\\d+.: hold", delayMs: 20000, reply: "never" },
      { delayMs: 150, steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "done by {{agent}}" } }] }, { text: "done" }] },
    ] },
  } } } },
}`;

async function start(): Promise<{ board: BoardService; teams: Teams }> {
  let board!: BoardService;
  let teams!: Teams;
  gateway = await startTestGateway(config, {}, undefined, { onBoard: (made) => (board = made), onTeams: (made) => (teams = made) });
  return { board, teams };
}

async function notices(g: Gateway) {
  const inputs = await g.store.inputs.list({ sessionKey: 'agent:lead:main', limit: 1000 });
  return inputs
    .filter((input) => input.provenance.channel === 'team')
    .map((input) => ({ member: input.provenance.peer, text: input.text }));
}

describe('teams', () => {
  it('works through a six-task board with dependencies: each task once, skills respected, one notice per idle, a killed run counted', async () => {
    const { board, teams } = await start();
    const create = async (title: string, labels: string[], dependsOn: string[] = []) =>
      (await board.create({ title, board: 'crew', labels, dependsOn }, USER)).task.id;
    const design = await create('design', ['code']);
    const slow = await create('slow build', ['code']);
    const api = await create('api', ['code'], [design]);
    const ui = await create('ui', [], [design]);
    const guide = await create('guide', ['docs'], [api, ui]);
    const release = await create('release', [], [guide, slow]);
    const ids = [design, slow, api, ui, guide, release];
    // The slow build's first attempt is stuck: its run is killed mid-task.
    const stuck = await waitUntil('the slow build is running', async () => {
      const task = await board.task(slow);
      return task?.state === 'running' ? task : undefined;
    });
    const session = `agent:${stuck.claimWorker!.slice('agent:'.length)}:board:${slow}`;
    const run = await waitUntil('its run', async () =>
      (await gateway!.listRuns({ sessionKey: session })).find((candidate) => candidate.status === 'running'),
    );
    await gateway!.cancelRun(run.id);
    await waitUntil(
      'every task done',
      async () => (await Promise.all(ids.map((id) => board.task(id)))).every((task) => task?.state === 'done'),
      20_000,
    );
    for (const id of ids) {
      const view = (await board.taskView(id))!;
      expect(view.attempts.filter((attempt) => attempt.outcome === 'completed')).toHaveLength(1);
      if (id === guide) expect(view.attempts[0].worker).toBe('agent:cy');
      if (id === design || id === api) expect(['agent:ann', 'agent:bob']).toContain(view.attempts[0].worker);
    }
    const slowView = (await board.taskView(slow))!;
    expect(slowView.attempts.map((attempt) => attempt.outcome)).toEqual(['failed', 'completed']);
    expect(slowView.attempts[0].error).toMatch(/cancel/);
    expect(slowView.task.attempts).toBe(2);
    // Every member is idle at the end, and the lead heard of each one's last attempt once.
    await waitUntil('all idle', async () => (await teams.status('crew')).members.every((member) => member.state === 'idle'));
    const heard = await waitUntil('three members idle', async () => {
      const all = await notices(gateway!);
      return new Set(all.map((notice) => notice.member)).size === 3 ? all : undefined;
    });
    const status = await teams.status('crew');
    for (const member of status.members)
      expect(heard.some((notice) => notice.member === member.name && notice.text.includes(`task ${member.last!.taskId} `))).toBe(true);
    expect(new Set(heard.map((notice) => notice.text)).size).toBe(heard.length);
    const endedAttempts = (await Promise.all(ids.map(async (id) => (await board.taskView(id))!.attempts))).flat().length;
    expect(heard.length).toBeLessThanOrEqual(endedAttempts);
    expect(heard[0].text).toMatch(
      /^team crew: (ann|bob|cy) is idle\. Its task \S+ ".+" \(attempt \d\) ended (completed|failed)(: .+)?\. Ready on board crew: \d+\.$/,
    );
    // Polls go on: nothing new is said.
    await sleep(500);
    expect(await notices(gateway!)).toHaveLength(heard.length);
    expect(status).toMatchObject({ id: 'crew', lead: 'lead', board: 'crew', state: 'active', tasks: { done: 6 } });
  });

  it('shutdown: members finish what they hold and take nothing new; with release, what they hold is given back uncounted', async () => {
    const { board, teams } = await start();
    const hold = (await board.create({ title: 'hold on', board: 'crew', labels: ['code'] }, USER)).task.id;
    await waitUntil('held', async () => (await board.task(hold))?.state === 'running');
    const shut = await teams.shutdown('crew', false);
    expect(shut.state).toBe('stopping');
    const later = (await board.create({ title: 'later', board: 'crew' }, USER)).task.id;
    await sleep(400);
    expect((await board.task(later))!.state).toBe('ready');
    expect((await board.task(hold))!.state).toBe('running');
    await teams.shutdown('crew', true);
    await waitUntil('released and stopped', async () => (await teams.status('crew')).state === 'stopped');
    const task = (await board.taskView(hold))!;
    expect(task.task.state).toBe('ready');
    expect(task.task.failures).toBe(0);
    expect(task.attempts.map((attempt) => attempt.outcome)).toEqual(['released']);
    await waitUntil('the lead heard', async () =>
      (await notices(gateway!)).some((notice) => notice.text === 'team crew has shut down: every member is idle.'),
    );
    await teams.resume('crew');
    await waitUntil('work goes on', async () => (await board.task(later))!.state === 'done');
  });
});
