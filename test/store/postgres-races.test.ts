/**
 * Races on PostgreSQL, where transactions run concurrently (on one gateway's pool as on several gateways): two
 * stores on one schema, each with its own connections, run the two sides of each race many times. Each of these
 * failed on the code before its fix (a write by id only, an unlocked read of dependencies, an unfenced mark).
 */
import pg from 'pg';
import { POSTGRES_URL, postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';
import { describe, expect, it } from 'vitest';
import { settle } from '../helpers/settle.js';
import type { NewBoardTask, Store } from '../../src/ports/index.js';
import { EventBus } from '../../src/gateway/events/event-bus.js';
import { JournalTail } from '../../src/gateway/events/journal-tail.js';

const url = POSTGRES_URL;
const ROUNDS = 40;

let counter = 0;
function newTask(overrides: Partial<NewBoardTask> = {}): NewBoardTask {
  return {
    id: `race-${++counter}`,
    board: 'default',
    title: 'race',
    body: '',
    assignee: null,
    priority: 0,
    labels: [],
    creator: 'user',
    idempotencyKey: null,
    maxAttempts: 5,
    maxRuntimeMs: null,
    dependsOn: [],
    triage: false,
    ...overrides,
  };
}

/** The board log after `afterSeq`, once it holds the task's event (the settled point moves on a read after the commit). */
async function waitForEvents(store: Store, afterSeq: number, taskId: string) {
  for (let tries = 0; tries < 100; tries++) {
    const events = await store.board.events({ afterSeq });
    if (events.some((event) => event.taskId === taskId)) return events;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the board log never showed ${taskId}`);
}

if (process.env.CI || (await postgresReachable())) {
  describe('postgres races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    const schema = twoStoresOnOneSchema('sb_race', (first, second) => {
      a = first;
      b = second;
    });

    it('complete racing the take-back: the task is done once or taken back, never ready with a result', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const { task } = await a.board.create(newTask(), 1000);
        const claim = (await a.board.claim({ worker: 'w1', ttlMs: 1, taskId: task.id }, 1000))!;
        const [completed, reclaimed] = await Promise.all([
          settle(a.board.complete(task.id, claim.token, { result: 'r', maxResultChars: 100 }, 1000)),
          settle(b.board.reclaimExpired(5000, 10)),
        ]);
        const after = await a.board.get(task.id);
        const takenBack = reclaimed.ok && reclaimed.value.some((r) => r.taskId === task.id);
        if (completed.ok) {
          expect(takenBack).toBe(false);
          expect(after!.state).toBe('done');
        } else {
          expect(completed.code).toBe('CLAIM_LOST');
          expect(takenBack).toBe(true);
          expect(after!.state).toBe('ready');
          expect(after!.result).toBeNull();
        }
      }
    });

    it("a stale worker's heartbeat never extends or hands back the next worker's claim", async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const { task } = await a.board.create(newTask(), 1000);
        const first = (await a.board.claim({ worker: 'w1', ttlMs: 1, taskId: task.id }, 1000))!;
        const beats = Array.from({ length: 6 }, (_, i) => settle((i % 2 ? b : a).board.heartbeat(task.id, first.token, 60_000, 1000)));
        await b.board.reclaimExpired(5000, 10);
        await a.board.claim({ worker: 'w2', ttlMs: 1000, taskId: task.id }, 5000);
        for (const beat of await Promise.all(beats)) {
          if (beat.ok) {
            expect(beat.value.token).toBe(first.token);
            expect(beat.value.worker).toBe('w1');
          } else expect(beat.code).toBe('CLAIM_LOST');
        }
        const after = (await a.board.get(task.id))!;
        if (after.claimWorker === 'w2') expect(after.claimExpiresAt).toBe(6000);
      }
    });

    it('two dependencies finishing at once promote their dependent', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const first = (await a.board.create(newTask(), 1000)).task;
        const second = (await a.board.create(newTask(), 1000)).task;
        const dependent = (await a.board.create(newTask({ dependsOn: [first.id, second.id] }), 1000)).task;
        expect(dependent.state).toBe('todo');
        const one = (await a.board.claim({ worker: 'w1', ttlMs: 60_000, taskId: first.id }, 1000))!;
        const two = (await a.board.claim({ worker: 'w2', ttlMs: 60_000, taskId: second.id }, 1000))!;
        await Promise.all([
          a.board.complete(first.id, one.token, { result: 'a', maxResultChars: 100 }, 1000),
          b.board.complete(second.id, two.token, { result: 'b', maxResultChars: 100 }, 1000),
        ]);
        expect((await a.board.get(dependent.id))!.state).toBe('ready');
      }
    });

    it('a link racing the dependency finishing leaves the task ready or promoted, never todo for ever', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const dependency = (await a.board.create(newTask(), 1000)).task;
        const task = (await a.board.create(newTask(), 1000)).task;
        const claim = (await a.board.claim({ worker: 'w1', ttlMs: 60_000, taskId: dependency.id }, 1000))!;
        await Promise.all([
          a.board.complete(dependency.id, claim.token, { result: 'a', maxResultChars: 100 }, 1000),
          b.board.link(task.id, dependency.id, 'user', 1000),
        ]);
        expect((await a.board.get(task.id))!.state).toBe('ready');
      }
    });

    it('the journal tail publishes an event committed after a later one, in sequence order, and reads past neither', async () => {
      const bus = new EventBus();
      const published: number[] = [];
      bus.subscribe((live) => live.type === 'journal' && published.push(live.event.seq));
      const tail = new JournalTail(b, bus);
      await tail.init();
      for (let round = 0; round < 10; round++) {
        published.length = 0;
        // A transaction takes its sequence number and stays open while a later number commits.
        const slow = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
        await slow.connect();
        await slow.query('BEGIN');
        const held = await slow.query<{ seq: string }>(
          `INSERT INTO events (type, payload, created_at) VALUES ('test.slow', '{}', 1) RETURNING seq`,
        );
        const later = await a.events.append({ type: 'board.updated', payload: {} }, 1);
        expect(later.seq).toBeGreaterThan(Number(held.rows[0]!.seq));
        await tail.kick();
        expect(published).toEqual([]);
        expect(await b.events.settled()).toMatchObject({ unsettled: true });
        expect((await b.events.settled()).seq).toBeLessThan(Number(held.rows[0]!.seq));
        await slow.query('COMMIT');
        await slow.end();
        await tail.kick();
        await new Promise((resolve) => setTimeout(resolve, 30));
        expect(published).toEqual([Number(held.rows[0]!.seq), later.seq]);
      }
      tail.stop();
    });

    it("the board's event log read after a number stops below an event still committing, and never skips it", async () => {
      for (let round = 0; round < 10; round++) {
        const before = (await b.board.events({ afterSeq: 0, limit: 100_000 })).at(-1)?.seq ?? 0;
        const slow = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
        await slow.connect();
        await slow.query('BEGIN');
        const held = await slow.query<{ seq: string }>(
          `INSERT INTO board_events (task_id, board, type, actor, detail, created_at) VALUES ('t-slow', 'default', 'commented', 'x', '{}', 1) RETURNING seq`,
        );
        const { task } = await a.board.create(newTask(), 1000);
        const later = await b.board.events({ afterSeq: before });
        expect(later.map((event) => event.taskId)).not.toContain(task.id);
        await slow.query('COMMIT');
        await slow.end();
        const after = await waitForEvents(b, before, task.id);
        expect(after.map((event) => event.seq)).toEqual([...after.map((event) => event.seq)].sort((x, y) => x - y));
        expect(after[0]!.seq).toBe(Number(held.rows[0]!.seq));
      }
    });

    it('two gateways claiming one due outbox row: exactly one attempt gets it', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const row = await a.outbox.add({ id: `ob-${round}`, kind: 'k', target: 't', payload: {}, idempotencyKey: `race-${round}` }, 1000);
        const claims = await Promise.all([a.outbox.claim(row.id, 'gw-1', 1000, 60_000), b.outbox.claim(row.id, 'gw-1', 1000, 60_000)]);
        expect(claims.filter(Boolean)).toHaveLength(1);
      }
    });

    it('two sends opening one new session at once: one session, each input once, the route one of theirs', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const key = `agent:w:api:direct:race-${round}`;
        const open = (store: Store, peer: string) =>
          store.inputs.enqueueOpening(
            { key, agentId: 'w', route: { channel: 'api', peer }, create: true },
            {
              id: `in-${round}-${peer}`,
              sessionKey: key,
              idempotencyKey: `k-${round}-${peer}`,
              mode: 'followup',
              text: peer,
              provenance: { kind: 'user' },
            },
            1000,
            { planHead: 64 },
          );
        const [first, second] = await Promise.all([open(a, 'one'), open(b, 'two')]);
        expect([first !== 'missing' && first.created, second !== 'missing' && second.created]).toEqual([true, true]);
        expect((await a.inputs.listQueued(key)).map((input) => input.text).sort()).toEqual(['one', 'two']);
        expect((await a.sessions.list({ agentId: 'w' })).filter((session) => session.key === key)).toHaveLength(1);
        expect(['one', 'two']).toContain((await a.sessions.get(key))?.route?.peer);
      }
    });

    it('link(a, b) racing link(b, a): one of them is refused as a cycle', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const x = (await a.board.create(newTask(), 1000)).task;
        const y = (await a.board.create(newTask(), 1000)).task;
        const results = await Promise.all([settle(a.board.link(x.id, y.id, 'user', 1000)), settle(b.board.link(y.id, x.id, 'user', 1000))]);
        expect(results.filter((result) => result.ok)).toHaveLength(1);
        expect(results.find((result) => !result.ok)).toMatchObject({ code: 'DEPENDENCY_CYCLE' });
      }
    });
  });
} else {
  describe('postgres races', () => {
    it.skip(`no PostgreSQL server at ${url} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
