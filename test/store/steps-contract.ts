/**
 * The step store's contract (src/ports/steps.ts) and the suspend/resume it gives runs (RunStore.recoverOrphans and
 * RunStore.resume), run unchanged on SQLite and PostgreSQL: a step is committed, with its usage on the run's row and a
 * `run.step` event, only while its run is `running` at the writer's epoch; a run a crash cut after a step is suspended
 * with its inputs still naming it, and resumes under its own id, one attempt more.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewStep, OrphanRecovery, ResumedRun, RunWait, Store, WaitDeadlines } from '../../src/ports/index.js';
import { newInput, newRunId, succeededCommit } from '../helpers/inputs.js';

const S = 'agent:support:main';

/** gw-1's own runs, recovered as a restarted gateway does. */
const own = (diagnostic: string, maxRetries = 2): OrphanRecovery => ({
  recoverer: 'gw-1',
  scope: 'own',
  diagnostic: () => diagnostic,
  maxRetries,
});

/** A model answer as a provider gives it: what a resume replays. */
const answer = (tool: string) => ({
  content: [
    { type: 'text', text: 'reading first' },
    { type: 'tool-call', toolCallId: `call-${tool}`, toolName: tool, input: { path: 'a.md', lines: [1, 2] } },
  ],
  finishReason: 'tool-calls',
  response: { id: 'resp-1', modelId: 'scripted/x', headers: { 'x-request-id': 'r-1' } },
});

export function describeStepsContract(name: string, open: () => Promise<Store>): void {
  describe(`steps store contract: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await open();
      await store.sessions.ensure({ key: S, agentId: 'support' }, 1000);
    });
    afterEach(async () => {
      await store.close();
    });

    /** A queued input on `sessionKey` and a run of gw-1 that claimed it. */
    async function startRun(sessionKey = S) {
      const { input } = await store.inputs.enqueue(newInput(sessionKey), 1000);
      const runId = newRunId();
      const started = await store.runs.start(
        { id: runId, sessionKey, agentId: 'support', owner: 'gw-1', leaseTtlMs: 30_000, model: 'scripted/x', inputIds: [input.id] },
        2000,
      );
      if (typeof started === 'string') throw new Error(`run ${runId} did not start: ${started}`);
      return { runId, sessionKey, epoch: started.epoch, inputId: input.id };
    }

    /** Step `step` of the run at `epoch`, asking for one read_file. */
    const step = (run: { runId: string; sessionKey: string; epoch: number; inputId: string }, n: number, more: Partial<NewStep> = {}) =>
      ({
        runId: run.runId,
        sessionKey: run.sessionKey,
        epoch: run.epoch,
        step: n,
        attempt: 1,
        model: 'scripted/x',
        response: answer('read_file'),
        toolNames: ['read_file'],
        inputIds: n === 0 ? [run.inputId] : [],
        usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 0 },
        request: { bytes: 100, systemBytes: 40, toolBytes: 20 },
        startedAt: 2100 + n * 100,
        ...more,
      }) satisfies NewStep;

    async function resume(runId: string, owner = 'gw-2', sessionKey = S) {
      return store.runs.resume({ runId, sessionKey, owner, leaseTtlMs: 30_000 }, 5000);
    }
    async function resumed(runId: string, owner = 'gw-2'): Promise<ResumedRun> {
      const answered = await resume(runId, owner);
      if (typeof answered === 'string') throw new Error(`run ${runId} did not resume: ${answered}`);
      return answered;
    }

    it('record then list round-trips every field; each step adds its usage and request sizes to the run', async () => {
      const run = await startRun();
      const first = step(run, 0, {
        response: answer('write_file'),
        toolNames: ['read_file', 'write_file'],
        usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 64 },
        request: { bytes: 4000, systemBytes: 1000, toolBytes: 500 },
        startedAt: 2100,
      });
      await store.steps.record(first, 2350);
      const { epoch: _epoch, ...stored } = first;
      expect(await store.steps.list(run.runId)).toEqual([{ ...stored, results: null, answeredAt: 2350, settledAt: null }]);
      expect(await store.runs.get(run.runId)).toMatchObject({
        status: 'running',
        usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 64, modelCalls: 1, steps: 1 },
        request: { bytes: 4000, systemBytes: 1000, toolBytes: 500 },
      });
      await store.steps.record(
        step(run, 1, {
          inputIds: ['in-steered'],
          usage: { inputTokens: 200, outputTokens: 5, cachedInputTokens: 100 },
          request: { bytes: 5000, systemBytes: 1000, toolBytes: 500 },
        }),
        2500,
      );
      expect((await store.steps.list(run.runId)).map((s) => [s.step, s.inputIds, s.answeredAt])).toEqual([
        [0, [run.inputId], 2350],
        [1, ['in-steered'], 2500],
      ]);
      expect(await store.runs.get(run.runId)).toMatchObject({
        usage: { inputTokens: 320, outputTokens: 35, cachedInputTokens: 164, modelCalls: 2, steps: 2 },
        request: { bytes: 9000, systemBytes: 2000, toolBytes: 1000 },
      });
      expect(await store.steps.list('run-without-steps')).toEqual([]);
    });

    it('record journals a run.step event with the step, attempt, tools and usage, and returns it as stored', async () => {
      const run = await startRun();
      const event = await store.steps.record(
        step(run, 0, {
          toolNames: ['read_file', 'exec'],
          usage: { inputTokens: 7, outputTokens: 3, cachedInputTokens: 0 },
          startedAt: 2100,
        }),
        2400,
      );
      expect(event).toMatchObject({
        type: 'run.step',
        sessionKey: S,
        runId: run.runId,
        createdAt: 2400,
        payload: { step: 0, attempt: 1, model: 'scripted/x', tools: ['read_file', 'exec'], inputTokens: 7, outputTokens: 3, ms: 300 },
      });
      const journaled = (await store.events.list({ runId: run.runId })).filter((e) => e.type === 'run.step');
      expect(journaled).toEqual([event]);
    });

    it('record and settle at a stale epoch throw LEASE_LOST and write nothing', async () => {
      const run = await startRun();
      const stale = { ...run, epoch: run.epoch + 1 };
      await expect(store.steps.record(step(stale, 0), 2200)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.steps.list(run.runId)).toEqual([]);
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'running', epoch: run.epoch, usage: { modelCalls: 0, steps: 0 } });
      expect((await store.events.list({ runId: run.runId })).map((e) => e.type)).toEqual(['run.started']);

      await store.steps.record(step(run, 0), 2200);
      const call = {
        key: `tc:${run.inputId}:0:0:write_file:aaaa`,
        scope: run.inputId,
        step: 0,
        index: 0,
        tool: 'write_file',
        argsHash: 'aaaa',
        sessionKey: S,
        runId: run.runId,
      };
      await expect(
        store.steps.settle(
          {
            runId: run.runId,
            epoch: run.epoch - 1,
            step: 0,
            results: [{ toolCallId: 'c1', toolName: 'write_file', output: 'ok' }],
            toolCalls: [{ call, result: 'ok', rerun: false }],
          },
          2300,
        ),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.steps.list(run.runId)).toMatchObject([{ step: 0, results: null, settledAt: null }]);
      expect(await store.toolCalls.get(call.key)).toBeUndefined();
      // The refused settle left the run's row as it was (its epoch is not written back).
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'running', epoch: run.epoch });
    });

    it('record and settle on a run that is no longer running (committed, suspended, interrupted, absent) throw LEASE_LOST and write nothing', async () => {
      // Committed.
      const done = await startRun();
      await store.runs.commit(succeededCommit({ ...done, consumedInputIds: [done.inputId] }), 2200);
      await expect(store.steps.record(step(done, 0), 2300)).rejects.toMatchObject({
        code: 'LEASE_LOST',
        message: `run ${done.runId} is no longer running at epoch ${done.epoch} (recovered, resumed or taken over elsewhere); its step was not committed`,
      });
      expect(await store.steps.list(done.runId)).toEqual([]);
      expect(await store.runs.get(done.runId)).toMatchObject({ status: 'succeeded', usage: { modelCalls: 1, steps: 1 } });

      // Suspended by a recovery after its first step: the owner's late settle and next step are refused.
      const cut = await startRun();
      await store.steps.record(step(cut, 0), 2300);
      expect((await store.runs.recoverOrphans(own('gateway restarted'), 4000)).suspendedRuns).toEqual([cut.runId]);
      await expect(
        store.steps.settle(
          {
            runId: cut.runId,
            epoch: cut.epoch,
            step: 0,
            results: [{ toolCallId: 'c1', toolName: 'read_file', output: 'x' }],
            toolCalls: [],
          },
          4100,
        ),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' });
      await expect(store.steps.record(step(cut, 1), 4100)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.steps.list(cut.runId)).toMatchObject([{ step: 0, results: null }]);
      expect(await store.runs.get(cut.runId)).toMatchObject({ status: 'suspended', usage: { modelCalls: 1, steps: 1 } });

      // Interrupted before any step.
      const T = 'agent:support:other';
      await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
      const lost = await startRun(T);
      await store.runs.recoverOrphans(own('gateway restarted'), 4200);
      expect(await store.runs.get(lost.runId)).toMatchObject({ status: 'interrupted' });
      await expect(store.steps.record(step(lost, 0), 4300)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.steps.list(lost.runId)).toEqual([]);

      await expect(store.steps.record(step({ ...lost, runId: 'run-not-there' }, 0), 4300)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.steps.list('run-not-there')).toEqual([]);
      expect((await store.events.list({})).filter((e) => e.type === 'run.step').map((e) => e.runId)).toEqual([cut.runId]);
    });

    it("settle writes a step's results once, and settles the ledger rows it is given", async () => {
      const run = await startRun();
      await store.steps.record(step(run, 0, { toolNames: ['write_file', 'read_file'] }), 2200);
      const call = {
        key: `tc:${run.inputId}:0:0:write_file:aaaa`,
        scope: run.inputId,
        step: 0,
        index: 0,
        tool: 'write_file',
        argsHash: 'aaaa',
        sessionKey: S,
        runId: run.runId,
      };
      // The effect outside the store recorded its intent first, as the tool does.
      await store.toolCalls.begin(call, { path: 'a.md', before: 'absent', after: 'h1' }, 2250);
      const results = [
        { toolCallId: 'c1', toolName: 'write_file', output: { written: 'a.md', bytes: 12 } },
        { toolCallId: 'c2', toolName: 'read_file', error: 'ENOENT: b.md does not exist' },
      ];
      await store.steps.settle(
        { runId: run.runId, epoch: run.epoch, step: 0, results, toolCalls: [{ call, result: { written: 'a.md' }, rerun: false }] },
        2300,
      );
      expect(await store.steps.list(run.runId)).toMatchObject([{ step: 0, results, answeredAt: 2200, settledAt: 2300 }]);
      expect(await store.toolCalls.get(call.key)).toMatchObject({
        state: 'completed',
        result: { written: 'a.md' },
        calls: 1,
        runId: run.runId,
        updatedAt: 2300,
      });
      // A second settle of the step (a retry after an answer that was lost) keeps the first results.
      await store.steps.settle(
        {
          runId: run.runId,
          epoch: run.epoch,
          step: 0,
          results: [{ toolCallId: 'c1', toolName: 'write_file', output: 'other' }],
          toolCalls: [],
        },
        2400,
      );
      expect(await store.steps.list(run.runId)).toMatchObject([{ step: 0, results, settledAt: 2300 }]);
      // Settling writes no usage: the run counts the one model call.
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'running', epoch: run.epoch, usage: { modelCalls: 1, steps: 1 } });
    });

    it('recoverOrphans suspends a run that committed a step, keeping its inputs for it; a run without steps is interrupted as before', async () => {
      const cut = await startRun();
      await store.steps.record(step(cut, 0), 2200);
      const T = 'agent:support:other';
      await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
      const plain = await startRun(T);
      const report = await store.runs.recoverOrphans(own('gateway restarted'), 4000);
      expect({ ...report, sessionKeys: [...report.sessionKeys].sort() }).toEqual({
        interruptedRuns: [plain.runId],
        suspendedRuns: [cut.runId],
        requeuedInputs: expect.arrayContaining([cut.inputId, plain.inputId]),
        droppedInputs: [],
        sessionKeys: [S, T].sort(),
      });
      expect(report.requeuedInputs).toHaveLength(2);

      expect(await store.runs.get(cut.runId)).toMatchObject({
        status: 'suspended',
        attempt: 1,
        endedAt: 4000,
        errorCode: 'INTERRUPTED',
        errorMessage: 'gateway restarted',
      });
      // The attempt committed a step: its inputs start their count again, and still name the run.
      expect(await store.inputs.get(cut.inputId)).toMatchObject({
        status: 'queued',
        runId: cut.runId,
        attempts: 0,
        // The note the model read stays: the resumed run reads what the cut one read.
        note: null,
      });
      expect(await store.sessions.get(S)).toMatchObject({ state: 'idle' });
      expect(await store.leases.get(S)).toBeUndefined();
      const suspended = (await store.events.list({ runId: cut.runId })).filter((e) => e.type === 'run.suspended');
      expect(suspended.map((e) => e.payload)).toEqual([
        {
          diagnostic: 'gateway restarted',
          owner: 'gw-1',
          recoveredBy: 'gw-1',
          inputIds: [cut.inputId],
          attempt: 1,
          committedSteps: 1,
        },
      ]);
      expect((await store.events.list({ runId: cut.runId })).some((e) => e.type === 'run.interrupted')).toBe(false);

      expect(await store.runs.get(plain.runId)).toMatchObject({ status: 'interrupted', errorMessage: 'gateway restarted' });
      expect(await store.inputs.get(plain.inputId)).toMatchObject({ status: 'queued', runId: null, attempts: 1 });
      expect((await store.events.list({ runId: plain.runId })).filter((e) => e.type === 'run.suspended')).toEqual([]);
      expect(await store.runs.list({ status: 'suspended' })).toMatchObject([{ id: cut.runId }]);
    });

    it("resume claims the suspended run's inputs again under its own id, attempt 2 at a new epoch; a second resume answers taken", async () => {
      const run = await startRun();
      await store.steps.record(step(run, 0), 2200);
      await store.runs.recoverOrphans(own('gateway restarted'), 4000);

      const back = await resumed(run.runId, 'gw-2');
      expect(back.epoch).toBeGreaterThan(run.epoch);
      expect(back.run).toMatchObject({
        id: run.runId,
        status: 'running',
        attempt: 2,
        owner: 'gw-2',
        epoch: back.epoch,
        endedAt: null,
        errorCode: null,
        errorMessage: null,
        usage: { modelCalls: 1, steps: 1 },
      });
      expect(back.inputs).toMatchObject([{ id: run.inputId, status: 'claimed', runId: run.runId, attempts: 1 }]);
      expect(back.session).toMatchObject({ key: S, state: 'running' });
      expect(back.events).toMatchObject([
        { type: 'run.resumed', runId: run.runId, payload: { attempt: 2, owner: 'gw-2', inputIds: [run.inputId] } },
      ]);
      expect((await store.events.list({ runId: run.runId })).filter((e) => e.type === 'run.resumed')).toEqual(back.events);
      expect(await store.runs.get(run.runId)).toEqual(back.run);
      expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-2', epoch: back.epoch });

      expect(await resume(run.runId, 'gw-2')).toBe('taken');
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'running', attempt: 2, epoch: back.epoch });

      // The cut attempt's owner is fenced off; the resumed attempt writes its next step and commits.
      await expect(store.steps.record(step(run, 1), 5100)).rejects.toMatchObject({ code: 'LEASE_LOST' });
      const again = { ...run, epoch: back.epoch };
      await store.steps.record(step(again, 1, { attempt: 2 }), 5200);
      expect((await store.steps.list(run.runId)).map((s) => [s.step, s.attempt])).toEqual([
        [0, 1],
        [1, 2],
      ]);
      const committed = await store.runs.commit(succeededCommit({ ...again, consumedInputIds: [run.inputId] }), 5300);
      expect(committed.run).toMatchObject({ id: run.runId, status: 'succeeded', attempt: 2 });
      expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'consumed' });
      expect(await resume(run.runId)).toBe('taken');
      // A run that was never suspended is not resumed either.
      expect(await resume('run-not-there')).toBe('taken');
    });

    it('resume while another owner holds the lease answers leased and writes nothing', async () => {
      const run = await startRun();
      await store.steps.record(step(run, 0), 2200);
      await store.runs.recoverOrphans(own('gateway restarted'), 4000);
      const held = await store.leases.acquire(S, 'gw-3', 30_000);
      expect(held).toBeDefined();
      expect(await resume(run.runId, 'gw-2')).toBe('leased');
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended', attempt: 1, epoch: run.epoch });
      expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
      expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-3', epoch: held!.epoch });
      expect((await store.events.list({ runId: run.runId })).some((e) => e.type === 'run.resumed')).toBe(false);
      // Once it is let go, the run resumes.
      await store.leases.release(S, 'gw-3', held!.epoch);
      expect((await resumed(run.runId, 'gw-2')).run).toMatchObject({ status: 'running', attempt: 2 });
    });

    it('a resumed attempt that commits no step counts against maxRetries: suspended while retries last, then interrupted and its inputs dropped', async () => {
      const run = await startRun();
      await store.steps.record(step(run, 0), 2200);
      const maxRetries = 1;
      await store.runs.recoverOrphans(own('crash 1', maxRetries), 3000);
      expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });

      // Attempt 2 commits nothing: it stays suspended (one retry left), its inputs' count not reset.
      const second = await resumed(run.runId, 'gw-1');
      expect(second.inputs).toMatchObject([{ attempts: 1 }]);
      const report2 = await store.runs.recoverOrphans(own('crash 2', maxRetries), 6000);
      expect(report2).toMatchObject({ suspendedRuns: [run.runId], interruptedRuns: [], requeuedInputs: [run.inputId] });
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended', attempt: 2 });
      expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 1 });

      // Attempt 3 commits nothing either: its inputs are over maxRetries, so the run is interrupted and they are dropped.
      const third = await resumed(run.runId, 'gw-1');
      expect(third.run.attempt).toBe(3);
      expect(third.inputs).toMatchObject([{ attempts: 2 }]);
      const report3 = await store.runs.recoverOrphans(own('crash 3', maxRetries), 7000);
      expect(report3).toEqual({
        interruptedRuns: [run.runId],
        suspendedRuns: [],
        requeuedInputs: [],
        droppedInputs: [run.inputId],
        sessionKeys: [S],
      });
      expect(await store.runs.get(run.runId)).toMatchObject({ status: 'interrupted', attempt: 3, errorMessage: 'crash 3' });
      expect(await store.inputs.get(run.inputId)).toMatchObject({
        status: 'dropped',
        runId: run.runId,
        attempts: 2,
        note: 'dropped after 2 interrupted attempts (recovery.retryInterrupted = 1)',
      });
      expect((await store.events.list({ runId: run.runId })).map((e) => e.type)).toEqual([
        'run.started',
        'run.step',
        'run.suspended',
        'run.resumed',
        'run.suspended',
        'run.resumed',
        'run.interrupted',
      ]);
      expect(await resume(run.runId, 'gw-1')).toBe('taken');
    });

    it('a resumed attempt that commits a step made progress: recovered again, its inputs start their count again', async () => {
      const run = await startRun();
      await store.steps.record(step(run, 0), 2200);
      await store.runs.recoverOrphans(own('crash 1', 1), 3000);
      const second = await resumed(run.runId, 'gw-1');
      await store.steps.record(step({ ...run, epoch: second.epoch }, 1, { attempt: 2 }), 5100);
      const report = await store.runs.recoverOrphans(own('crash 2', 1), 6000);
      expect(report.suspendedRuns).toEqual([run.runId]);
      expect(await store.inputs.get(run.inputId)).toMatchObject({
        status: 'queued',
        runId: run.runId,
        attempts: 0,
        // The note the model read stays: the resumed run reads what the cut one read.
        note: null,
      });
      const suspended = (await store.events.list({ runId: run.runId })).filter((e) => e.type === 'run.suspended');
      expect(suspended.at(-1)?.payload).toMatchObject({ attempt: 2, committedSteps: 2 });
    });

    describe('durable waits (RunStore.suspend, wake, waiting; resume answers waiting)', () => {
      const KEYS = ['exchange:ex-1', 'subagent:sa-1'];
      /** Two calls of step 0 waiting, on a reply and on a sub-agent: the run wakes at the first's deadline. */
      const DEADLINES = { '0:0': 9000, '0:1': 12_000 };

      /** The wait a run at `epoch` suspends in. */
      const waitOf = (
        run: { runId: string; sessionKey: string; epoch: number },
        more: Partial<RunWait & { deadlines: WaitDeadlines }> = {},
      ) => ({
        runId: run.runId,
        sessionKey: run.sessionKey,
        epoch: run.epoch,
        until: 9000,
        keys: KEYS,
        deadlines: DEADLINES,
        ...more,
      });

      /** A run of gw-1 whose step 0 made the waiting calls, suspended in their wait at 3000. */
      async function waitingRun(sessionKey = S) {
        const run = await startRun(sessionKey);
        await store.steps.record(step(run, 0), 2200);
        await store.runs.suspend(waitOf(run), 3000);
        return run;
      }

      const expired: OrphanRecovery = {
        recoverer: 'gw-2',
        scope: 'expired',
        diagnostic: (owner) => `taken over from ${owner}`,
        maxRetries: 2,
      };

      it('suspend lets the run go into its wait: suspended until its first deadline, inputs queued for it, lease let go, session idle, run.suspended; waiting() lists it', async () => {
        const run = await startRun();
        await store.steps.record(step(run, 0), 2200);
        const { events } = await store.runs.suspend(waitOf(run), 3000);
        expect(events).toEqual([
          expect.objectContaining({
            type: 'run.suspended',
            sessionKey: S,
            runId: run.runId,
            createdAt: 3000,
            payload: { waiting: true, until: 9000, keys: KEYS, inputIds: [run.inputId] },
          }),
        ]);
        expect((await store.events.list({ runId: run.runId })).filter((e) => e.type === 'run.suspended')).toEqual(events);

        expect(await store.runs.get(run.runId)).toMatchObject({
          status: 'suspended',
          waitingUntil: 9000,
          attempt: 1,
          epoch: run.epoch,
          errorCode: null,
          usage: { modelCalls: 1, steps: 1 },
        });
        // A wait is progress, not a failed attempt: its inputs start their count again, and still name the run.
        expect(await store.inputs.get(run.inputId)).toMatchObject({
          status: 'queued',
          runId: run.runId,
          attempts: 0,
          // The note the model read stays: the resumed run reads what the cut one read.
          note: null,
        });
        expect(await store.sessions.get(S)).toMatchObject({ state: 'idle' });
        expect(await store.steps.list(run.runId)).toMatchObject([{ step: 0 }]);
        expect(await store.runs.waiting()).toEqual([{ runId: run.runId, sessionKey: S, until: 9000, keys: KEYS, owner: 'gw-1' }]);

        // Its lease is let go: another owner takes the session at once, at a later epoch.
        expect(await store.leases.get(S)).toBeUndefined();
        const other = await store.leases.acquire(S, 'gw-3', 30_000);
        expect(other?.epoch).toBeGreaterThan(run.epoch);
      });

      it('suspend at a stale epoch, or of a run not running (committed, already waiting, suspended by a recovery, absent), throws LEASE_LOST and writes nothing', async () => {
        // A stale epoch: the run, its inputs, its lease and its session stay as they were.
        const run = await startRun();
        await store.steps.record(step(run, 0), 2200);
        await expect(store.runs.suspend(waitOf({ ...run, epoch: run.epoch + 1 }), 3000)).rejects.toMatchObject({
          code: 'LEASE_LOST',
          message: `run ${run.runId} lost its lease on ${S} (epoch ${run.epoch + 1}, now ${run.epoch}); it was not suspended`,
        });
        // The run's id is checked under the live lease too: a refusal there lets the lease go no more than the rest.
        await expect(store.runs.suspend(waitOf({ ...run, runId: 'run-not-there' }), 3000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'running', epoch: run.epoch, waitingUntil: null });
        expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'claimed', runId: run.runId, attempts: 1 });
        expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-1', epoch: run.epoch });
        expect(await store.sessions.get(S)).toMatchObject({ state: 'running' });
        expect((await store.events.list({ runId: run.runId })).map((e) => e.type)).toEqual(['run.started', 'run.step']);
        expect(await store.runs.waiting()).toEqual([]);

        // Its lease ran out and another owner took the session (no recovery yet): the run's row is still running at its
        // epoch, but neither that epoch nor the new holder's suspends it, and the new holder's lease is not let go.
        const V = 'agent:support:expired';
        await store.sessions.ensure({ key: V, agentId: 'support' }, 1000);
        const { input: late } = await store.inputs.enqueue(newInput(V), 1000);
        const lapsedId = newRunId();
        const lapsed = await store.runs.start(
          { id: lapsedId, sessionKey: V, agentId: 'support', owner: 'gw-1', leaseTtlMs: -1000, model: 'scripted/x', inputIds: [late.id] },
          2000,
        );
        if (typeof lapsed === 'string') throw new Error(`the run did not start: ${lapsed}`);
        const lapsedRun = { runId: lapsedId, sessionKey: V, epoch: lapsed.epoch };
        const holder = await store.leases.acquire(V, 'gw-3', 30_000);
        expect(holder).toEqual({ epoch: lapsed.epoch + 1 });
        await expect(store.runs.suspend(waitOf(lapsedRun), 3000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
        await expect(store.runs.suspend(waitOf({ ...lapsedRun, epoch: holder!.epoch }), 3000)).rejects.toMatchObject({
          code: 'LEASE_LOST',
        });
        expect(await store.runs.get(lapsedRun.runId)).toMatchObject({ status: 'running', epoch: lapsed.epoch, waitingUntil: null });
        expect(await store.inputs.get(late.id)).toMatchObject({ status: 'claimed', runId: lapsedRun.runId });
        expect(await store.leases.get(V)).toMatchObject({ owner: 'gw-3', epoch: holder!.epoch });
        expect(await store.sessions.get(V)).toMatchObject({ state: 'running' });
        expect(await store.runs.waiting()).toEqual([]);

        // Committed: its lease was let go at its epoch, but the run is no longer running.
        await store.runs.commit(succeededCommit({ ...run, consumedInputIds: [run.inputId] }), 2500);
        await expect(store.runs.suspend(waitOf(run), 3000)).rejects.toMatchObject({ code: 'LEASE_LOST' });
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'succeeded', waitingUntil: null });
        expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'consumed' });

        // Already waiting: a second suspend at its epoch does not overwrite its wait.
        const T = 'agent:support:other';
        await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
        const waits = await waitingRun(T);
        await expect(
          store.runs.suspend(waitOf(waits, { until: 4000, keys: ['exchange:ex-9'], deadlines: { '0:0': 4000 } }), 3500),
        ).rejects.toMatchObject({
          code: 'LEASE_LOST',
        });
        expect(await store.runs.waiting()).toEqual([
          { runId: waits.runId, sessionKey: T, until: 9000, keys: KEYS, owner: expect.any(String) },
        ]);

        // Suspended by a recovery (its owner's process is gone): the owner's late suspend is fenced off.
        const U = 'agent:support:third';
        await store.sessions.ensure({ key: U, agentId: 'support' }, 1000);
        const cut = await startRun(U);
        await store.steps.record(step(cut, 0), 2200);
        expect((await store.runs.recoverOrphans(own('gateway restarted'), 4000)).suspendedRuns).toEqual([cut.runId]);
        await expect(store.runs.suspend(waitOf(cut), 4100)).rejects.toMatchObject({ code: 'LEASE_LOST' });
        expect(await store.runs.get(cut.runId)).toMatchObject({ status: 'suspended', errorCode: 'INTERRUPTED', waitingUntil: null });
        expect(await store.runs.wake(cut.runId)).toBeUndefined();

        expect(
          (await store.events.list({}))
            .filter((e) => e.type === 'run.suspended')
            .map((e) => [e.runId, (e.payload as { waiting?: boolean }).waiting ?? false]),
        ).toEqual([
          [waits.runId, true],
          [cut.runId, false],
        ]);
        expect(await store.runs.waiting()).toEqual([
          { runId: waits.runId, sessionKey: T, until: 9000, keys: KEYS, owner: expect.any(String) },
        ]);
      });

      it('resume while the run waits answers waiting and writes nothing: no lease taken, its inputs still queued for it', async () => {
        const run = await waitingRun();
        expect(await resume(run.runId, 'gw-2')).toBe('waiting');
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended', attempt: 1, epoch: run.epoch, waitingUntil: 9000 });
        expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
        expect(await store.leases.get(S)).toBeUndefined();
        expect(await store.sessions.get(S)).toMatchObject({ state: 'idle' });
        expect((await store.events.list({ runId: run.runId })).map((e) => e.type)).toEqual(['run.started', 'run.step', 'run.suspended']);
        expect(await store.runs.waiting()).toEqual([
          { runId: run.runId, sessionKey: S, until: 9000, keys: KEYS, owner: expect.any(String) },
        ]);
        // The refused resume took no epoch: the next holder's is the first after the run's.
        expect(await store.leases.acquire(S, 'gw-3', 30_000)).toEqual({ epoch: run.epoch + 1 });
      });

      it('wake answers the session once (a second wake, or one of a run that is not waiting, answers undefined); resume then takes the run, attempt 2, with the deadlines it was suspended with', async () => {
        const run = await waitingRun();
        expect(await store.runs.wake(run.runId)).toBe(S);
        expect(await store.runs.wake(run.runId)).toBeUndefined();
        // Woken, not yet resumed: no longer waiting, still suspended with its inputs.
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended', waitingUntil: null });
        expect(await store.runs.waiting()).toEqual([]);
        expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });

        const back = await resumed(run.runId, 'gw-2');
        expect(back.waitDeadlines).toEqual(DEADLINES);
        expect(back.run).toMatchObject({
          id: run.runId,
          status: 'running',
          attempt: 2,
          owner: 'gw-2',
          epoch: back.epoch,
          waitingUntil: null,
        });
        expect(back.epoch).toBeGreaterThan(run.epoch);
        expect(back.inputs).toMatchObject([{ id: run.inputId, status: 'claimed', runId: run.runId, attempts: 1 }]);
        expect(back.events).toMatchObject([{ type: 'run.resumed', payload: { attempt: 2, owner: 'gw-2', inputIds: [run.inputId] } }]);
        expect(await store.runs.get(run.runId)).toEqual(back.run);
        expect(await store.runs.waiting()).toEqual([]);
        expect(await resume(run.runId, 'gw-2')).toBe('taken');
        expect(await store.runs.wake(run.runId)).toBeUndefined();
        expect(await store.runs.wake('run-not-there')).toBeUndefined();

        // The resumed attempt waits again, on its own calls: the next resume hands back only those deadlines.
        const again = { ...run, epoch: back.epoch };
        await store.runs.suspend(waitOf(again, { until: 15_000, keys: ['exchange:ex-2'], deadlines: { '1:0': 15_000 } }), 6000);
        expect(await store.runs.waiting()).toEqual([
          { runId: run.runId, sessionKey: S, until: 15_000, keys: ['exchange:ex-2'], owner: expect.any(String) },
        ]);
        expect(await resume(run.runId, 'gw-2')).toBe('waiting');
        expect(await store.runs.wake(run.runId)).toBe(S);
        const third = await resumed(run.runId, 'gw-1');
        expect(third.run).toMatchObject({ attempt: 3, owner: 'gw-1', waitingUntil: null });
        expect(third.waitDeadlines).toEqual({ '1:0': 15_000 });
        await store.runs.commit(succeededCommit({ ...run, epoch: third.epoch, consumedInputIds: [run.inputId] }), 7000);
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'succeeded', attempt: 3, waitingUntil: null });
      });

      it('a run a recovery suspended (no wait) resumes with no wait deadlines', async () => {
        const run = await startRun();
        await store.steps.record(step(run, 0), 2200);
        await store.runs.recoverOrphans(own('gateway restarted'), 4000);
        expect(await store.runs.waiting()).toEqual([]);
        expect((await resumed(run.runId, 'gw-2')).waitDeadlines).toEqual({});
      });

      it('listWithQueuedInputs and listStranded skip a session while its run waits (a message behind it too), and list it once the run is woken', async () => {
        const T = 'agent:support:other';
        await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
        await store.inputs.enqueue(newInput(T), 1000);
        const run = await waitingRun();
        // A message that comes to the waiting session meanwhile waits behind its run, and is not listed either.
        await store.inputs.enqueue(newInput(S), 1500);
        expect((await store.sessions.listWithQueuedInputs()).map((s) => s.key)).toEqual([T]);
        expect(await store.sessions.listStranded(10_000, 10)).toEqual([T]);

        await store.runs.wake(run.runId);
        expect((await store.sessions.listWithQueuedInputs()).map((s) => s.key).sort()).toEqual([S, T].sort());
        expect((await store.sessions.listStranded(10_000, 10)).sort()).toEqual([S, T].sort());
      });

      it('abandon ends a suspended run interrupted with its reason, and leaves a running one alone', async () => {
        const run = await waitingRun();
        await store.runs.abandon(run.runId, 'the run cannot resume: agent "support" is no longer configured', 4000);
        expect(await store.runs.get(run.runId)).toMatchObject({
          status: 'interrupted',
          endedAt: 4000,
          errorMessage: 'the run cannot resume: agent "support" is no longer configured',
          waitingUntil: null,
        });
        expect(await store.runs.waiting()).toEqual([]);
        await store.sessions.ensure({ key: 'agent:support:other', agentId: 'support' }, 1000);
        const running = await startRun('agent:support:other');
        await store.runs.abandon(running.runId, 'not suspended', 4000);
        expect(await store.runs.get(running.runId)).toMatchObject({ status: 'running', errorMessage: null });
      });

      it("recoverOrphans ('own' and 'expired') leaves a waiting run alone, and a woken one too", async () => {
        const run = await waitingRun();
        const nothing = { interruptedRuns: [], suspendedRuns: [], requeuedInputs: [], droppedInputs: [], sessionKeys: [] };
        expect(await store.runs.recoverOrphans(own('gateway restarted'), 4000)).toEqual(nothing);
        expect(await store.runs.recoverOrphans(expired, 4000)).toEqual(nothing);
        expect(await store.runs.get(run.runId)).toMatchObject({ status: 'suspended', waitingUntil: 9000, errorCode: null, attempt: 1 });
        expect(await store.inputs.get(run.inputId)).toMatchObject({ status: 'queued', runId: run.runId, attempts: 0 });
        expect(await store.runs.waiting()).toEqual([
          { runId: run.runId, sessionKey: S, until: 9000, keys: KEYS, owner: expect.any(String) },
        ]);

        expect(await store.runs.wake(run.runId)).toBe(S);
        expect(await store.runs.recoverOrphans(own('gateway restarted'), 5000)).toEqual(nothing);
        expect(await store.runs.recoverOrphans(expired, 5000)).toEqual(nothing);
        expect((await store.events.list({ runId: run.runId })).map((e) => e.type)).toEqual(['run.started', 'run.step', 'run.suspended']);
        const back = await resumed(run.runId, 'gw-2');
        expect(back.run).toMatchObject({ attempt: 2 });
        expect(back.waitDeadlines).toEqual(DEADLINES);
      });
    });
  });
}
