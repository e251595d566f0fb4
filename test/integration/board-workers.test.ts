/**
 * The board through a real gateway process: fencing between two outside workers on the CLI, one chain of
 * tasks worked by an agent, an outside worker and a remote A2A agent in order, and bad input refused with
 * exact errors.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BoardClaim, BoardTaskRecord, BoardTaskView } from '../../src/ports/index.js';
import { ReferenceExecutor, referenceServer } from '../helpers/a2a-reference.js';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const executor = new ReferenceExecutor();
let reference: { server: Server; url: string };

// The remote agent's address is known only once it listens; the config names a port picked before.
const port = 40_000 + Math.floor(Math.random() * 20_000);
const { configPath } = tempConfig(`{
  board: { sweepIntervalMs: 100 },
  a2a: { remoteAgents: [{ id: "ref", url: "http://127.0.0.1:${port}" }], client: { maxPollSeconds: 1 } },
  agents: { list: [{ id: "writer", model: "scripted/writer" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    writer: { rules: [{ steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "outline: intro, body, end" } }] }, { text: "done" }] }] },
  } } } },
}`);

beforeAll(async () => {
  reference = await referenceServer(false, executor, undefined, port);
});
afterAll(() => reference?.server.close());
const suite = gatewayForSuite(configPath);
const cli = cliWith(configPath);

async function json<T>(...args: string[]): Promise<T> {
  const result = await cli('--json', ...args);
  if (result.code !== 0) throw new Error(`switchboard ${args.join(' ')} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

describe('board: outside workers through the CLI', () => {
  it("fencing: the first worker's claim expires and the second claims; the first's late complete is refused and the task is completed once, by the second", async () => {
    const { task } = await json<{ task: BoardTaskRecord }>('board', 'create', 'fence me', '--assignee', 'cli-workers');
    const first = await json<{ claim: BoardClaim }>('board', 'claim', '--worker', 'w1', '--assignee', 'cli-workers', '--ttl', '1');
    expect(first.claim).toMatchObject({ taskId: task.id, attempt: 1, token: 1, worker: 'w1' });
    await waitUntil(
      'the first claim is taken back',
      async () => (await json<BoardTaskView>('board', 'show', task.id)).task.state === 'ready',
      5000,
      100,
    );
    const second = await json<{ claim: BoardClaim }>('board', 'claim', '--worker', 'w2', '--assignee', 'cli-workers');
    expect(second.claim).toMatchObject({ taskId: task.id, attempt: 2, token: 2, worker: 'w2' });
    const late = await cli('board', 'complete', task.id, '--token', '1', '--result', 'late');
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(
      `claim lost: task ${task.id} is claimed again (attempt 2, token 2, by w2); token 1 is no longer its claim, so nothing was changed. Stop working on it.`,
    );
    expect((await cli('board', 'complete', task.id.slice(0, 8), '--token', '2', '--result', 'on time')).code).toBe(0);
    // A retry after a lost answer is answered as the first was; a token never issued is told so.
    expect((await cli('board', 'complete', task.id, '--token', '2', '--result', 'on time')).code).toBe(0);
    const unknown = await cli('board', 'complete', task.id, '--token', '9', '--result', 'x');
    expect([unknown.code, unknown.stderr]).toEqual([
      1,
      `switchboard: token 9 was never issued for task ${task.id} (its claims so far: 1 to 2); use the token "board claim" gave you\n`,
    ]);
    const view = await json<BoardTaskView>('board', 'show', task.id);
    expect(view.task).toMatchObject({ state: 'done', result: 'on time', attempts: 2, failures: 1 });
    expect(view.attempts.map((attempt) => [attempt.worker, attempt.outcome])).toEqual([
      ['w1', 'expired'],
      ['w2', 'completed'],
    ]);
    const shown = await cli('board', 'show', task.id);
    expect(shown.stdout).toContain('1. w1');
    expect(shown.stdout).toContain('expired - claim expired: no heartbeat since');
    expect(shown.stdout).toContain('2. w2');
    const list = await cli('board', 'list');
    expect(list.stdout).toMatch(/DONE \(\d+\)\n(.*\n)*.*fence me/);
  });

  it('a chain: an agent, then an outside worker, then a remote A2A agent each complete one task, in order', async () => {
    const outline = (await json<{ task: BoardTaskRecord }>('board', 'create', 'outline', '--assignee', 'writer')).task;
    const draft = (await json<{ task: BoardTaskRecord }>('board', 'create', 'draft', '--assignee', 'ext', '--depends-on', outline.id)).task;
    const review = (await json<{ task: BoardTaskRecord }>('board', 'create', 'review', '--assignee', 'ref', '--depends-on', draft.id)).task;
    // The agent may finish the outline before the draft is even created; the order is checked from the attempts below.
    expect(review.state).toBe('todo');
    // The outside worker: polls until its task is ready, and gets the result of what it depends on with the claim.
    const claimed = await waitUntil(
      'the outside worker gets its task',
      async () =>
        (await json<{ claim: BoardClaim | null } & Partial<BoardTaskView>>('board', 'claim', '--worker', 'ext', '--assignee', 'ext')).claim
          ? await json<BoardTaskView>('board', 'show', draft.id)
          : null,
      15_000,
      100,
    );
    expect(claimed.dependsOn).toEqual([{ id: outline.id, title: 'outline', state: 'done', result: 'outline: intro, body, end' }]);
    await json(
      'board',
      'complete',
      draft.id,
      '--token',
      String(claimed.task.token),
      '--result',
      `draft after ${claimed.dependsOn[0].result}`,
    );
    await waitUntil(
      'the remote agent finishes the review',
      async () => (await json<BoardTaskView>('board', 'show', review.id)).task.state === 'done',
      15_000,
      100,
    );
    const views = await Promise.all([outline, draft, review].map((task) => json<BoardTaskView>('board', 'show', task.id)));
    expect(views.map((view) => view.attempts.map((attempt) => attempt.worker))).toEqual([['agent:writer'], ['ext'], ['a2a:ref']]);
    expect(views[1].attempts[0].startedAt).toBeGreaterThanOrEqual(views[0].task.doneAt!);
    expect(views[2].attempts[0].startedAt).toBeGreaterThanOrEqual(views[1].task.doneAt!);
    expect(views[2].task.result).toContain('draft after outline: intro, body, end');
    expect(views[2].task.result).toMatch(/^ref: Board task /);
    // board list shows what each task waited for.
    const listed = await cli('board', 'list');
    expect(listed.stdout).toContain(`${draft.id.slice(0, 8)}  draft [ext] (after ${outline.id.slice(0, 8)})`);
    expect(listed.stdout).toContain(`${review.id.slice(0, 8)}  review [ref] (after ${draft.id.slice(0, 8)})`);
  });
});

describe('board: watching', () => {
  it('/v1/events?type=board. replays and follows the board changes only', async () => {
    const { gw } = suite;
    await gw.request('POST', '/v1/send', { target: 'writer', message: 'a run, so that the journal holds other events too', wait: true });
    const { body } = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', { title: 'watched', triage: true });
    const stop = new AbortController();
    const response = await fetch(`${gw.url}/v1/events?type=board.&after=0`, {
      headers: { authorization: `Bearer ${gw.token}` },
      signal: stop.signal,
    });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes(`"taskId":"${body.task.id}"`)) text += new TextDecoder().decode((await reader.read()).value);
    stop.abort();
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1]);
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(['board.updated']));
  });
});

describe('board: bad input', () => {
  it('create with an assignee that is no agent and no worker seen yet warns, in the text output and in the JSON answer', async () => {
    const text = await cli('board', 'create', 'x', '--assignee', 'writr');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^created: \S+ \(ready\)\n$/);
    expect(text.stderr).toBe(
      'switchboard: warning: assignee "writr" is no agent of this gateway (writer, ref) and no worker has claimed a task under that name yet, so the task waits until one does (did you mean "writer"?)\n',
    );
    const { body } = await suite.gw.request<{ warning?: string }>('POST', '/v1/board/tasks', { title: 'y', assignee: 'writr' });
    expect(body.warning).toContain('(did you mean "writer"?)');
    expect((await cli('board', 'create', 'z', '--assignee', 'writer')).stderr).toBe('');
  });

  it('each refusal is a 4xx naming what is wrong', async () => {
    const { gw } = suite;
    expect(await gw.request('POST', '/v1/board/tasks', { body: 'no title' })).toEqual({
      status: 400,
      body: {
        error: expect.objectContaining({
          code: 'INVALID_REQUEST',
          message: 'invalid request body: title: expected string, received undefined',
        }),
      },
    });
    expect(await gw.request('POST', '/v1/board/tasks', { title: 'x', board: 'Bad Name' })).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 'INVALID_REQUEST',
          message: 'board: expected lowercase letters, digits, "-" and "_" (at most 64, starting with a letter or digit), got "Bad Name"',
        },
      },
    });
    expect(await gw.request('POST', '/v1/board/tasks', { title: 'x', dependsOn: ['nope-nope'] })).toMatchObject({
      status: 404,
      body: { error: { code: 'BOARD_TASK_NOT_FOUND', message: 'dependsOn: no board task "nope-nope"' } },
    });
    expect(await gw.request('POST', '/v1/board/claim', { worker: 'agent:x' })).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 'INVALID_REQUEST',
          message: 'worker: names starting with "agent:" or "a2a:" belong to the gateway\'s own dispatcher; pick another name',
        },
      },
    });
    expect(await gw.request('POST', '/v1/board/tasks/nope-nope/complete', { token: 'one', result: 'x' })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_REQUEST' } },
    });
    expect(await gw.request('POST', '/v1/board/tasks/nope-nope/complete', { token: 1, result: 'x' })).toMatchObject({
      status: 404,
      body: { error: { code: 'BOARD_TASK_NOT_FOUND', message: 'no board task "nope-nope" (list them with "switchboard board list")' } },
    });
    expect(await gw.request('GET', '/v1/board/tasks?state=doing')).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 'INVALID_REQUEST',
          message: 'state: expected one of triage, todo, ready, running, review, done, blocked, cancelled, archived, got "doing"',
        },
      },
    });
    const { body } = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', { title: 'cycle a' });
    const b = await gw.request<{ task: BoardTaskRecord }>('POST', '/v1/board/tasks', { title: 'cycle b', dependsOn: [body.task.id] });
    expect(await gw.request('POST', `/v1/board/tasks/${body.task.id}/links`, { dependsOn: b.body.task.id })).toMatchObject({
      status: 409,
      body: {
        error: {
          code: 'DEPENDENCY_CYCLE',
          message: `refused: ${body.task.id} depending on ${b.body.task.id} would close a cycle: ${body.task.id} -> ${b.body.task.id} -> ${body.task.id}`,
        },
      },
    });
  });
});
