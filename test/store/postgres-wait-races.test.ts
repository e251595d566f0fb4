/**
 * Durable waits' races on PostgreSQL (RunStore.suspend, wake, resume; ARCHITECTURE.md 4.7): two stores on one schema,
 * as two gateways are. Two gateways wake one waiting run at once (an event reaches both); a run's owner suspends it
 * while the other takes it over as expired; a resume (a lane that looked) races the wake. Each race runs many times;
 * after each, exactly one order holds and nothing is left half done.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';
import { settle } from '../helpers/settle.js';
import { firstStep, startedRun, takeover } from '../helpers/race-runs.js';
import type { Store } from '../../src/ports/index.js';
import { succeededCommit } from '../helpers/inputs.js';

const ROUNDS = 40;
const KEYS = ['exchange:ex-1', 'subagent:sa-1'];
const DEADLINES = { '0:0': 9000, '0:1': 12_000 };
if (process.env.CI || (await postgresReachable())) {
  describe('postgres wait races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    const schema = twoStoresOnOneSchema('sb_waits', (first, second) => {
      a = first;
      b = second;
    });
    // The wake keys themselves, which no port shows once a run is running again.
    const db = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
    beforeAll(() => db.connect());
    afterAll(() => db.end());

    /** A run of gw-1 on a new session (its lease live for `leaseTtlMs`) that committed step 0, its waiting calls. */
    async function steppedRun(round: number, leaseTtlMs: number, withStep = true) {
      const run = await startedRun(a, 'wait-race', round, leaseTtlMs);
      if (withStep) await a.steps.record(firstStep(run, 'sessions_wait', 1200), 1500);
      return run;
    }

    const waitOf = (run: { sessionKey: string; runId: string; epoch: number }) => ({
      runId: run.runId,
      sessionKey: run.sessionKey,
      epoch: run.epoch,
      until: 9000,
      keys: KEYS,
      deadlines: DEADLINES,
    });

    /** A run suspended in its wait, its lease let go. */
    async function waitingRun(round: number) {
      const run = await steppedRun(round, 30_000);
      await a.runs.suspend(waitOf(run), 2000);
      return run;
    }

    const waitsOf = async (runId: string) => (await a.runs.waiting()).filter((wait) => wait.runId === runId);
    const eventsOf = async (runId: string) => a.events.list({ runId });
    const wakeKeys = async (runId: string) =>
      (await db.query<{ wake_keys: string | null }>('SELECT wake_keys FROM runs WHERE id = $1', [runId])).rows[0]?.wake_keys;

    /** The run resumed by gw-2 finishes, so that no later round's sweep finds it running. */
    async function finish(run: { sessionKey: string; runId: string; inputId: string }, epoch: number) {
      await a.runs.commit(succeededCommit({ runId: run.runId, sessionKey: run.sessionKey, epoch, consumedInputIds: [run.inputId] }), 4000);
    }

    it('two gateways waking one waiting run: exactly one is answered its session', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await waitingRun(round);
        const woken = await Promise.all([a.runs.wake(run.runId), b.runs.wake(run.runId)]);
        expect(woken.filter((key) => key !== undefined)).toEqual([run.sessionKey]);
        expect(await waitsOf(run.runId)).toEqual([]);
        expect(await a.runs.get(run.runId)).toMatchObject({ status: 'suspended', waitingUntil: null });
        // The one woken session's lane resumes it.
        const back = await a.runs.resume({ runId: run.runId, sessionKey: run.sessionKey, owner: 'gw-2', leaseTtlMs: 30_000 }, 3000);
        if (typeof back === 'string') throw new Error(`the woken run did not resume: ${back}`);
        expect(back.run).toMatchObject({ status: 'running', attempt: 2 });
        await finish(run, back.epoch);
      }
    });

    it('a suspend racing a takeover of the expired run: the run waits, or the takeover recovered it and the suspend is refused', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        // Half the runs committed a step (a takeover suspends them), half none (a takeover interrupts them).
        const stepped = round % 2 === 0;
        const run = await steppedRun(round, -1000, stepped);
        // The suspend starts up to 3 ms after the sweep, so that both orders are taken across the rounds (each round's
        // checks hold whichever is taken).
        const late = new Promise<void>((resolve) => setTimeout(resolve, Math.floor(round / 2) % 4));
        const [suspended, report] = await Promise.all([
          settle(late.then(() => a.runs.suspend(waitOf(run), 2000))),
          b.runs.recoverOrphans(takeover('gw-2'), 2000),
        ]);
        const after = await a.runs.get(run.runId);
        const ended = (await eventsOf(run.runId)).filter((event) => event.type === 'run.suspended' || event.type === 'run.interrupted');
        // Never both: one run.suspended or run.interrupted, by whichever won.
        expect(ended).toHaveLength(1);
        if (suspended.ok) {
          expect(report).toMatchObject({ interruptedRuns: [], suspendedRuns: [], requeuedInputs: [] });
          expect(after).toMatchObject({ status: 'suspended', waitingUntil: 9000, errorCode: null, attempt: 1 });
          expect(await waitsOf(run.runId)).toEqual([
            { runId: run.runId, sessionKey: run.sessionKey, until: 9000, keys: KEYS, owner: 'gw-1' },
          ]);
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
          expect(ended[0]).toMatchObject({ type: 'run.suspended', payload: { waiting: true, until: 9000, keys: KEYS } });
          // Its wait ends as any other's: it is woken, resumed and finished.
          expect(await b.runs.wake(run.runId)).toBe(run.sessionKey);
          const back = await b.runs.resume({ runId: run.runId, sessionKey: run.sessionKey, owner: 'gw-2', leaseTtlMs: 30_000 }, 3000);
          if (typeof back === 'string') throw new Error(`the woken run did not resume: ${back}`);
          expect(back.waitDeadlines).toEqual(DEADLINES);
          await finish(run, back.epoch);
        } else {
          expect(suspended.code).toBe('LEASE_LOST');
          expect(after?.waitingUntil).toBeNull();
          expect(await waitsOf(run.runId)).toEqual([]);
          expect(await wakeKeys(run.runId)).toBeNull();
          if (stepped) {
            expect(report).toMatchObject({ suspendedRuns: [run.runId], interruptedRuns: [] });
            expect(after).toMatchObject({ status: 'suspended', errorCode: 'INTERRUPTED', errorMessage: 'taken over from gw-1' });
            expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
            expect(ended[0]).toMatchObject({ type: 'run.suspended', payload: { recoveredBy: 'gw-2', committedSteps: 1 } });
            expect(ended[0]?.payload).not.toHaveProperty('waiting');
            // Not a wait: the woken-wait path does not touch it, and the lane resumes it at once.
            expect(await a.runs.wake(run.runId)).toBeUndefined();
            const back = await b.runs.resume({ runId: run.runId, sessionKey: run.sessionKey, owner: 'gw-2', leaseTtlMs: 30_000 }, 3000);
            if (typeof back === 'string') throw new Error(`the recovered run did not resume: ${back}`);
            expect(back.waitDeadlines).toEqual({});
            await finish(run, back.epoch);
          } else {
            expect(report).toMatchObject({ suspendedRuns: [], interruptedRuns: [run.runId] });
            expect(after).toMatchObject({ status: 'interrupted', errorCode: 'INTERRUPTED' });
            expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: null, attempts: 1 });
            expect(ended[0]).toMatchObject({ type: 'run.interrupted' });
          }
        }
      }
    });

    it('a resume racing the wake: it answers waiting (and resumes once woken) or resumes after the wake; never a resumed run still waiting', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await waitingRun(round);
        const resume = (store: Store) =>
          store.runs.resume({ runId: run.runId, sessionKey: run.sessionKey, owner: 'gw-2', leaseTtlMs: 30_000 }, 3000);
        // One of the two starts up to 3 ms after the other (the wake in half the rounds, the resume in the others), so
        // that both orders are taken across the rounds.
        const late = () => new Promise<void>((resolve) => setTimeout(resolve, round % 4));
        const resumeFirst = round % 8 < 4;
        const [first, woken] = await Promise.all([
          resumeFirst ? resume(a) : late().then(() => resume(a)),
          resumeFirst ? late().then(() => b.runs.wake(run.runId)) : b.runs.wake(run.runId),
        ]);
        // A resume never gets ahead of the wake: the wake always finds the run still waiting.
        expect(woken).toBe(run.sessionKey);
        let back = first;
        if (first === 'waiting') {
          // The resume came first and wrote nothing; the woken session's lane resumes the run now.
          expect(await a.leases.get(run.sessionKey)).toBeUndefined();
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
          back = await resume(b);
        }
        if (typeof back === 'string') throw new Error(`the woken run did not resume: ${back}`);
        expect(back.run).toMatchObject({ status: 'running', attempt: 2, waitingUntil: null });
        expect(back.waitDeadlines).toEqual(DEADLINES);
        expect(await wakeKeys(run.runId)).toBeNull();
        expect(await waitsOf(run.runId)).toEqual([]);
        expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'claimed', runId: run.runId, attempts: 1 });
        expect((await eventsOf(run.runId)).filter((event) => event.type === 'run.resumed')).toHaveLength(1);
        await finish(run, back.epoch);
      }
    });
  });
} else {
  describe('postgres wait races', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
