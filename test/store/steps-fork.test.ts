/**
 * RunStepStore.fork (`switchboard runs fork`, docs/delivery.md "Forking a run") on SQLite and, when a server answers,
 * PostgreSQL: what a fork copies (the history before the run, the kept steps, the inputs they read) and what it refuses,
 * writing nothing. A fork's run is a suspended run: RunStore.resume takes it up as it takes up one a crash cut.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForkRequest, NewStep, NewTranscriptEntry, Store } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { newInput, newRunId, succeededCommit } from '../helpers/inputs.js';

const S = 'agent:support:main';
const F = 'agent:support:fork:direct:f1';

/** A model answer that asked for one write_file: what a resume replays. */
const answer = (n: number) => ({
  content: [{ type: 'tool-call', toolCallId: `call-${n}`, toolName: 'write_file', input: { path: `step-${n}.txt` } }],
  finishReason: 'tool-calls',
});
const results = (n: number) => [{ toolCallId: `call-${n}`, toolName: 'write_file', output: `wrote step-${n}.txt` }];

const said = (role: NewTranscriptEntry['role'], content: string, runId: string | null = null): NewTranscriptEntry => ({
  role,
  content,
  provenance: null,
  inputId: null,
  runId,
});

function describeFork(name: string, open: () => Promise<Store>): void {
  describe(`steps store: fork (${name})`, () => {
    let store: Store;
    let ids = 0;

    beforeEach(async () => {
      store = await open();
      await store.sessions.ensure({ key: S, agentId: 'support' }, 1000);
    });
    afterEach(async () => {
      await store.close();
    });

    const forkOf = (fromRunId: string, step: number, more: Partial<ForkRequest> = {}): ForkRequest => ({
      fromRunId,
      step,
      sessionKey: F,
      runId: `fork-${process.pid}-${++ids}`,
      owner: 'gw-2',
      newId: () => `copy-${process.pid}-${++ids}`,
      ...more,
    });

    /** A run of gw-1 on S that took a new input (its text `text`), started at `at`. */
    async function startRun(text: string, at: number) {
      const { input } = await store.inputs.enqueue({ ...newInput(S), text }, at);
      const runId = newRunId();
      const started = await store.runs.start(
        { id: runId, sessionKey: S, agentId: 'support', owner: 'gw-1', leaseTtlMs: 30_000, model: 'scripted/x', inputIds: [input.id] },
        at,
      );
      if (typeof started === 'string') throw new Error(`run ${runId} did not start: ${started}`);
      return { runId, epoch: started.epoch, inputId: input.id };
    }

    const step = (run: { runId: string; epoch: number }, n: number, inputIds: string[]): NewStep => ({
      runId: run.runId,
      sessionKey: S,
      epoch: run.epoch,
      step: n,
      attempt: 1,
      model: 'scripted/x',
      response: answer(n),
      toolNames: ['write_file'],
      inputIds,
      usage: { inputTokens: 100 + n, outputTokens: 10, cachedInputTokens: 5 },
      request: { bytes: 1000, systemBytes: 300, toolBytes: 200 },
      startedAt: 3000 + n * 100,
    });

    /**
     * The history: an earlier run's exchange; then the source run with three settled steps (an input steered in before
     * step 1), which commits; then a later run. The fork sees only the first.
     */
    async function sessionWithRuns() {
      const earlier = await startRun('hello', 1000);
      await store.runs.commit(
        succeededCommit({
          runId: earlier.runId,
          sessionKey: S,
          epoch: earlier.epoch,
          consumedInputIds: [earlier.inputId],
          transcript: [said('user', 'hello', earlier.runId), said('assistant', 'hi there', earlier.runId)],
        }),
        1500,
      );
      const run = await startRun('write three files', 2000);
      await store.steps.record(step(run, 0, [run.inputId]), 3050);
      await store.steps.settle({ ...run, step: 0, results: results(0), toolCalls: [] }, 3060);
      const { input: steer } = await store.inputs.enqueue({ ...newInput(S, 'steer'), text: 'name them .md' }, 3070);
      expect(await store.runs.claimMore(run.runId, S, run.epoch, [steer.id], 3080)).toEqual([steer.id]);
      await store.steps.record(step(run, 1, [steer.id]), 3150);
      await store.steps.settle({ ...run, step: 1, results: results(1), toolCalls: [] }, 3160);
      await store.steps.record(step(run, 2, []), 3250);
      await store.steps.settle({ ...run, step: 2, results: results(2), toolCalls: [] }, 3260);
      await store.runs.commit(
        succeededCommit({
          runId: run.runId,
          sessionKey: S,
          epoch: run.epoch,
          consumedInputIds: [run.inputId, steer.id],
          transcript: [said('user', 'write three files', run.runId), said('assistant', 'done', run.runId)],
        }),
        4000,
      );
      const later = await startRun('thanks', 5000);
      await store.runs.commit(
        succeededCommit({
          runId: later.runId,
          sessionKey: S,
          epoch: later.epoch,
          consumedInputIds: [later.inputId],
          transcript: [said('user', 'thanks', later.runId)],
        }),
        5500,
      );
      return { run, steer };
    }

    it('fork: a new session with the history before the run, a suspended run holding the kept steps, and their inputs queued for it', async () => {
      const { run, steer } = await sessionWithRuns();
      const request = forkOf(run.runId, 2);
      const forked = await store.steps.fork(request, 9000);
      expect(forked).toMatchObject({ sessionKey: F, runId: request.runId });
      expect(forked.inputIds).toHaveLength(2);
      const [ownCopy, steerCopy] = forked.inputIds;

      expect(await store.sessions.get(F)).toMatchObject({
        agentId: 'support',
        parentKey: null,
        depth: 0,
        route: null,
        state: 'idle',
        createdAt: 9000,
      });
      // Only what the session held before the run: not the run's own entries, nor a later run's.
      const history = await store.transcript.list(F);
      expect(history.map((entry) => [entry.role, entry.content])).toEqual([
        ['user', 'hello'],
        ['assistant', 'hi there'],
      ]);
      expect(history[0]).toMatchObject({ sessionKey: F, createdAt: 1500 });

      expect(await store.runs.get(request.runId)).toMatchObject({
        sessionKey: F,
        agentId: 'support',
        status: 'suspended',
        owner: 'gw-2',
        model: 'scripted/x',
        attempt: 1,
        usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0 },
      });

      const source = await store.steps.list(run.runId);
      const copied = await store.steps.list(request.runId);
      expect(copied.map((kept) => kept.step)).toEqual([0, 1]);
      for (const [n, kept] of copied.entries()) {
        expect(kept).toMatchObject({
          runId: request.runId,
          sessionKey: F,
          attempt: 1,
          model: 'scripted/x',
          response: source[n].response,
          results: source[n].results,
          toolNames: ['write_file'],
          startedAt: source[n].startedAt,
          answeredAt: source[n].answeredAt,
          settledAt: source[n].settledAt,
          // The fork spent nothing on them: a resume folds them into its run's usage.
          usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 },
          request: { bytes: 0, systemBytes: 0, toolBytes: 0 },
        });
      }
      expect(copied[0].inputIds).toEqual([ownCopy]);
      expect(copied[1].inputIds).toEqual([steerCopy]);

      expect(await store.inputs.get(ownCopy)).toMatchObject({
        sessionKey: F,
        idempotencyKey: `fork:${request.runId}:${run.inputId}`,
        text: 'write three files',
        mode: 'followup',
        provenance: { kind: 'user' },
        status: 'queued',
        attempts: 0,
        runId: request.runId,
        note: null,
      });
      expect(await store.inputs.get(steerCopy)).toMatchObject({
        idempotencyKey: `fork:${request.runId}:${steer.id}`,
        text: 'name them .md',
        mode: 'steer',
        status: 'queued',
        runId: request.runId,
      });
      // The source is as it was.
      expect(await store.inputs.get(run.inputId)).toMatchObject({ sessionKey: S, status: 'consumed', runId: run.runId });
      expect((await store.steps.list(run.runId)).map((kept) => kept.usage.inputTokens)).toEqual([100, 101, 102]);

      const [event] = await store.events.list({ sessionKey: F, runId: request.runId });
      expect(event).toMatchObject({
        type: 'run.forked',
        payload: { fromRun: run.runId, fromSession: S, fromStep: 2, sessionKey: F },
      });
      expect(forked.event.seq).toBe(event.seq);

      // The session's lane plans a resume of it, and the resume claims both inputs, as after a crash.
      const queued = await store.inputs.listQueuedForPlan(F, 64);
      expect(queued.map((input) => [input.id, input.runId])).toEqual([
        [ownCopy, request.runId],
        [steerCopy, request.runId],
      ]);
      const resumed = await store.runs.resume({ runId: request.runId, sessionKey: F, owner: 'gw-2', leaseTtlMs: 30_000 }, 9100);
      if (typeof resumed === 'string') throw new Error(`the fork did not resume: ${resumed}`);
      expect(resumed.run).toMatchObject({ status: 'running', attempt: 2, errorMessage: null });
      expect(resumed.inputs.map((input) => input.id)).toEqual([ownCopy, steerCopy]);
    });

    it('fork: a run still suspended (it wrote no transcript) takes the history written by the time it started; --step 0 keeps no step', async () => {
      const earlier = await startRun('hello', 1000);
      await store.runs.commit(
        succeededCommit({
          runId: earlier.runId,
          sessionKey: S,
          epoch: earlier.epoch,
          consumedInputIds: [earlier.inputId],
          transcript: [said('user', 'hello', earlier.runId), said('assistant', 'hi there', earlier.runId)],
        }),
        1500,
      );
      const run = await startRun('write three files', 2000);
      await store.steps.record(step(run, 0, [run.inputId]), 3050);
      await store.runs.recoverOrphans({ recoverer: 'gw-1', scope: 'own', diagnostic: () => 'gateway restarted', maxRetries: 2 }, 4000);
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended' });

      const request = forkOf(run.runId, 0);
      const forked = await store.steps.fork(request, 9000);
      expect((await store.transcript.list(F)).map((entry) => entry.content)).toEqual(['hello', 'hi there']);
      expect(await store.steps.list(request.runId)).toEqual([]);
      expect(forked.inputIds).toHaveLength(1);
      expect(await store.inputs.get(forked.inputIds[0])).toMatchObject({
        text: 'write three files',
        status: 'queued',
        runId: request.runId,
      });
      // The source keeps its own input, still queued for its own resume.
      expect(await store.inputs.get(run.inputId)).toMatchObject({ sessionKey: S, status: 'queued', runId: run.runId });
    });

    it('fork: refused, writing nothing, at a step beyond the run, at a step past one without committed results, for a run with no step, and onto a taken key', async () => {
      const { run } = await sessionWithRuns();
      const refused = async (request: ForkRequest) => {
        const error = await store.steps.fork(request, 9000).then(
          () => undefined,
          (thrown: unknown) => thrown as { code?: string; message?: string },
        );
        expect(error, `fork of ${request.fromRunId} at ${request.step}`).toBeDefined();
        return error!;
      };

      expect(await refused(forkOf(run.runId, 4))).toMatchObject({
        code: 'INVALID_REQUEST',
        message: `run ${run.runId} has 3 committed step(s), 0 to 2 ("switchboard runs show ${run.runId}" lists them): fork it at --step 0 to 3`,
      });

      // A run cut while its step 1's tools ran: step 1 has no results, so the state after it is not known.
      const cut = await startRun('again', 6000);
      await store.steps.record(step(cut, 0, [cut.inputId]), 6100);
      await store.steps.settle({ ...cut, step: 0, results: results(0), toolCalls: [] }, 6110);
      await store.steps.record(step(cut, 1, []), 6200);
      expect(await refused(forkOf(cut.runId, 2))).toMatchObject({
        code: 'INVALID_REQUEST',
        message: `step 1 of run ${cut.runId} has no committed results (its tools were cut off before they answered), so the state after it is not known: fork it at --step 1 or lower, which asks the model again from that step`,
      });
      expect((await refused(forkOf(cut.runId, 3))).message).toContain('fork it at --step 0 to 1');

      const oneCall = await startRun('just answer', 7000);
      expect(await refused(forkOf(oneCall.runId, 0))).toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringContaining(`run ${oneCall.runId} committed no steps`),
      });
      expect(await refused(forkOf('no-such-run', 1))).toMatchObject({ code: 'RUN_NOT_FOUND' });
      expect(await refused(forkOf(run.runId, -1))).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('got -1') });

      // None of them wrote a thing.
      expect(await store.sessions.get(F)).toBeUndefined();
      expect(await store.events.list({ sessionKey: F })).toEqual([]);

      const first = forkOf(run.runId, 1);
      await store.steps.fork(first, 9000);
      const second = forkOf(run.runId, 1);
      expect(await refused(second)).toMatchObject({
        code: 'INVALID_REQUEST',
        message: `session "${F}" exists already; fork again (a new run id makes a new key)`,
      });
      expect(await store.runs.get(second.runId)).toBeUndefined();
      expect(await store.transcript.list(F)).toHaveLength(2);
    });
  });
}

describeFork('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));

if (process.env.CI || (await postgresReachable())) {
  const schemas: string[] = [];
  let counter = 0;
  describeFork('postgres', () => {
    const schema = `sb_fork_${process.pid}_${++counter}`;
    schemas.push(schema);
    return PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
  });
  afterAll(async () => {
    await dropSchemas(...schemas);
  });
} else {
  describe('steps store: fork (postgres)', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
