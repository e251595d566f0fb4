/**
 * Takeover races on PostgreSQL: two stores on one schema, one the run's owner (late, but alive) and one a gateway
 * taking over runs whose leases expired, or two gateways taking over at once. Each race runs many times; after
 * each, exactly one side has won and nothing is left half done.
 */
import { POSTGRES_URL, postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';
import { describe, expect, it } from 'vitest';
import { settle } from '../helpers/settle.js';
import { startedRun, takeover } from '../helpers/race-runs.js';
import type { Store } from '../../src/ports/index.js';
import { newInput as input, newRunId, succeededCommit, usage } from '../helpers/inputs.js';

const ROUNDS = 40;

let counter = 0;
if (process.env.CI || (await postgresReachable())) {
  describe('postgres takeover races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_takeover', (first, second) => {
      a = first;
      b = second;
    });

    /** A run of gw-1 on a new session whose lease has already run out: every sweep may take it over. */
    const expiredRun = (round: number) => startedRun(a, 'race', round, -1000);

    it('a commit racing a start elsewhere for an input accepted there: the commit sees the input, or the start takes the lease', async () => {
      let seen = 0;
      let startedThere = 0;
      // The window is narrow: more rounds than the others, so that a read outside the lease's row lock is caught.
      const rounds = ROUNDS * 4;
      for (let round = 0; round < rounds; round++) {
        const sessionKey = `agent:w:commit-race-${round}-${++counter}`;
        await a.sessions.ensure({ key: sessionKey, agentId: 'w' }, 1000);
        const { input: first } = await a.inputs.enqueue(input(sessionKey), 1000);
        const runId = newRunId();
        const started = await a.runs.start(
          { id: runId, sessionKey, agentId: 'w', owner: 'gw-1', leaseTtlMs: 60_000, model: 'm', inputIds: [first.id] },
          1000,
        );
        if (typeof started === 'string') throw new Error(`the run did not start: ${started}`);
        const commit = a.runs.commit(succeededCommit({ runId, sessionKey, epoch: started.epoch, consumedInputIds: [first.id] }), 2000);
        // The other gateway accepts an input for the session, then tries to run it.
        const elsewhere = (async () => {
          const { input: next } = await b.inputs.enqueue(input(sessionKey), 2000);
          return b.runs.start(
            {
              id: newRunId(),
              sessionKey,
              agentId: 'w',
              owner: 'gw-2',
              leaseTtlMs: 60_000,
              model: 'm',
              inputIds: [next.id],
            },
            2000,
          );
        })();
        const [committed, there] = await Promise.all([commit, elsewhere]);
        // Never both "nothing queued" here and "leased" there: that input would wait out the lease.
        expect(committed.queued || there !== 'leased').toBe(true);
        if (committed.queued) seen += 1;
        if (there !== 'leased') startedThere += 1;
      }
      // Both sides of the race were taken.
      expect(seen + startedThere).toBeGreaterThanOrEqual(rounds);
    });

    it('two gateways taking over one expired run: one of them does, once', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        const [first, second] = await Promise.all([
          a.runs.recoverOrphans(takeover('gw-2'), 2000),
          b.runs.recoverOrphans(takeover('gw-3'), 2000),
        ]);
        const listed = [...first.interruptedRuns, ...second.interruptedRuns].filter((id) => id === run.runId);
        expect(listed).toHaveLength(1);
        const events = (await a.events.list({ runId: run.runId })).filter((event) => event.type === 'run.interrupted');
        expect(events).toHaveLength(1);
        expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: null, attempts: 1 });
      }
    });

    it("the owner's late commit racing a takeover: the commit or the takeover, never both", async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        const [committed, report] = await Promise.all([
          settle(
            a.runs.commit(
              {
                runId: run.runId,
                sessionKey: run.sessionKey,
                epoch: run.epoch,
                outcome: { status: 'succeeded', usage, preambleChars: 1, promptChars: 1, finalText: 'done' },
                transcript: [{ role: 'assistant', content: 'done', provenance: null, inputId: null, runId: run.runId }],
                consumedInputIds: [run.inputId],
                outbox: [],
                events: [],
              },
              2000,
            ),
          ),
          b.runs.recoverOrphans(takeover('gw-2'), 2000),
        ]);
        const takenOver = report.interruptedRuns.includes(run.runId);
        const after = await a.runs.get(run.runId);
        const transcript = await a.transcript.list(run.sessionKey);
        if (committed.ok) {
          expect(takenOver).toBe(false);
          expect(after!.status).toBe('succeeded');
          expect(transcript).toHaveLength(1);
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'consumed' });
        } else {
          expect(committed.code).toBe('LEASE_LOST');
          expect(takenOver).toBe(true);
          expect(after!.status).toBe('interrupted');
          expect(transcript).toEqual([]);
          expect(await a.inputs.get(run.inputId)).toMatchObject({ status: 'queued' });
        }
      }
    });

    it("the owner's late renewal racing a takeover: the lease is renewed and the run kept, or the run is taken over and the renewal refused", async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        const [renewed, report] = await Promise.all([
          a.leases.renew(run.sessionKey, 'gw-1', run.epoch, 60_000),
          b.runs.recoverOrphans(takeover('gw-2'), 2000),
        ]);
        const takenOver = report.interruptedRuns.includes(run.runId);
        expect(renewed).toBe(!takenOver);
        expect((await a.runs.get(run.runId))!.status).toBe(takenOver ? 'interrupted' : 'running');
      }
    });

    it('the owner steering racing a takeover: a steered input is queued again or never taken, never left with the interrupted run', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const run = await expiredRun(round);
        const { input: steer } = await a.inputs.enqueue(input(run.sessionKey, 'steer'), 1500);
        const [claimed, report] = await Promise.all([
          a.runs.claimMore(run.runId, run.sessionKey, run.epoch, [steer.id], 2000),
          b.runs.recoverOrphans(takeover('gw-2'), 2000),
        ]);
        expect(report.interruptedRuns).toEqual([run.runId]);
        const after = await a.inputs.get(steer.id);
        expect(after).toMatchObject({ status: 'queued', runId: null });
        if (claimed.length === 1) expect(report.requeuedInputs).toContain(steer.id);
      }
    });
  });
} else {
  describe('postgres takeover races', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
