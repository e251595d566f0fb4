/**
 * Durable steps' races on PostgreSQL (ports/steps.ts, ARCHITECTURE.md 4.7): two stores on one schema, one a run's owner
 * (late, but alive) committing a step while the other takes its expired run over, and two gateways resuming one
 * suspended run at once. Each race runs many times; after each, exactly one order holds and nothing is left half done.
 */
import { POSTGRES_URL, postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';
import { describe, expect, it } from 'vitest';
import { settle } from '../helpers/settle.js';
import { firstStep, startedRun, takeover, type RacedRun } from '../helpers/race-runs.js';
import type { Store } from '../../src/ports/index.js';
import { succeededCommit } from '../helpers/inputs.js';

const ROUNDS = 40;
if (process.env.CI || (await postgresReachable())) {
  describe('postgres step races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_steps', (first, second) => {
      a = first;
      b = second;
    });

    /** A run of gw-1 on a new session whose lease has already run out: every sweep may take it over. */
    const expiredRun = (round: number) => startedRun(a, 'step-race', round, -1000);
    const stepOf = (run: RacedRun) => firstStep(run, 'read_file', 1500);

    it("the owner's step racing a takeover: the step commits and the run is suspended, or the step is refused and the run interrupted", async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        // The step starts up to 3 ms after the sweep, so that both orders are taken across the rounds (each round's
        // checks hold whichever is taken).
        const late = new Promise<void>((resolve) => setTimeout(resolve, round % 4));
        const [recorded, report] = await Promise.all([
          settle(late.then(() => a.steps.record(stepOf(run), 2000))),
          b.runs.recoverOrphans(takeover('gw-2'), 2000),
        ]);
        const after = await a.runs.get(run.runId);
        const steps = await a.steps.list(run.runId);
        const events = (await a.events.list({ runId: run.runId })).map((event) => event.type);
        if (recorded.ok) {
          // The step went first: the takeover saw it and suspended the run, its input kept for the resume.
          expect(report).toMatchObject({ suspendedRuns: [run.runId], interruptedRuns: [] });
          expect(after).toMatchObject({ status: 'suspended', usage: { modelCalls: 1, steps: 1 } });
          expect(steps).toHaveLength(1);
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
          expect(events).toEqual(['run.started', 'run.step', 'run.suspended']);
        } else {
          // The takeover went first: the owner was fenced off before it wrote anything.
          expect(recorded.code).toBe('LEASE_LOST');
          expect(report).toMatchObject({ suspendedRuns: [], interruptedRuns: [run.runId] });
          expect(after).toMatchObject({ status: 'interrupted', usage: { modelCalls: 0, steps: 0 } });
          expect(steps).toEqual([]);
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: null, attempts: 1 });
          expect(events).toEqual(['run.started', 'run.interrupted']);
        }
      }
    });

    it('two gateways resuming one suspended run: one gets it, the other is answered leased (its lease live) or taken (expired)', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        await a.steps.record(stepOf(run), 1500);
        expect((await a.runs.recoverOrphans(takeover('gw-2'), 2000)).suspendedRuns).toEqual([run.runId]);
        // Half the rounds with a lease that runs out at once: the loser takes the lease too, and finds the run taken.
        const expires = round % 2 === 1;
        const leaseTtlMs = expires ? -1000 : 30_000;
        const resume = (store: Store, owner: string) =>
          store.runs.resume({ runId: run.runId, sessionKey: run.sessionKey, owner, leaseTtlMs }, 3000);
        const results = await Promise.all([resume(a, 'gw-2'), resume(b, 'gw-3')]);
        const won = results.filter((result) => typeof result !== 'string');
        const lost = results.filter((result) => typeof result === 'string');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect(lost[0]).toBe(expires ? 'taken' : 'leased');
        const winner = won[0]!;
        expect(winner.run).toMatchObject({ status: 'running', attempt: 2 });
        expect(await a.runs.get(run.runId)).toMatchObject({ status: 'running', attempt: 2, epoch: winner.epoch, owner: winner.run.owner });
        expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'claimed', runId: run.runId, attempts: 1 });
        expect((await a.events.list({ runId: run.runId })).filter((event) => event.type === 'run.resumed')).toHaveLength(1);
        // The loser's lease, if it took one, was undone with the rest of its resume.
        expect(await a.leases.get(run.sessionKey)).toMatchObject({ owner: winner.run.owner, epoch: winner.epoch });
        // The winner finishes the run, so that no later round's sweep finds it (its lease may have run out already).
        await a.runs.commit(
          succeededCommit({ runId: run.runId, sessionKey: run.sessionKey, epoch: winner.epoch, consumedInputIds: [run.inputId] }),
          4000,
        );
      }
    });
  });
} else {
  describe('postgres step races', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
