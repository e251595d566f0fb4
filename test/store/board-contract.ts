/**
 * The board store's contract (src/ports/board.ts), run unchanged against every adapter: each transition,
 * each refusal with its exact error, fencing by token, counted reclaims, and concurrent claims.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { BoardStore, NewBoardTask } from '../../src/ports/index.js';
import type { Store } from '../../src/ports/index.js';

let counter = 0;

function newTask(overrides: Partial<NewBoardTask> = {}): NewBoardTask {
  return {
    id: `t${++counter}-${Math.random().toString(16).slice(2, 8)}`,
    board: 'default',
    title: 'write the report',
    body: 'details',
    assignee: null,
    priority: 0,
    labels: [],
    creator: 'user',
    idempotencyKey: null,
    maxAttempts: 2,
    maxRuntimeMs: null,
    dependsOn: [],
    triage: false,
    ...overrides,
  };
}

const TTL = 60_000;

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
  throw new Error('expected a refusal');
}

export function describeBoardContract(name: string, open: () => Promise<Store>): void {
  describe(`board store contract: ${name}`, () => {
    let store: Store;
    let board: BoardStore;
    beforeEach(async () => {
      store = await open();
      board = store.board;
    });
    afterEach(async () => {
      await store.close();
    });

    it('create: ready without dependencies, todo while one is open, triage when asked; a repeated key is the same task', async () => {
      const first = await board.create(newTask({ idempotencyKey: 'k-1', labels: ['a', 'b'], priority: 3 }), 1000);
      expect(first.created).toBe(true);
      expect(first.task).toMatchObject({
        state: 'ready',
        labels: ['a', 'b'],
        priority: 3,
        attempts: 0,
        failures: 0,
        token: 0,
        claimWorker: null,
        createdAt: 1000,
      });
      const again = await board.create(newTask({ idempotencyKey: 'k-1', title: 'other' }), 2000);
      expect(again).toEqual({ task: first.task, created: false });
      const dependent = await board.create(newTask({ dependsOn: [first.task.id, first.task.id] }), 1000);
      expect(dependent.task.state).toBe('todo');
      expect((await board.create(newTask({ triage: true, dependsOn: [first.task.id] }), 1000)).task.state).toBe('triage');
      expect((await board.view(dependent.task.id))!.dependsOn.map((task) => task.id)).toEqual([first.task.id]);
      // Listed by creation time (the collaboration map's window).
      await board.create(newTask({ title: 'later' }), 5000);
      expect((await board.list({ createdSince: 5000 })).map((task) => task.title)).toEqual(['later']);
      expect(await board.list({ createdSince: 1000 })).toHaveLength(4);
      // The hop budget's conversation is kept with the task; a task made without one has none.
      const carried = await board.create(newTask({ conversation: { id: 'c-1', hop: 3 } }), 1000);
      expect((await board.get(carried.task.id))!.conversation).toEqual({ id: 'c-1', hop: 3 });
      expect(first.task.conversation).toBeNull();
      expect(await refusal(board.create(newTask({ dependsOn: ['nope-1', first.task.id] }), 1000))).toEqual({
        code: 'BOARD_TASK_NOT_FOUND',
        message: 'dependsOn: no board task "nope-1"',
      });
    });

    it('create: concurrent creates with one idempotency key make one task', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => board.create(newTask({ idempotencyKey: 'same' }), 1000)));
      expect(new Set(results.map((result) => result.task.id)).size).toBe(1);
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect(await board.list()).toHaveLength(1);
    });

    it('claim: highest priority first, then oldest; the token grows with each claim; nothing ready is undefined', async () => {
      const low = (await board.create(newTask({ priority: 0 }), 1000)).task;
      const high = (await board.create(newTask({ priority: 5 }), 2000)).task;
      const claim = await board.claim({ worker: 'w1', ttlMs: TTL }, 3000);
      expect(claim).toEqual({ taskId: high.id, attempt: 1, token: 1, worker: 'w1', expiresAt: 3000 + TTL });
      expect((await board.claim({ worker: 'w2', ttlMs: TTL }, 3000))!.taskId).toBe(low.id);
      expect(await board.claim({ worker: 'w3', ttlMs: TTL }, 3000)).toBeUndefined();
      const view = await board.view(high.id);
      expect(view!.task).toMatchObject({
        state: 'running',
        claimWorker: 'w1',
        claimedAt: 3000,
        claimExpiresAt: 3000 + TTL,
        attempts: 1,
        token: 1,
      });
      expect(view!.attempts).toEqual([
        {
          taskId: high.id,
          attempt: 1,
          token: 1,
          worker: 'w1',
          ref: null,
          startedAt: 3000,
          heartbeatAt: 3000,
          endedAt: null,
          outcome: null,
          summary: null,
          error: null,
        },
      ]);
    });

    it('claim: by assignee, by board and by id; a worker without --assignee takes unassigned tasks and its own', async () => {
      const forBob = (await board.create(newTask({ assignee: 'bob' }), 1000)).task;
      const other = (await board.create(newTask({ board: 'ops' }), 1000)).task;
      expect(await board.claim({ worker: 'alice', board: 'default', ttlMs: TTL }, 2000)).toBeUndefined();
      expect((await board.claim({ worker: 'bob', board: 'default', ttlMs: TTL }, 2000))!.taskId).toBe(forBob.id);
      expect(await board.claim({ worker: 'x', taskId: 'missing', ttlMs: TTL }, 2000)).toBeUndefined();
      expect((await board.claim({ worker: 'x', taskId: other.id, ttlMs: TTL }, 2000))!.taskId).toBe(other.id);
      const assigned = (await board.create(newTask({ assignee: 'carol' }), 1000)).task;
      expect((await board.claim({ worker: 'w', assignee: 'carol', ttlMs: TTL }, 2000))!.taskId).toBe(assigned.id);
    });

    it('workerSeen: a name is seen once a worker claimed a task under it, not when a task is only assigned to it', async () => {
      await board.create(newTask({ assignee: 'dave' }), 1000);
      expect(await board.workerSeen('dave')).toBe(false);
      await board.claim({ worker: 'dave', ttlMs: TTL }, 2000);
      expect(await board.workerSeen('dave')).toBe(true);
      expect(await board.workerSeen('Dave')).toBe(false);
    });

    it('claim: concurrent claims never take one task twice', async () => {
      for (let i = 0; i < 10; i++) await board.create(newTask(), 1000 + i);
      const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => board.claim({ worker: `w${i}`, ttlMs: TTL }, 5000)));
      const taken = claims.filter((claim) => claim !== undefined).map((claim) => claim!.taskId);
      expect(taken).toHaveLength(10);
      expect(new Set(taken).size).toBe(10);
    });

    it('heartbeat extends the claim; a stale token is refused with CLAIM_LOST and changes nothing', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      const claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      expect(await board.heartbeat(task.id, claim.token, TTL, 5000)).toEqual({ ...claim, expiresAt: 5000 + TTL });
      expect((await board.view(task.id))!.attempts[0].heartbeatAt).toBe(5000);
      await board.noteRef(task.id, claim.token, 'remote-task-9', 5500);
      expect((await board.view(task.id))!.attempts[0]).toMatchObject({ ref: 'remote-task-9', heartbeatAt: 5500 });
      expect((await refusal(board.noteRef(task.id, 7, 'other', 5600))).code).toBe('INVALID_REQUEST');
      await board.release(task.id, claim.token, 'let someone else', 5700);
      const again = (await board.claim({ worker: 'w2', ttlMs: TTL }, 5800))!;
      expect((await refusal(board.noteRef(task.id, claim.token, 'other', 5900))).code).toBe('CLAIM_LOST');
      expect(await refusal(board.heartbeat(task.id, claim.token, TTL, 6000))).toEqual({
        code: 'CLAIM_LOST',
        message: `claim lost: task ${task.id} is claimed again (attempt 2, token 2, by w2); token 1 is no longer its claim, so nothing was changed. Stop working on it.`,
      });
      expect((await board.get(task.id))!.claimExpiresAt).toBe(5800 + TTL);
      expect(again.token).toBe(2);
      expect(await refusal(board.heartbeat('nope', 1, TTL, 6000))).toEqual({
        code: 'BOARD_TASK_NOT_FOUND',
        message: 'no board task "nope" (list them with "switchboard board list")',
      });
    });

    it('complete: done with the result capped and hashed; the dependents whose last dependency it was become ready in the same step', async () => {
      const a = (await board.create(newTask(), 1000)).task;
      const b = (await board.create(newTask(), 1000)).task;
      const both = (await board.create(newTask({ dependsOn: [a.id, b.id] }), 1000)).task;
      const onlyA = (await board.create(newTask({ dependsOn: [a.id] }), 1000)).task;
      const claim = (await board.claim({ worker: 'w', taskId: a.id, ttlMs: TTL }, 2000))!;
      const done = await board.complete(a.id, claim.token, { result: 'x'.repeat(50), summary: 'wrote it', maxResultChars: 10 }, 3000);
      expect(done).toMatchObject({
        state: 'done',
        result: 'x'.repeat(10),
        resultChars: 50,
        resultHash: createHash('sha256').update('x'.repeat(10)).digest('hex'),
        doneAt: 3000,
        claimWorker: null,
      });
      expect((await board.get(onlyA.id))!.state).toBe('ready');
      expect((await board.get(both.id))!.state).toBe('todo');
      expect((await board.view(a.id))!.attempts[0]).toMatchObject({ outcome: 'completed', summary: 'wrote it', endedAt: 3000 });
      expect((await refusal(board.complete(a.id, claim.token, { result: 'again', maxResultChars: 10 }, 4000))).code).toBe('CLAIM_LOST');
      const claimB = (await board.claim({ worker: 'w', taskId: b.id, ttlMs: TTL }, 2000))!;
      await board.complete(b.id, claimB.token, { result: 'ok', maxResultChars: 10 }, 3000);
      expect((await board.get(both.id))!.state).toBe('ready');
    });

    it("fencing: an expired claim is taken back and counted; the first worker's late complete is refused; the second completes once", async () => {
      const task = (await board.create(newTask(), 1000)).task;
      const first = (await board.claim({ worker: 'w1', ttlMs: 1000 }, 2000))!;
      expect(await board.reclaimExpired(2500, 100)).toEqual([]);
      expect(await board.reclaimExpired(3001, 100)).toEqual([{ taskId: task.id, attempt: 1, worker: 'w1', state: 'ready' }]);
      expect((await board.get(task.id))!).toMatchObject({ state: 'ready', failures: 1, attempts: 1, claimWorker: null });
      const second = (await board.claim({ worker: 'w2', ttlMs: TTL }, 4000))!;
      expect(second).toMatchObject({ attempt: 2, token: 2 });
      expect((await refusal(board.complete(task.id, first.token, { result: 'late', maxResultChars: 100 }, 5000))).code).toBe('CLAIM_LOST');
      expect((await refusal(board.heartbeat(task.id, first.token, TTL, 5000))).code).toBe('CLAIM_LOST');
      const done = await board.complete(task.id, second.token, { result: 'on time', maxResultChars: 100 }, 5000);
      expect(done).toMatchObject({ state: 'done', result: 'on time' });
      const attempts = (await board.view(task.id))!.attempts;
      expect(attempts.map((attempt) => [attempt.worker, attempt.outcome])).toEqual([
        ['w1', 'expired'],
        ['w2', 'completed'],
      ]);
      expect(attempts[0].error).toBe(`claim expired: no heartbeat since ${new Date(2000).toISOString()}`);
    });

    it("gave up: after max attempts fail, the task is blocked with gave_up and each attempt's diagnostic", async () => {
      const task = (await board.create(newTask({ maxAttempts: 2 }), 1000)).task;
      const first = (await board.claim({ worker: 'w1', ttlMs: 1000 }, 2000))!;
      await board.fail(task.id, first.token, 'the run ended without completing its task', 2500);
      await board.claim({ worker: 'w2', ttlMs: 1000 }, 3000);
      expect(await board.reclaimExpired(5000, 100)).toEqual([{ taskId: task.id, attempt: 2, worker: 'w2', state: 'blocked' }]);
      const blocked = (await board.get(task.id))!;
      expect(blocked).toMatchObject({ state: 'blocked', blockKind: 'gave_up', failures: 2, attempts: 2 });
      // The event that gave up says so (board watch prints it), the one before it does not.
      const failures = (await board.events({ taskId: task.id })).filter((event) => ['attempt_failed', 'reclaimed'].includes(event.type));
      expect(failures.map((event) => (event.detail as { blockKind?: string }).blockKind)).toEqual([undefined, 'gave_up']);
      expect(blocked.blockReason).toBe(
        `gave up after 2 failed attempts (max 2):\nattempt 1 (w1): the run ended without completing its task\nattempt 2 (w2): claim expired: no heartbeat since ${new Date(3000).toISOString()}`,
      );
      expect(await board.claim({ worker: 'w3', ttlMs: 1000 }, 6000)).toBeUndefined();
      // Moved back to ready by hand: a fresh budget, the attempts keep counting.
      expect(await board.move(task.id, 'ready', { actor: 'user' }, 7000)).toMatchObject({
        state: 'ready',
        failures: 0,
        blockKind: null,
        blockReason: null,
      });
      expect(await board.claim({ worker: 'w3', ttlMs: 1000 }, 8000)).toMatchObject({ attempt: 3, token: 3 });
      // Giving up again lists only the attempts of the fresh budget.
      await board.fail(task.id, 3, 'third', 8500);
      await board.claim({ worker: 'w4', ttlMs: 1000 }, 9000);
      await board.fail(task.id, 4, 'fourth', 9500);
      expect((await board.get(task.id))!.blockReason).toBe(
        'gave up after 2 failed attempts (max 2):\nattempt 3 (w3): third\nattempt 4 (w4): fourth',
      );
    });

    it('max runtime: a claim kept alive by heartbeats is still taken back once it ran too long', async () => {
      const task = (await board.create(newTask({ maxRuntimeMs: 5000 }), 1000)).task;
      const claim = (await board.claim({ worker: 'w1', ttlMs: 2000 }, 2000))!;
      await board.heartbeat(task.id, claim.token, 2000, 3500);
      await board.heartbeat(task.id, claim.token, 2000, 5000);
      await board.heartbeat(task.id, claim.token, 2000, 6500);
      expect(await board.reclaimExpired(7001, 100)).toEqual([{ taskId: task.id, attempt: 1, worker: 'w1', state: 'ready' }]);
      expect((await board.view(task.id))!.attempts[0].error).toBe("ran longer than the task's max runtime of 5000 ms");
    });

    it('block, release and review: each ends the attempt; a release is not counted as a failure', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      let claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      expect(await board.release(task.id, claim.token, 'not mine', 2500)).toMatchObject({ state: 'ready', failures: 0, claimWorker: null });
      claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 3000))!;
      expect(await board.block(task.id, claim.token, { kind: 'needs_input', reason: 'which format?' }, 3500)).toMatchObject({
        state: 'blocked',
        blockKind: 'needs_input',
        blockReason: 'which format?',
      });
      expect((await refusal(board.block(task.id, claim.token, { kind: 'failed', reason: 'again' }, 3600))).code).toBe('CLAIM_LOST');
      await board.move(task.id, 'ready', { actor: 'user', reason: 'markdown' }, 4000);
      claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 5000))!;
      expect(await board.complete(task.id, claim.token, { result: 'draft', review: true, maxResultChars: 100 }, 6000)).toMatchObject({
        state: 'review',
        result: 'draft',
        doneAt: null,
      });
      expect(await board.move(task.id, 'ready', { actor: 'reviewer', reason: 'needs a summary' }, 6500)).toMatchObject({ state: 'ready' });
      claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 7000))!;
      await board.complete(task.id, claim.token, { result: 'final', review: true, maxResultChars: 100 }, 7500);
      expect(await board.move(task.id, 'done', { actor: 'reviewer' }, 8000)).toMatchObject({ state: 'done', doneAt: 8000 });
      const outcomes = (await board.view(task.id))!.attempts.map((attempt) => attempt.outcome);
      expect(outcomes).toEqual(['released', 'blocked', 'review', 'review']);
      expect((await board.get(task.id))!.failures).toBe(0);
    });

    it('move: refusals name what is possible; a cancel fences the running worker out', async () => {
      const a = (await board.create(newTask(), 1000)).task;
      const b = (await board.create(newTask({ dependsOn: [a.id] }), 1000)).task;
      expect(await refusal(board.move(b.id, 'ready', { actor: 'user' }, 2000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${b.id} cannot be ready: it depends on ${a.id}, not done yet (it becomes ready by itself when they are)`,
      });
      expect(await refusal(board.move(a.id, 'done', { actor: 'user' }, 2000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${a.id}: a ready task can be moved to triage, todo, blocked, cancelled, not to done`,
      });
      const claim = (await board.claim({ worker: 'w1', taskId: a.id, ttlMs: TTL }, 2000))!;
      expect(await refusal(board.move(a.id, 'review', { actor: 'user' }, 2000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${a.id}: a running task moves only through its claim (complete, block, release) or a cancel; it cannot be moved to review by hand`,
      });
      expect(await board.move(a.id, 'cancelled', { actor: 'user', reason: 'not needed' }, 3000)).toMatchObject({
        state: 'cancelled',
        claimWorker: null,
        token: 2,
      });
      expect((await refusal(board.complete(a.id, claim.token, { result: 'x', maxResultChars: 10 }, 3500))).code).toBe('CLAIM_LOST');
      expect((await board.view(a.id))!.attempts[0]).toMatchObject({ outcome: 'cancelled', error: 'not needed' });
      await board.move(a.id, 'archived', { actor: 'user' }, 4000);
      expect(await refusal(board.move(a.id, 'ready', { actor: 'user' }, 5000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${a.id}: an archived task is final and cannot be moved`,
      });
      expect(await refusal(board.move(b.id, 'todo', { actor: 'user' }, 5000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${b.id}: the task is already todo`,
      });
    });

    it('link: a ready task waits for its new dependency; a cycle is refused with its path; started tasks keep theirs', async () => {
      const a = (await board.create(newTask(), 1000)).task;
      const b = (await board.create(newTask({ dependsOn: [a.id] }), 1000)).task;
      const c = (await board.create(newTask({ dependsOn: [b.id] }), 1000)).task;
      const d = (await board.create(newTask(), 1000)).task;
      expect(await board.link(d.id, a.id, 'user', 2000)).toMatchObject({ state: 'todo' });
      expect(await board.dependencies([a.id, b.id, c.id, d.id])).toEqual({ [b.id]: [a.id], [c.id]: [b.id], [d.id]: [a.id] });
      expect(await board.dependencies([])).toEqual({});
      expect(await refusal(board.link(a.id, c.id, 'user', 2000))).toEqual({
        code: 'DEPENDENCY_CYCLE',
        message: `refused: ${a.id} depending on ${c.id} would close a cycle: ${a.id} -> ${c.id} -> ${b.id} -> ${a.id}`,
      });
      expect(await refusal(board.link(a.id, a.id, 'user', 2000))).toEqual({
        code: 'DEPENDENCY_CYCLE',
        message: `refused: ${a.id} depending on ${a.id} would close a cycle: ${a.id} -> ${a.id}`,
      });
      const claim = (await board.claim({ worker: 'w', taskId: a.id, ttlMs: TTL }, 3000))!;
      expect(await refusal(board.link(a.id, d.id, 'user', 3000))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${a.id} is running; dependencies can be added only to tasks that have not started`,
      });
      await board.complete(a.id, claim.token, { result: 'ok', maxResultChars: 10 }, 4000);
      expect((await board.get(d.id))!.state).toBe('ready');
      expect((await board.view(a.id))!.dependents.map((task) => task.id).sort()).toEqual([b.id, d.id].sort());
    });

    it('comments: anyone may comment; a worker comments under its claim, and a stale claim is refused', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      await board.comment(task.id, { author: 'user', body: 'use markdown' }, 1500);
      const claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      expect(await board.comment(task.id, { author: 'w1', body: 'halfway', token: claim.token }, 2500)).toMatchObject({
        author: 'w1',
        body: 'halfway',
        attempt: 1,
        createdAt: 2500,
      });
      await board.release(task.id, claim.token, undefined, 3000);
      expect((await refusal(board.comment(task.id, { author: 'w1', body: 'late', token: claim.token }, 3500))).code).toBe('CLAIM_LOST');
      expect((await board.view(task.id))!.comments.map((comment) => comment.body)).toEqual(['use markdown', 'halfway']);
      expect((await board.view(task.id, { comments: 1 }))!.comments.map((comment) => comment.body)).toEqual(['halfway']);
    });

    it('retries: the same complete or block again answers as the first did; another result, or after a new claim, is CLAIM_LOST', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      const claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      const done = await board.complete(task.id, claim.token, { result: 'the report', maxResultChars: 100 }, 3000);
      expect(await board.complete(task.id, claim.token, { result: 'the report', maxResultChars: 100 }, 4000)).toEqual(done);
      expect((await refusal(board.complete(task.id, claim.token, { result: 'another report', maxResultChars: 100 }, 4000))).code).toBe(
        'CLAIM_LOST',
      );
      expect(
        (await refusal(board.complete(task.id, claim.token, { result: 'the report', review: true, maxResultChars: 100 }, 4000))).code,
      ).toBe('CLAIM_LOST');
      expect((await board.events({ taskId: task.id })).filter((event) => event.type === 'completed')).toHaveLength(1);

      const other = (await board.create(newTask(), 5000)).task;
      let held = (await board.claim({ worker: 'w1', taskId: other.id, ttlMs: TTL }, 5000))!;
      const blocked = await board.block(other.id, held.token, { kind: 'needs_input', reason: 'which format?' }, 5500);
      expect(await board.block(other.id, held.token, { kind: 'needs_input', reason: 'which format?' }, 5600)).toEqual(blocked);
      await board.move(other.id, 'ready', { actor: 'user' }, 6000);
      const first = held.token;
      held = (await board.claim({ worker: 'w2', taskId: other.id, ttlMs: TTL }, 6500))!;
      expect((await refusal(board.block(other.id, first, { kind: 'needs_input', reason: 'which format?' }, 7000))).code).toBe('CLAIM_LOST');
    });

    it('a token that was never issued is told so, not that its claim was lost', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      expect(await refusal(board.complete(task.id, 1, { result: 'x', maxResultChars: 10 }, 1500))).toEqual({
        code: 'INVALID_REQUEST',
        message: `token 1 was never issued for task ${task.id} (its claims so far: none yet); use the token "board claim" gave you`,
      });
      await board.claim({ worker: 'w1', ttlMs: TTL }, 2000);
      for (const token of [2, 0, -1, 1.5]) {
        expect(await refusal(board.heartbeat(task.id, token, TTL, 2500))).toEqual({
          code: 'INVALID_REQUEST',
          message: `token ${token} was never issued for task ${task.id} (its claims so far: only 1); use the token "board claim" gave you`,
        });
      }
    });

    it('comments with a ledger key: a second call with the key writes nothing and returns the first comment', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      const first = await board.comment(task.id, { author: 'agent:a', body: 'looks good', key: 'tc:in1:0:0:board_comment:abc' }, 1500);
      const again = await board.comment(task.id, { author: 'agent:a', body: 'looks good', key: 'tc:in1:0:0:board_comment:abc' }, 2500);
      expect(again).toEqual(first);
      await board.comment(task.id, { author: 'agent:a', body: 'looks good', key: 'tc:in2:0:0:board_comment:abc' }, 3000);
      expect((await board.view(task.id))!.comments.map((comment) => comment.createdAt)).toEqual([1500, 3000]);
    });

    it('review: the comment and the move are one transaction; refused outside review with nothing written; a repeated key reviews once', async () => {
      const task = (await board.create(newTask(), 1000)).task;
      expect(await refusal(board.review(task.id, { approve: false, actor: 'reviewer', comment: 'redo it' }, 1500))).toEqual({
        code: 'BOARD_MOVE_REFUSED',
        message: `task ${task.id} is ready, not in review; only a task a worker sent to review can be approved or sent back`,
      });
      expect((await board.view(task.id))!.comments).toEqual([]);
      const claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      await board.complete(task.id, claim.token, { result: 'draft', review: true, maxResultChars: 100 }, 2500);
      const key = 'tc:in1:0:0:board_review:abc';
      expect(await board.review(task.id, { approve: false, actor: 'reviewer', comment: 'add a summary', key }, 3000)).toMatchObject({
        state: 'ready',
      });
      expect(await board.review(task.id, { approve: false, actor: 'reviewer', comment: 'add a summary', key }, 3500)).toMatchObject({
        state: 'ready',
      });
      const view = (await board.view(task.id))!;
      expect(view.comments.map((comment) => `${comment.author}: ${comment.body}`)).toEqual(['reviewer: add a summary']);
      const events = await board.events({ taskId: task.id });
      expect(events.filter((event) => event.type === 'moved').map((event) => (event.detail as { reason?: string }).reason)).toEqual([
        'changes requested',
      ]);
      const second = (await board.claim({ worker: 'w1', ttlMs: TTL }, 4000))!;
      await board.complete(task.id, second.token, { result: 'final', review: true, maxResultChars: 100 }, 4500);
      expect(await board.review(task.id, { approve: true, actor: 'reviewer' }, 5000)).toMatchObject({ state: 'done', doneAt: 5000 });
    });

    it("events: every change is in the task's log and in the gateway journal", async () => {
      const task = (await board.create(newTask(), 1000)).task;
      const claim = (await board.claim({ worker: 'w1', ttlMs: TTL }, 2000))!;
      await board.complete(task.id, claim.token, { result: 'ok', maxResultChars: 10 }, 3000);
      const events = await board.events({ taskId: task.id });
      expect(events.map((event) => [event.type, event.actor, (event.detail as { state: string }).state])).toEqual([
        ['created', 'user', 'ready'],
        ['claimed', 'w1', 'running'],
        ['completed', 'w1', 'done'],
      ]);
      expect(await board.events({ afterSeq: events[1].seq })).toEqual([events[2]]);
      const journal = await store.events.list({});
      expect(journal.filter((event) => event.type === 'board.updated').map((event) => (event.payload as { event: string }).event)).toEqual([
        'created',
        'claimed',
        'completed',
      ]);
      // Of one board: another board's task is not among them.
      const elsewhere = (await board.create(newTask({ board: 'other' }), 4000)).task;
      expect(await board.events({ board: task.board, afterSeq: events[0].seq })).toEqual(events.slice(1));
      expect((await board.events({ board: 'other' })).map((event) => [event.taskId, event.type])).toEqual([[elsewhere.id, 'created']]);
    });

    it('the dispatcher lease: one holder at a time, taken over once it expires; its epoch grows when it changes hands', async () => {
      expect(await board.holdDispatcher('gw-1', 1000, 1000)).toEqual({ owner: 'gw-1', epoch: 1 });
      expect(await board.holdDispatcher('gw-2', 1000, 1500)).toBeUndefined();
      expect(await board.holdDispatcher('gw-1', 1000, 1800)).toEqual({ owner: 'gw-1', epoch: 1 });
      expect(await board.holdDispatcher('gw-2', 1000, 2900)).toEqual({ owner: 'gw-2', epoch: 2 });
      expect(await board.holdDispatcher('gw-1', 1000, 3000)).toBeUndefined();
    });

    it("the dispatcher's writes are fenced: once another gateway took the lease, each is refused and writes nothing", async () => {
      const fence = (await board.holdDispatcher('gw-1', 1000, 1000))!;
      const stale = board.fenced(fence);
      const { task } = await board.create(newTask({ assignee: 'agent:a' }), 1000);
      const claim = (await stale.claim({ worker: 'agent:a', assignee: 'agent:a', ttlMs: 500 }, 1000))!;
      expect(claim.taskId).toBe(task.id);
      const { task: other } = await board.create(newTask({ assignee: 'agent:a' }), 1000);
      // Its lease runs out and gw-2 takes it; gw-1 comes back and writes as if it still held it.
      await board.holdDispatcher('gw-2', 1000, 2500);
      const lost = {
        code: 'DISPATCHER_LEASE_LOST',
        message: 'the board dispatcher lease moved on from gw-1 (epoch 1): another gateway dispatches now; nothing was written',
      };
      expect(await refusal(stale.heartbeat(task.id, claim.token, TTL, 2600))).toEqual(lost);
      expect(await refusal(stale.claim({ worker: 'agent:a', assignee: 'agent:a', ttlMs: TTL }, 2600))).toEqual(lost);
      expect(await refusal(stale.fail(task.id, claim.token, 'its run ended', 2600))).toEqual(lost);
      expect(await refusal(stale.reclaimExpired(2600, 10))).toEqual(lost);
      expect(await board.get(other.id)).toMatchObject({ state: 'ready', attempts: 0 });
      expect(await board.get(task.id)).toMatchObject({ state: 'running', failures: 0, claimExpiresAt: 1500 });
      // The holder's own view writes.
      const current = board.fenced((await board.holdDispatcher('gw-2', 1000, 2700))!);
      expect(await current.reclaimExpired(2700, 10)).toMatchObject([{ taskId: task.id, state: 'ready' }]);
    });
  });
}
