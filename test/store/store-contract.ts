/**
 * The contract every Store adapter must pass unchanged. Call `describeStoreContract` from one test file
 * per adapter with a factory that returns a fresh, empty store.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExchangeRecord, NewInput, NewSubagent, ParentFacts, Store } from '../../src/ports/index.js';

let counter = 0;
const id = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(16).slice(2, 10)}`;

function newInput(sessionKey: string, overrides: Partial<NewInput> = {}): NewInput {
  const inputId = id('in');
  return {
    id: inputId,
    sessionKey,
    idempotencyKey: `key-${inputId}`,
    mode: 'followup',
    text: 'hello',
    provenance: { kind: 'user', channel: 'cli' },
    ...overrides,
  };
}

const usage = { inputTokens: 3, outputTokens: 5, modelCalls: 1, steps: 1 };

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    const S = 'agent:support:main';

    beforeEach(async () => {
      store = await open();
      await store.sessions.ensure({ key: S, agentId: 'support' }, 1000);
    });
    afterEach(async () => {
      await store.close();
    });

    /** A run's start on session S (or `sessionKey`) by gw-1, as the store answers it. */
    const tryStart = (inputIds: string[], runId: string, more: { sessionKey?: string; historyLimit?: number } = {}) =>
      store.runs.start(
        { id: runId, sessionKey: S, agentId: 'support', owner: 'gw-1', leaseTtlMs: 30_000, model: 'scripted/x', inputIds, ...more },
        2000,
      );

    async function startRun(inputIds: string[], runId = id('run')) {
      const started = await tryStart(inputIds, runId);
      if (typeof started === 'string') throw new Error(`run ${runId} did not start: ${started}`);
      return { runId, epoch: started.epoch, started };
    }

    it('gateways: a shared secret keeps its first value; sharedSecretOf reads it, and stores nothing for an unknown name', async () => {
      expect(await store.gateways.sharedSecretOf('console-logout:x')).toBeUndefined();
      expect(await store.gateways.sharedSecretOf('console-logout:x')).toBeUndefined();
      expect(await store.gateways.sharedSecret('console-logout:x', '1')).toBe('1');
      expect(await store.gateways.sharedSecret('console-logout:x', '2')).toBe('1');
      expect(await store.gateways.sharedSecretOf('console-logout:x')).toBe('1');
    });

    it('ids: matchIds finds ids by their exact, case-sensitive start, in id order, at most limit, with no wildcard', async () => {
      for (const inputId of ['abcd-2', 'abcd-1', 'abce-1', 'ABCD-3', 'ab%d-4'])
        await store.inputs.enqueue(newInput(S, { id: inputId }), 1000);
      expect(await store.matchIds('input', 'abcd', 10)).toEqual(['abcd-1', 'abcd-2']);
      expect(await store.matchIds('input', 'abc', 10)).toEqual(['abcd-1', 'abcd-2', 'abce-1']);
      expect(await store.matchIds('input', 'abc', 2)).toEqual(['abcd-1', 'abcd-2']);
      expect(await store.matchIds('input', 'ab%', 10)).toEqual(['ab%d-4']);
      expect(await store.matchIds('input', 'ab_d', 10)).toEqual([]);
      expect(await store.matchIds('run', 'abcd', 10)).toEqual([]);
      // An id equal to the prefix is the one meant: returned alone, found by its index.
      await store.inputs.enqueue(newInput(S, { id: 'abce' }), 1000);
      expect(await store.matchIds('input', 'abce', 10)).toEqual(['abce']);
    });

    it('inputs: enqueueUnsynced stores an input as enqueue does; a repeated key returns the first row', async () => {
      const first = await store.inputs.enqueueUnsynced(newInput(S, { idempotencyKey: 'waited-1' }), 1000);
      expect(first).toMatchObject({ created: true, input: { status: 'queued', idempotencyKey: 'waited-1', sessionKey: S } });
      const again = await store.inputs.enqueueUnsynced(newInput(S, { idempotencyKey: 'waited-1', text: 'other' }), 2000);
      expect(again).toEqual({ input: first.input, created: false });
      expect(await store.inputs.enqueue(newInput(S, { idempotencyKey: 'waited-1' }), 3000)).toEqual({ input: first.input, created: false });
    });

    it('sessions: list by parentKey finds the sessions one spawned, directly', async () => {
      await store.sessions.ensure({ key: 'agent:support:subagent:a', agentId: 'support', parentKey: S, depth: 1 }, 1100);
      await store.sessions.ensure(
        { key: 'agent:support:subagent:a:subagent:b', agentId: 'support', parentKey: 'agent:support:subagent:a', depth: 2 },
        1200,
      );
      expect((await store.sessions.list({ parentKey: S })).map((session) => session.key)).toEqual(['agent:support:subagent:a']);
      expect(await store.sessions.list({ parentKey: 'agent:nobody:main' })).toEqual([]);
    });

    it('sessions: ensure is idempotent and keeps the first row', async () => {
      const again = await store.sessions.ensure({ key: S, agentId: 'support', label: 'other' }, 5000);
      expect(again).toMatchObject({ key: S, agentId: 'support', label: null, depth: 0, state: 'idle', createdAt: 1000 });
      const created = await store.sessions.ensure({ key: 'agent:expert:main', agentId: 'expert', label: 'tech' }, 1500);
      expect(created).toEqual(await store.sessions.get('agent:expert:main'));
      expect(created).toMatchObject({ label: 'tech', createdAt: 1500, lastRunAt: null });
      expect((await store.sessions.list({ agentId: 'expert' })).map((s) => s.key)).toEqual(['agent:expert:main']);
      expect(await store.sessions.get('agent:nobody:main')).toBeUndefined();
    });

    it('sessions: list filters by agent, label and last update, newest first', async () => {
      await store.sessions.ensure({ key: 'agent:expert:main', agentId: 'expert', label: 'tech' }, 2000);
      await store.sessions.ensure({ key: 'agent:expert:subagent:s1', agentId: 'expert', label: 'tech' }, 3000);
      expect((await store.sessions.list({ label: 'tech' })).map((s) => s.key)).toEqual(['agent:expert:subagent:s1', 'agent:expert:main']);
      expect((await store.sessions.list({ updatedSince: 2000 })).map((s) => s.key)).toEqual([
        'agent:expert:subagent:s1',
        'agent:expert:main',
      ]);
      expect((await store.sessions.list({ label: 'tech', updatedSince: 2500, agentId: 'expert' })).map((s) => s.key)).toEqual([
        'agent:expert:subagent:s1',
      ]);
      expect(await store.sessions.list({ label: 'none' })).toEqual([]);
    });

    it('sessions: annotate relabels and (un)archives a session, and list filters by archived', async () => {
      await store.sessions.ensure({ key: 'agent:expert:main', agentId: 'expert' }, 2000);
      expect(await store.sessions.annotate(S, { label: 'triage', archived: true }, 5000)).toMatchObject({
        key: S,
        label: 'triage',
        archivedAt: 5000,
        updatedAt: 1000,
      });
      expect((await store.sessions.list({ archived: true })).map((s) => s.key)).toEqual([S]);
      expect((await store.sessions.list({ archived: false })).map((s) => s.key)).toEqual(['agent:expert:main']);
      expect(await store.sessions.annotate(S, { archived: false }, 6000)).toMatchObject({ label: 'triage', archivedAt: null });
      expect(await store.sessions.annotate(S, { label: null }, 7000)).toMatchObject({ label: null, archivedAt: null });
      expect(await store.sessions.annotate('agent:nobody:main', { label: 'x' }, 7000)).toBeUndefined();
    });

    it('runs: usageSince sums the usage of the runs started since a time, per agent and model', async () => {
      expect(await store.runs.usageSince(0)).toEqual([]);
      const first = await store.inputs.enqueue(newInput(S), 1000);
      const { runId, epoch } = await startRun([first.input.id]);
      const outcome = { status: 'succeeded' as const, usage, preambleChars: 0, promptChars: 0, finalText: 'ok' };
      await store.runs.commit(
        { runId, sessionKey: S, epoch, outcome, transcript: [], consumedInputIds: [first.input.id], outbox: [], events: [] },
        3000,
      );
      const second = await store.inputs.enqueue(newInput(S), 3000);
      const next = await startRun([second.input.id]);
      await store.runs.commit(
        {
          runId: next.runId,
          sessionKey: S,
          epoch: next.epoch,
          outcome,
          transcript: [],
          consumedInputIds: [second.input.id],
          outbox: [],
          events: [],
        },
        4000,
      );
      const total = { agentId: 'support', model: 'scripted/x', runs: 2 };
      expect(await store.runs.usageSince(2000)).toEqual([
        { ...total, inputTokens: 2 * usage.inputTokens, outputTokens: 2 * usage.outputTokens, cachedInputTokens: 0 },
      ]);
      expect(await store.runs.usageSince(2001)).toEqual([]);
    });

    it('runs: usageByTime sums the usage per slice of time from since, per agent and model, oldest slice first', async () => {
      const runAt = async (at: number, agentId: string, tokens: number) => {
        const key = `agent:${agentId}:main`;
        await store.sessions.ensure({ key, agentId }, at);
        const { input } = await store.inputs.enqueue(newInput(key), at);
        const runId = id('run');
        const started = await store.runs.start(
          { id: runId, sessionKey: key, agentId, owner: 'gw-1', leaseTtlMs: 30_000, model: 'scripted/x', inputIds: [input.id] },
          at,
        );
        if (typeof started === 'string') throw new Error(`run did not start: ${started}`);
        const outcome = {
          status: 'succeeded' as const,
          usage: { ...usage, inputTokens: tokens },
          preambleChars: 0,
          promptChars: 0,
          finalText: 'ok',
        };
        await store.runs.commit(
          { runId, sessionKey: key, epoch: started.epoch, outcome, transcript: [], consumedInputIds: [input.id], outbox: [], events: [] },
          at + 1,
        );
      };
      await runAt(9_999, 'support', 1);
      await runAt(10_000, 'support', 10);
      await runAt(10_999, 'support', 20);
      await runAt(11_000, 'expert', 40);
      await runAt(12_500, 'support', 80);
      const slice = (at: number, agentId: string, runs: number, inputTokens: number) => ({
        at,
        agentId,
        model: 'scripted/x',
        runs,
        inputTokens,
        outputTokens: runs * usage.outputTokens,
        cachedInputTokens: 0,
      });
      expect(await store.runs.usageByTime(10_000, 1000)).toEqual([
        slice(10_000, 'support', 2, 30),
        slice(11_000, 'expert', 1, 40),
        slice(12_000, 'support', 1, 80),
      ]);
      // Slices start at `since`, whatever the size.
      expect(await store.runs.usageByTime(10_500, 2000)).toEqual([
        slice(10_500, 'expert', 1, 40),
        slice(10_500, 'support', 1, 20),
        slice(12_500, 'support', 1, 80),
      ]);
      expect(await store.runs.usageByTime(13_000, 1000)).toEqual([]);
    });

    it('sessions: the reply route is stored', async () => {
      await store.sessions.setRoute(S, { channel: 'cli', peer: 'alice' }, 3000);
      expect(await store.sessions.get(S)).toMatchObject({ route: { channel: 'cli', peer: 'alice' }, updatedAt: 3000 });
    });

    it("inputs: a key as long as a client's may be, scoped to its session, is stored and dedupes (PostgreSQL enforces lengths)", async () => {
      const key = `client:agent:support:api:direct:${'p'.repeat(256)}:${'k'.repeat(512)}`;
      const first = await store.inputs.enqueue(newInput(S, { idempotencyKey: key }), 1000);
      const again = await store.inputs.enqueue(newInput(S, { idempotencyKey: key }), 1000);
      expect(first.created).toBe(true);
      expect(again).toMatchObject({ created: false, input: { id: first.input.id } });
    });

    it('inputs: a duplicate idempotency key returns the existing row and writes nothing', async () => {
      const first = await store.inputs.enqueue(newInput(S, { idempotencyKey: 'same', text: 'one' }), 1000);
      const second = await store.inputs.enqueue(newInput(S, { idempotencyKey: 'same', text: 'two' }), 1001);
      expect(first.created).toBe(true);
      expect(second.created).toBe(false);
      expect(second.input.id).toBe(first.input.id);
      expect(second.input.text).toBe('one');
      expect(await store.inputs.list({ sessionKey: S })).toHaveLength(1);
    });

    it('inputs: queued inputs come back in FIFO order with their provenance', async () => {
      const a = await store.inputs.enqueue(newInput(S, { text: 'a' }), 1000);
      const b = await store.inputs.enqueue(
        newInput(S, { text: 'b', provenance: { kind: 'inter_session', sourceSession: 'agent:x:main', hop: 2 } }),
        1000,
      );
      const queued = await store.inputs.listQueued(S);
      expect(queued.map((i) => i.text)).toEqual(['a', 'b']);
      expect(queued[1].provenance).toEqual({ kind: 'inter_session', sourceSession: 'agent:x:main', hop: 2 });
      expect(queued[0].seq).toBeLessThan(queued[1].seq);
      expect((await store.inputs.get(a.input.id))?.status).toBe('queued');
      expect((await store.sessions.listWithQueuedInputs()).map((s) => s.key)).toEqual([S]);
      expect(b.input.attempts).toBe(0);
    });

    it('inputs: listQueuedForPlan reads the head, then only the inputs that act from further back', async () => {
      const modes = ['followup', 'steer', 'followup', 'followup', 'notify', 'followup', 'interrupt', 'collect', 'followup'] as const;
      for (const [index, mode] of modes.entries())
        await store.inputs.enqueue(newInput(S, { mode, text: `${mode}-${index}` }), 1000 + index);
      expect((await store.inputs.listQueuedForPlan(S, 3)).map((input) => input.text)).toEqual([
        'followup-0',
        'steer-1',
        'followup-2',
        'notify-4',
        'interrupt-6',
        'collect-7',
      ]);
      expect((await store.inputs.listQueuedForPlan(S, 20)).map((input) => input.text)).toEqual(
        modes.map((mode, index) => `${mode}-${index}`),
      );
      expect(await store.inputs.listQueuedForPlan('agent:nobody:main', 3)).toEqual([]);
    });

    it('inputs: enqueueOpening creates a missing session with its route, routes one that exists, and refuses one it may not create', async () => {
      const key = 'agent:support:api:direct:ann';
      const route = { channel: 'api', peer: 'ann' };
      const first = await store.inputs.enqueueOpening({ key, agentId: 'support', route, create: true }, newInput(key), 1000);
      expect(first).toMatchObject({ created: true, input: { sessionKey: key, status: 'queued', createdAt: 1000 } });
      expect(await store.sessions.get(key)).toMatchObject({ agentId: 'support', route, state: 'idle', createdAt: 1000, updatedAt: 1000 });
      // The same route again leaves the session as it was; a new one is written with the input.
      await store.inputs.enqueueOpening({ key, agentId: 'support', route, create: true }, newInput(key), 1500);
      expect(await store.sessions.get(key)).toMatchObject({ route, updatedAt: 1000 });
      const moved = { channel: 'api', peer: 'ann', account: 'work' };
      await store.inputs.enqueueOpening({ key, agentId: 'support', route: moved, create: false }, newInput(key), 2000);
      expect(await store.sessions.get(key)).toMatchObject({ route: moved, updatedAt: 2000 });
      // No route keeps the one there.
      await store.inputs.enqueueOpening({ key, agentId: 'support', create: true }, newInput(key), 2500);
      expect(await store.sessions.get(key)).toMatchObject({ route: moved, updatedAt: 2000 });
      // A repeated key answers the row there, whatever the session.
      if (first === 'missing') throw new Error('the first input was refused');
      const repeated = newInput(key, { idempotencyKey: first.input.idempotencyKey });
      const again = await store.inputs.enqueueOpening({ key, agentId: 'support', route, create: true }, repeated, 3000);
      expect(again).toEqual({ created: false, input: first.input });
      expect(await store.inputs.listQueued(key)).toHaveLength(4);
      // A session that may not be created here: nothing is written.
      const child = 'agent:support:subagent:nobody';
      const refused = await store.inputs.enqueueOpening({ key: child, agentId: 'support', route, create: false }, newInput(child), 3000);
      expect(refused).toBe('missing');
      expect(await store.sessions.get(child)).toBeUndefined();
      expect(await store.inputs.listQueued(child)).toEqual([]);
      // Unsynced, as a waited send's: the same rows.
      const unsynced = await store.inputs.enqueueOpening({ key: S, agentId: 'support', create: false }, newInput(S), 3000, {
        unsynced: true,
      });
      expect(unsynced).toMatchObject({ created: true, input: { sessionKey: S, status: 'queued' } });
    });

    it('sessions: open creates a missing session it may, routes one that exists, and answers none for one it may not create', async () => {
      const key = 'agent:support:api:direct:bo';
      expect(await store.sessions.open({ key, agentId: 'support', create: false }, 1000)).toBeUndefined();
      expect(await store.sessions.get(key)).toBeUndefined();
      const opened = await store.sessions.open({ key, agentId: 'support', create: true }, 1000);
      expect(opened).toEqual(await store.sessions.get(key));
      expect(opened).toMatchObject({ agentId: 'support', route: null, createdAt: 1000 });
      const route = { channel: 'api', peer: 'bo' };
      expect(await store.sessions.open({ key, agentId: 'support', route, create: false }, 2000)).toEqual(await store.sessions.get(key));
      expect(await store.sessions.get(key)).toMatchObject({ route, updatedAt: 2000 });
    });

    it('inputs: absorbNotify stores the message in the transcript once, without a run', async () => {
      const { input } = await store.inputs.enqueue(newInput(S, { mode: 'notify', text: 'fyi' }), 1000);
      expect(await store.inputs.absorbNotify(input.id, 1100)).toBe(true);
      expect(await store.inputs.absorbNotify(input.id, 1200)).toBe(false);
      const transcript = await store.transcript.list(S);
      expect(transcript).toHaveLength(1);
      expect(transcript[0]).toMatchObject({ role: 'user', content: 'fyi', inputId: input.id, runId: null });
      expect((await store.inputs.get(input.id))?.status).toBe('consumed');
    });

    it('inputs: drop marks only queued inputs dropped, with the reason', async () => {
      const a = await store.inputs.enqueue(newInput(S), 1000);
      const b = await store.inputs.enqueue(newInput(S), 1000);
      await startRun([b.input.id]);
      expect(await store.inputs.drop([a.input.id, b.input.id], 'agent "support" is no longer configured', 2000)).toEqual([a.input.id]);
      expect(await store.inputs.get(a.input.id)).toMatchObject({
        status: 'dropped',
        note: 'agent "support" is no longer configured',
        updatedAt: 2000,
      });
      expect((await store.inputs.get(b.input.id))?.status).toBe('claimed');
    });

    it('leases: the epoch grows on every acquire and fences other owners until expiry', async () => {
      const first = await store.leases.acquire(S, 'gw-1', 30_000);
      expect(first).toEqual({ epoch: 1 });
      expect(await store.leases.acquire(S, 'gw-2', 30_000)).toBeUndefined();
      expect(await store.leases.acquire(S, 'gw-1', 30_000)).toEqual({ epoch: 2 });
      expect(await store.leases.renew(S, 'gw-1', 1, 30_000)).toBe(false);
      expect(await store.leases.renew(S, 'gw-1', 2, 30_000)).toBe(true);
      await store.leases.release(S, 'gw-1', 2);
      expect(await store.leases.get(S)).toBeUndefined();
      // A released lease keeps its epoch: the next holder's is higher, so a writer holding epoch 1 or 2 stays fenced off.
      expect(await store.leases.acquire(S, 'gw-2', 30_000)).toEqual({ epoch: 3 });
      expect(await store.leases.renew(S, 'gw-1', 2, 30_000)).toBe(false);
    });

    it('leases: an expired lease can be taken over by another owner', async () => {
      await store.leases.acquire(S, 'gw-1', -1);
      expect(await store.leases.acquire(S, 'gw-2', 30_000)).toEqual({ epoch: 2 });
      expect((await store.leases.get(S))?.owner).toBe('gw-2');
    });

    it('runs: start claims inputs; commit consumes them, appends transcript, outbox and events atomically', async () => {
      const { input } = await store.inputs.enqueue(newInput(S), 1000);
      const { runId, epoch, started } = await startRun([input.id]);
      // start answers the lease's epoch, the inputs it claimed, the session and the event it wrote, as stored.
      expect(started).toEqual({
        epoch: (await store.leases.get(S))!.epoch,
        inputs: [await store.inputs.get(input.id)],
        session: await store.sessions.get(S),
        events: await store.events.list({ runId }),
      });
      expect(started.events.map((event) => event.type)).toEqual(['run.started']);
      expect(await store.inputs.get(input.id)).toMatchObject({ status: 'claimed', runId, attempts: 1 });
      expect(await store.sessions.get(S)).toMatchObject({ state: 'running', lastRunAt: 2000 });
      const committed = await store.runs.commit(
        {
          runId,
          sessionKey: S,
          epoch,
          outcome: { status: 'succeeded', usage, preambleChars: 100, promptChars: 250, finalText: 'hi there' },
          transcript: [
            { role: 'user', content: 'hello', provenance: input.provenance, inputId: input.id, runId },
            { role: 'assistant', content: [{ type: 'text', text: 'hi there' }], provenance: null, inputId: null, runId },
          ],
          consumedInputIds: [input.id],
          outbox: [
            { id: id('ob'), kind: 'reply', target: 'agent:x:main', payload: { text: 'hi there' }, idempotencyKey: `reply:${runId}` },
          ],
          events: [{ type: 'run.completed', sessionKey: S, runId, payload: { status: 'succeeded' } }],
        },
        3000,
      );
      expect(await store.inputs.get(input.id)).toMatchObject({ status: 'consumed', runId });
      expect(await store.runs.get(runId)).toMatchObject({
        status: 'succeeded',
        endedAt: 3000,
        finalText: 'hi there',
        preambleChars: 100,
        promptChars: 250,
        usage,
      });
      // The commit answers with the run and its events as stored, so that neither waiters nor the journal's
      // tail need read them back.
      expect(committed.run).toEqual(await store.runs.get(runId));
      expect(committed.events).toEqual((await store.events.list({ runId })).filter((event) => event.type === 'run.completed'));
      expect((await store.transcript.list(S)).map((e) => e.role)).toEqual(['user', 'assistant']);
      expect((await store.transcript.list(S, { limit: 1 })).map((e) => e.role)).toEqual(['assistant']);
      expect((await store.transcript.listByRun(S, runId)).map((e) => [e.role, e.runId])).toEqual([
        ['user', runId],
        ['assistant', runId],
      ]);
      expect(await store.transcript.listByRun(S, 'another-run')).toEqual([]);
      expect(await store.outbox.listDue(3000, 10)).toHaveLength(1);
      const events = await store.events.list({ runId });
      expect(events.map((e) => e.type)).toEqual(['run.started', 'run.completed']);
      expect(await store.sessions.get(S)).toMatchObject({ state: 'idle' });
      expect(await store.leases.get(S)).toBeUndefined();
    });

    it('runs: start takes the lease with the run, and writes nothing while another owner holds it or an input is no longer queued', async () => {
      const { input } = await store.inputs.enqueue(newInput(S), 1000);
      const held = await store.leases.acquire(S, 'gw-2', 30_000);
      const start = (inputIds: string[], owner = 'gw-1') =>
        store.runs.start({ id: id('run'), sessionKey: S, agentId: 'support', owner, leaseTtlMs: 30_000, model: 'm', inputIds }, 2000);
      expect(await start([input.id])).toBe('leased');
      expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-2', epoch: held!.epoch });
      expect(await store.inputs.get(input.id)).toMatchObject({ status: 'queued', runId: null, attempts: 0 });
      await store.leases.release(S, 'gw-2', held!.epoch);
      const ok = await startRun([input.id]);
      expect(ok.started.inputs.map((claimed) => claimed.id)).toEqual([input.id]);
      expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-1', epoch: ok.epoch });
      // The owner's own lease is taken again, but the input is claimed already: the lease stays as it was.
      expect(await start([input.id])).toBe('taken');
      expect((await store.leases.get(S))?.epoch).toBe(ok.epoch);
      // One input of two already taken: nothing is claimed, and no run is made.
      const { input: other } = await store.inputs.enqueue(newInput(S), 2100);
      expect(await start([other.id, input.id])).toBe('taken');
      expect(await store.inputs.get(other.id)).toMatchObject({ status: 'queued', runId: null });
      expect(await store.runs.list({ sessionKey: S })).toHaveLength(1);
      expect((await store.events.list({ sessionKey: S })).map((event) => event.type)).toEqual(['run.started']);
    });

    it("runs: a start with a history limit answers with the session's newest entries and what it reached out to, as the two reads would", async () => {
      await store.transcript.append(
        S,
        ['one', 'two', 'three'].map((text) => ({ role: 'note' as const, content: text, provenance: null, inputId: null, runId: null })),
        1500,
      );
      const { input } = await store.inputs.enqueue(newInput(S), 1600);
      const started = await tryStart([input.id], id('run'), { historyLimit: 2 });
      if (typeof started === 'string') throw new Error(`the run did not start: ${started}`);
      expect(started.history?.map((entry) => entry.content)).toEqual(['two', 'three']);
      expect(started.history).toEqual(await store.transcript.list(S, { limit: 2 }));
      expect(started.reachedOut).toEqual({ spawned: false, sent: false });
    });

    it('runs: a start on a session that does not exist answers missing and writes nothing', async () => {
      const nowhere = 'agent:support:api:direct:nobody';
      const { input } = await store.inputs.enqueue(newInput(nowhere), 1000);
      const runId = id('run');
      expect(await tryStart([input.id], runId, { sessionKey: nowhere, historyLimit: 10 })).toBe('missing');
      expect(await store.inputs.get(input.id)).toMatchObject({ status: 'queued', runId: null, attempts: 0 });
      expect(await store.runs.get(runId)).toBeUndefined();
      expect(await store.leases.get(nowhere)).toBeUndefined();
      expect(await store.events.list({ sessionKey: nowhere })).toEqual([]);
      expect(await store.sessions.get(nowhere)).toBeUndefined();
    });

    it('runs: a commit says whether its session still holds queued inputs', async () => {
      const commit = (runId: string, epoch: number, consumed: string[]) =>
        store.runs.commit(
          {
            runId,
            sessionKey: S,
            epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 0, promptChars: 0, finalText: 'ok' },
            transcript: [],
            consumedInputIds: consumed,
            outbox: [],
            events: [],
          },
          3000,
        );
      const { input: first } = await store.inputs.enqueue(newInput(S), 1000);
      const one = await startRun([first.id]);
      // Another session's queued input is not this one's.
      await store.inputs.enqueue(newInput('agent:support:other'), 1100);
      const { input: second } = await store.inputs.enqueue(newInput(S), 1200);
      expect((await commit(one.runId, one.epoch, [first.id])).queued).toBe(true);
      const two = await startRun([second.id]);
      expect((await commit(two.runId, two.epoch, [second.id])).queued).toBe(false);
    });

    it('runs: commit with a lost lease throws LEASE_LOST and writes nothing', async () => {
      const { input } = await store.inputs.enqueue(newInput(S), 1000);
      const { runId, epoch } = await startRun([input.id]);
      const taken = await store.leases.acquire(S, 'gw-1', 30_000);
      await expect(
        store.runs.commit(
          {
            runId,
            sessionKey: S,
            epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 1, promptChars: 1, finalText: 'x' },
            transcript: [{ role: 'assistant', content: 'x', provenance: null, inputId: null, runId }],
            consumedInputIds: [input.id],
            outbox: [],
            events: [],
          },
          3000,
        ),
      ).rejects.toMatchObject({
        code: 'LEASE_LOST',
        message: `run ${runId} lost its lease on ${S} (epoch ${epoch}, now ${taken!.epoch}); its results were not committed`,
      });
      expect(await store.transcript.list(S)).toHaveLength(0);
      expect((await store.leases.get(S))?.epoch).toBe(taken!.epoch);
      expect((await store.inputs.get(input.id))?.status).toBe('claimed');
      expect((await store.runs.get(runId))?.status).toBe('running');
    });

    it('runs: a commit for a run that is not running under the lease throws LEASE_LOST and keeps the lease', async () => {
      const { input } = await store.inputs.enqueue(newInput(S), 1000);
      const { epoch } = await startRun([input.id]);
      const commit = (runId: string) =>
        store.runs.commit(
          {
            runId,
            sessionKey: S,
            epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 1, promptChars: 1, finalText: 'x' },
            transcript: [],
            consumedInputIds: [],
            outbox: [],
            events: [],
          },
          3000,
        );
      await expect(commit('run-that-is-not-there')).rejects.toMatchObject({ code: 'LEASE_LOST' });
      // The lease is taken first in the commit's transaction; the refusal undoes that.
      expect((await store.leases.get(S))?.epoch).toBe(epoch);
    });

    it('runs: claimMore steers queued inputs into the running run', async () => {
      const a = await store.inputs.enqueue(newInput(S), 1000);
      const b = await store.inputs.enqueue(newInput(S, { mode: 'steer' }), 1000);
      const { runId, epoch } = await startRun([a.input.id]);
      expect(await store.runs.claimMore(runId, S, epoch, [b.input.id], 2500)).toEqual([b.input.id]);
      expect(await store.runs.claimMore(runId, S, epoch, [b.input.id], 2500)).toEqual([]);
      expect((await store.inputs.listByRun(runId)).map((i) => i.id)).toEqual([a.input.id, b.input.id]);
    });

    const own = (recoverer: string, diagnostic: string, maxRetries = 2) =>
      ({ recoverer, scope: 'own', diagnostic: () => diagnostic, maxRetries }) as const;
    const expired = (recoverer: string) =>
      ({ recoverer, scope: 'expired', diagnostic: (owner: string) => `taken over from ${owner}`, maxRetries: 2 }) as const;

    it("runs: recoverOrphans 'own' interrupts this owner's running runs and requeues or drops their inputs", async () => {
      const a = await store.inputs.enqueue(newInput(S), 1000);
      const { runId, epoch } = await startRun([a.input.id]);
      const report = await store.runs.recoverOrphans(own('gw-1', 'gateway restarted'), 4000);
      expect(report).toEqual({
        interruptedRuns: [runId],
        suspendedRuns: [],
        requeuedInputs: [a.input.id],
        droppedInputs: [],
        sessionKeys: [S],
      });
      expect(await store.runs.get(runId)).toMatchObject({ status: 'interrupted', errorMessage: 'gateway restarted', endedAt: 4000 });
      expect(await store.inputs.get(a.input.id)).toMatchObject({ status: 'queued', runId: null, attempts: 1 });
      expect(await store.sessions.get(S)).toMatchObject({ state: 'idle' });
      // The lease was let go with its epoch grown: the run's own epoch can renew nothing.
      expect(await store.leases.get(S)).toBeUndefined();
      expect(await store.leases.renew(S, 'gw-1', epoch, 30_000)).toBe(false);
      const [event] = (await store.events.list({ runId })).filter((e) => e.type === 'run.interrupted');
      expect(event!.payload).toEqual({ diagnostic: 'gateway restarted', owner: 'gw-1', recoveredBy: 'gw-1', inputIds: [a.input.id] });
      // Second and third interrupted attempts: the third exceeds maxAttempts = 2 and is dropped with a note.
      const second = await startRun([a.input.id]);
      await store.runs.recoverOrphans(own('gw-1', 'again'), 5000);
      const third = await startRun([a.input.id]);
      const last = await store.runs.recoverOrphans(own('gw-1', 'again'), 6000);
      expect(last.droppedInputs).toEqual([a.input.id]);
      expect(await store.inputs.get(a.input.id)).toMatchObject({ status: 'dropped', attempts: 3, runId: third.runId });
      expect((await store.inputs.get(a.input.id))?.note).toBe('dropped after 3 interrupted attempts (recovery.retryInterrupted = 2)');
      expect(second.started.inputs).toHaveLength(1);
      expect(third.started.inputs).toHaveLength(1);
      expect(await store.runs.recoverOrphans(own('gw-2', 'other owner'), 7000)).toEqual({
        interruptedRuns: [],
        suspendedRuns: [],
        requeuedInputs: [],
        droppedInputs: [],
        sessionKeys: [],
      });
    });

    it("runs: recoverOrphans 'expired' leaves a run whose lease holds, and takes over one whose lease expired, fencing its owner off", async () => {
      const a = await store.inputs.enqueue(newInput(S), 1000);
      const held = await startRun([a.input.id]);
      expect((await store.runs.recoverOrphans(expired('gw-2'), 4000)).interruptedRuns).toEqual([]);
      expect(await store.runs.get(held.runId)).toMatchObject({ status: 'running' });
      // The same run with a lease that has run out (no renewal in its lifetime): another gateway takes it over.
      const T = 'agent:support:other';
      await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
      const b = await store.inputs.enqueue(newInput(T), 1000);
      const started = await store.runs.start(
        { id: id('run'), sessionKey: T, agentId: 'support', owner: 'gw-1', leaseTtlMs: -1000, model: 'm', inputIds: [b.input.id] },
        2000,
      );
      if (typeof started === 'string') throw new Error(started);
      const [stale] = await store.runs.list({ sessionKey: T });
      const report = await store.runs.recoverOrphans(expired('gw-2'), 5000);
      expect(report).toEqual({
        interruptedRuns: [stale!.id],
        suspendedRuns: [],
        requeuedInputs: [b.input.id],
        droppedInputs: [],
        sessionKeys: [T],
      });
      expect(await store.runs.get(stale!.id)).toMatchObject({ status: 'interrupted', errorMessage: 'taken over from gw-1' });
      expect(await store.inputs.get(b.input.id)).toMatchObject({ status: 'queued', runId: null });
      // Fenced: the owner's renewal, steering and commit all fail, and write nothing.
      expect(await store.leases.renew(T, 'gw-1', started.epoch, 30_000)).toBe(false);
      const c = await store.inputs.enqueue(newInput(T, { mode: 'steer' }), 5100);
      expect(await store.runs.claimMore(stale!.id, T, started.epoch, [c.input.id], 5200)).toEqual([]);
      await expect(
        store.runs.commit(
          {
            runId: stale!.id,
            sessionKey: T,
            epoch: started.epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 1, promptChars: 1, finalText: 'late' },
            transcript: [{ role: 'assistant', content: 'late', provenance: null, inputId: null, runId: stale!.id }],
            consumedInputIds: [b.input.id],
            outbox: [],
            events: [],
          },
          6000,
        ),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await store.transcript.list(T)).toEqual([]);
      // It ended when its lease ran out (a minute ago by the database's clock), not when it was found.
      const U = 'agent:support:downtime';
      await store.sessions.ensure({ key: U, agentId: 'support' }, 1000);
      const d = await store.inputs.enqueue(newInput(U), 1000);
      const before = Date.now();
      const long = await store.runs.start(
        { id: id('run'), sessionKey: U, agentId: 'support', owner: 'gw-1', leaseTtlMs: -60_000, model: 'm', inputIds: [d.input.id] },
        before - 120_000,
      );
      if (typeof long === 'string') throw new Error(long);
      const [down] = await store.runs.list({ sessionKey: U });
      await store.runs.recoverOrphans(expired('gw-2'), Date.now());
      const ended = (await store.runs.get(down!.id))!.endedAt!;
      expect(ended).toBeGreaterThanOrEqual(before - 65_000);
      expect(ended).toBeLessThanOrEqual(Date.now() - 55_000);
      // Recovered once: a second sweep finds nothing.
      expect((await store.runs.recoverOrphans(expired('gw-3'), 7000)).interruptedRuns).toEqual([]);
    });

    it("runs: recoverOrphans 'expired' recovers a run whose lease moved on, leaving the new holder's lease and session as they are", async () => {
      const a = await store.inputs.enqueue(newInput(S), 1000);
      const stale = await store.runs.start(
        { id: id('run'), sessionKey: S, agentId: 'support', owner: 'gw-1', leaseTtlMs: -1000, model: 'm', inputIds: [a.input.id] },
        2000,
      );
      if (typeof stale === 'string') throw new Error(stale);
      const [staleRun] = await store.runs.list({ sessionKey: S });
      // Another gateway takes the expired lease for a run of its own before any sweep.
      const b = await store.inputs.enqueue(newInput(S), 2500);
      const fresh = await store.runs.start(
        { id: id('run'), sessionKey: S, agentId: 'support', owner: 'gw-2', leaseTtlMs: 30_000, model: 'm', inputIds: [b.input.id] },
        3000,
      );
      if (typeof fresh === 'string') throw new Error(fresh);
      const report = await store.runs.recoverOrphans(expired('gw-3'), 4000);
      expect(report.interruptedRuns).toEqual([staleRun!.id]);
      expect(await store.inputs.get(a.input.id)).toMatchObject({ status: 'queued' });
      expect(await store.leases.get(S)).toMatchObject({ owner: 'gw-2', epoch: fresh.epoch });
      expect(await store.sessions.get(S)).toMatchObject({ state: 'running' });
      expect(await store.inputs.get(b.input.id)).toMatchObject({ status: 'claimed' });
    });

    it('sessions: listStranded finds queued inputs older than a time whose session no lease holds', async () => {
      const T = 'agent:support:t';
      await store.sessions.ensure({ key: T, agentId: 'support' }, 1000);
      await store.inputs.enqueue(newInput(S), 1000);
      await store.inputs.enqueue(newInput(T), 1000);
      expect((await store.sessions.listStranded(2000, 10)).sort()).toEqual([S, T].sort());
      expect(await store.sessions.listStranded(1000, 10)).toEqual([]);
      // A session whose lease is held is not stranded; one whose lease expired is.
      await store.leases.acquire(S, 'gw-1', 30_000);
      await store.leases.acquire(T, 'gw-1', -1000);
      expect(await store.sessions.listStranded(2000, 10)).toEqual([T]);
    });

    it('outbox: duplicate idempotency keys collapse; failures back off and end dead', async () => {
      const row = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: { n: 1 }, idempotencyKey: 'once' }, 1000);
      const dup = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: { n: 2 }, idempotencyKey: 'once' }, 1001);
      expect(dup.id).toBe(row.id);
      expect(dup.payload).toEqual({ n: 1 });
      const first = (await store.outbox.claim(row.id, 'gw-1', 1000, 60_000))!;
      expect(first.claimToken).toBe(1);
      expect(await store.outbox.markFailed(row.id, first.claimToken, 'boom', 5000, false)).toBe(true);
      expect(await store.outbox.listDue(4999, 10)).toHaveLength(0);
      expect(await store.outbox.claim(row.id, 'gw-1', 4999, 60_000)).toBeUndefined();
      expect(await store.outbox.listDue(5000, 10)).toHaveLength(1);
      const second = (await store.outbox.claim(row.id, 'gw-1', 5000, 60_000))!;
      expect(await store.outbox.markFailed(row.id, second.claimToken, 'boom again', 6000, true)).toBe(true);
      expect(await store.outbox.get(row.id)).toMatchObject({ status: 'dead', attempts: 2, lastError: 'boom again' });
      expect(await store.outbox.listDue(10_000, 10)).toHaveLength(0);
      const other = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'two' }, 1000);
      const claimed = (await store.outbox.claim(other.id, 'gw-1', 1000, 60_000))!;
      expect(await store.outbox.markDelivered(other.id, claimed.claimToken, 1500)).toBe(true);
      expect(await store.outbox.get(other.id)).toMatchObject({ status: 'delivered', deliveredAt: 1500, attempts: 1 });
    });

    it('outbox: a claim holds its row for its lease; a mark under a claim that was taken over changes nothing', async () => {
      const row = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'fenced' }, 1000);
      const slow = (await store.outbox.claim(row.id, 'gw-1', 1000, 10_000))!;
      // While the slow attempt holds it, the row is neither due nor claimable.
      expect(await store.outbox.listDue(5000, 10)).toHaveLength(0);
      expect(await store.outbox.claim(row.id, 'gw-1', 5000, 10_000)).toBeUndefined();
      // Its holder went quiet past the lease: another gateway takes the row over and delivers it.
      const fresh = (await store.outbox.claim(row.id, 'gw-1', 11_000, 10_000))!;
      expect(fresh.claimToken).toBe(slow.claimToken + 1);
      expect(await store.outbox.markDelivered(row.id, fresh.claimToken, 11_500)).toBe(true);
      // The slow attempt's failure, arriving late, neither revives nor kills the delivered row.
      expect(await store.outbox.markFailed(row.id, slow.claimToken, 'timed out', 20_000, false)).toBe(false);
      expect(await store.outbox.markFailed(row.id, slow.claimToken, 'timed out', 20_000, true)).toBe(false);
      expect(await store.outbox.markDelivered(row.id, slow.claimToken, 12_000)).toBe(false);
      expect(await store.outbox.get(row.id)).toMatchObject({ status: 'delivered', deliveredAt: 11_500, attempts: 1, lastError: null });
      // A restarted gateway makes the rows its previous process held due at once; another gateway's stay held.
      const mine = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'mine' }, 1000);
      const theirs = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'theirs' }, 1000);
      await store.outbox.claim(mine.id, 'gw-1', 1000, 60_000);
      await store.outbox.claim(theirs.id, 'gw-2', 1000, 60_000);
      await store.outbox.releaseClaims('gw-1', 2000);
      expect((await store.outbox.listDue(2000, 10)).map((due) => due.id)).toEqual([mine.id]);
    });

    it('transcript: append keeps order and content; list can take the last n', async () => {
      await store.transcript.append(
        S,
        [
          { role: 'note', content: 'gateway note', provenance: null, inputId: null, runId: null },
          { role: 'assistant', content: [{ type: 'text', text: 'x' }], provenance: null, inputId: null, runId: 'r1' },
        ],
        1500,
      );
      const all = await store.transcript.list(S);
      expect(all.map((e) => [e.role, e.content, e.createdAt])).toEqual([
        ['note', 'gateway note', 1500],
        ['assistant', [{ type: 'text', text: 'x' }], 1500],
      ]);
      expect(await store.transcript.list('agent:nobody:main')).toEqual([]);
      expect((await store.outbox.list()).length).toBe(0);
    });

    it('events: append-only journal read after a sequence number and by session', async () => {
      expect(await store.events.latestSeq()).toBe(0);
      const e1 = await store.events.append({ type: 'lane.stalled', sessionKey: S, payload: { x: 1 } }, 1000);
      const e2 = await store.events.append({ type: 'outbox.dead', sessionKey: 'agent:other:main' }, 1001);
      expect(e2.seq).toBeGreaterThan(e1.seq);
      expect(await store.events.latestSeq()).toBe(e2.seq);
      expect((await store.events.list({ afterSeq: e1.seq })).map((e) => e.type)).toEqual(['outbox.dead']);
      expect((await store.events.list({ afterSeq: 0, limit: 1 })).map((e) => e.seq)).toEqual([e1.seq]);
      expect((await store.events.list({ sessionKey: S })).map((e) => e.payload)).toEqual([{ x: 1 }]);
    });

    it('events and outbox: findByPayload finds rows whose payload text contains the needle, oldest first, with no wildcard', async () => {
      const trace = `${'a'.repeat(31)}b`;
      const completed = (payload: unknown, at: number) => store.events.append({ type: 'run.completed', sessionKey: S, payload }, at);
      const first = await completed({ trace: { traceId: trace, spanId: '1'.repeat(16) } }, 1000);
      await completed({ trace: { traceId: 'c'.repeat(32) } }, 1001);
      await store.events.append({ type: 'run.started', sessionKey: S, payload: { note: trace } }, 1002);
      const second = await completed({ finalText: `ends with ${trace}` }, 1003);
      await completed({ finalText: 'a%b_c' }, 1004);
      const found = await store.events.findByPayload('run.completed', trace, 10);
      expect(found.map((event) => event.seq)).toEqual([first.seq, second.seq]);
      expect(found[0]!.payload).toEqual({ trace: { traceId: trace, spanId: '1'.repeat(16) } });
      expect((await store.events.findByPayload('run.completed', trace, 1)).map((event) => event.seq)).toEqual([first.seq]);
      // The needle's % and _ are its own characters, not wildcards.
      expect(await store.events.findByPayload('run.completed', 'a%c', 10)).toEqual([]);
      expect(await store.events.findByPayload('run.completed', 'a_b', 10)).toEqual([]);
      expect(await store.events.findByPayload('run.completed', '%b_c', 10)).toHaveLength(1);

      const row = (n: number, payload: unknown) =>
        store.outbox.add({ id: `ob-${n}`, kind: 'k', target: 't', payload, idempotencyKey: `find-${n}` }, 1000 + n);
      await row(2, { trace: `00-${trace}-${'2'.repeat(16)}-01` });
      await row(1, { trace: `00-${'d'.repeat(32)}-${'2'.repeat(16)}-01` });
      await row(3, { text: trace });
      expect((await store.outbox.findByPayload(trace, 10)).map((listed) => listed.id)).toEqual(['ob-2', 'ob-3']);
      expect((await store.outbox.findByPayload(trace, 1)).map((listed) => listed.id)).toEqual(['ob-2']);
      expect(await store.outbox.findByPayload('nothing_like%this', 10)).toEqual([]);
    });

    it('outbox: only a dead row can be retried (pending again, attempts reset, due now) or dropped', async () => {
      const row = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'dead-one' }, 1000);
      expect(await store.outbox.retry(row.id, 2000)).toBeUndefined();
      expect(await store.outbox.drop(row.id)).toBeUndefined();
      const claim = (await store.outbox.claim(row.id, 'gw-1', 1000, 60_000))!;
      await store.outbox.markFailed(row.id, claim.claimToken, 'gone', 3000, true);
      expect(await store.outbox.retry(row.id, 4000)).toMatchObject({
        status: 'pending',
        attempts: 0,
        nextAttemptAt: 4000,
        lastError: 'gone',
      });
      expect((await store.outbox.listDue(4000, 10)).map((due) => due.id)).toEqual([row.id]);
      const again = (await store.outbox.claim(row.id, 'gw-1', 4000, 60_000))!;
      await store.outbox.markFailed(row.id, again.claimToken, 'gone again', 5000, true);
      expect(await store.outbox.drop(row.id)).toMatchObject({ status: 'dropped' });
      expect(await store.outbox.retry(row.id, 6000)).toBeUndefined();
      expect((await store.outbox.list({ status: 'dropped' })).map((listed) => listed.id)).toEqual([row.id]);
      // The backlog counts pending and dead rows only.
      expect(await store.outbox.backlog()).toEqual({ pending: 0, dead: 0 });
      await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'pending-one' }, 7000);
      const doomed = await store.outbox.add({ id: id('ob'), kind: 'k', target: 't', payload: {}, idempotencyKey: 'dead-two' }, 7000);
      const last = (await store.outbox.claim(doomed.id, 'gw-1', 7000, 60_000))!;
      await store.outbox.markFailed(doomed.id, last.claimToken, 'gone', 8000, true);
      expect(await store.outbox.backlog()).toEqual({ pending: 1, dead: 1 });
    });

    function newExchange(exchangeId = id('ex')) {
      return {
        id: exchangeId,
        conversationId: 'conv-1',
        hop: 1,
        requesterSession: S,
        requesterAgent: 'support',
        targetSession: 'agent:expert:main',
        targetAgent: 'expert',
        maxTurns: 2,
        replyState: 'awaiting' as const,
        waiterRunId: 'run-a',
      };
    }

    it('exchanges: open stores the request input and the exchange together; a repeated key returns both', async () => {
      const input = newInput('agent:expert:main', { idempotencyKey: 'send-1', provenance: { kind: 'inter_session', sourceSession: S } });
      const first = await store.exchanges.open(newExchange('ex-a'), input, 1000);
      expect(first.created).toBe(true);
      expect(first.exchange).toMatchObject({
        id: 'ex-a',
        requestInputId: first.input.id,
        phase: 'request',
        turn: 0,
        replyState: 'awaiting',
        waiterRunId: 'run-a',
        createdAt: 1000,
      });
      const again = await store.exchanges.open(newExchange('ex-b'), { ...input, id: id('in') }, 2000);
      expect(again.created).toBe(false);
      expect(again.exchange.id).toBe('ex-a');
      expect(again.input.id).toBe(first.input.id);
      expect(await store.exchanges.get('ex-b')).toBeUndefined();
      expect(await store.inputs.list({ sessionKey: 'agent:expert:main' })).toHaveLength(1);
    });

    it('sessions: reachedOut tells whether a session has spawned and whether a reply is still to come to it', async () => {
      await store.sessions.ensure({ key: S, agentId: 'support' }, 1000);
      expect(await store.sessions.reachedOut(S)).toEqual({ spawned: false, sent: false });
      await store.exchanges.open(newExchange('ex-act'), newInput('agent:expert:main', { idempotencyKey: 'act-1' }), 1100);
      expect(await store.sessions.reachedOut(S)).toEqual({ spawned: false, sent: true });
      await store.sessions.ensure({ key: `${S}:subagent:act`, agentId: 'support', parentKey: S, depth: 1 }, 1200);
      expect(await store.sessions.reachedOut(S)).toEqual({ spawned: true, sent: true });
      expect(await store.sessions.reachedOut('agent:expert:main')).toEqual({ spawned: false, sent: false });
      // A reply its waiter took leaves nothing to wait for; so does one delivered; one held for the run still is.
      const other = `${S}:other`;
      await store.sessions.ensure({ key: other, agentId: 'support' }, 1300);
      await store.exchanges.open(
        { ...newExchange('ex-took'), requesterSession: other },
        newInput('agent:expert:main', { idempotencyKey: 'took-1' }),
        1300,
      );
      for (const [replyState, sent] of [
        ['held', true],
        ['reply_held', true],
        ['detached', true],
        ['delivered', false],
        ['replied', false],
      ] as const) {
        await store.exchanges.transition('ex-took', {}, { replyState }, 1400);
        expect(await store.sessions.reachedOut(other), replyState).toEqual({ spawned: false, sent });
      }
      // A run's start that reads its history says the same (PostgreSQL answers it from its own function): nothing to
      // come for the session whose reply was taken, a reply to come for S (its first exchange still awaits one).
      const { input } = await store.inputs.enqueue(newInput(other), 1500);
      const started = await tryStart([input.id], id('run'), { sessionKey: other, historyLimit: 5 });
      expect(typeof started !== 'string' && started.reachedOut).toEqual({ spawned: false, sent: false });
      const { input: toS } = await store.inputs.enqueue(newInput(S), 1500);
      const startedS = await tryStart([toS.id], id('run'), { historyLimit: 5 });
      expect(typeof startedS !== 'string' && startedS.reachedOut).toEqual({ spawned: true, sent: true });
    });

    it('tool calls: begin records an effect outside the store with its intent once; a second begin answers the first intent', async () => {
      const call = {
        key: 'tc:in-9:0:0:write_file:bbbb',
        scope: 'in-9',
        step: 0,
        index: 0,
        tool: 'write_file',
        argsHash: 'bbbb',
        sessionKey: S,
        runId: 'run-9',
      };
      const first = await store.toolCalls.begin(call, { path: 'a.md', before: 'absent', after: 'h1' }, 1000);
      expect(first).toMatchObject({
        earlier: false,
        record: { state: 'started', result: { path: 'a.md', before: 'absent', after: 'h1' } },
      });
      const again = await store.toolCalls.begin({ ...call, runId: 'run-10' }, { path: 'a.md', before: 'h1', after: 'h1' }, 2000);
      expect(again).toMatchObject({
        earlier: true,
        record: { state: 'started', firstRunId: 'run-9', result: { before: 'absent', after: 'h1' } },
      });
    });

    it('tool calls: recorded with the effect in its transaction, settled with the run commit; a rerun counts; another call at the position diverges', async () => {
      const call = {
        key: 'tc:in-1:0:0:sessions_send:aaaa',
        scope: 'in-1',
        step: 0,
        index: 0,
        tool: 'sessions_send',
        argsHash: 'aaaa',
        sessionKey: S,
        runId: 'run-1',
      };
      const rate = { bucket: 'tc-pair', windowMs: 60_000, max: 10 };
      // The effect (a guarded message) and the call are one transaction.
      await store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: call.key }), 1000, { rate, call });
      expect(await store.toolCalls.get(call.key)).toMatchObject({
        key: call.key,
        state: 'started',
        result: null,
        calls: 1,
        firstRunId: 'run-1',
        divergedFrom: null,
        createdAt: 1000,
      });
      // A refused effect records nothing.
      const refused = { ...call, key: 'tc:in-1:0:1:sessions_send:zzzz', index: 1 };
      await store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: refused.key }), 1001, {
        rate: { ...rate, max: 1 },
        call: refused,
      });
      expect(await store.toolCalls.get(refused.key)).toBeUndefined();

      const queued = await store.inputs.enqueue(newInput(S), 2000);
      const { runId, epoch } = await startRun([queued.input.id]);
      const rerun = { ...call, runId };
      const other = { ...call, key: 'tc:in-1:0:0:sessions_send:bbbb', argsHash: 'bbbb', runId };
      await store.runs.commit(
        {
          runId,
          sessionKey: S,
          epoch,
          outcome: { status: 'succeeded', usage, preambleChars: 0, promptChars: 0, finalText: 'ok' },
          transcript: [],
          outbox: [],
          events: [],
          consumedInputIds: [queued.input.id],
          toolCalls: [
            { call: rerun, result: { status: 'ok', reply: 'hi' }, rerun: true },
            { call: other, result: { status: 'accepted' }, rerun: false },
          ],
        },
        3000,
      );
      expect(await store.toolCalls.get(call.key)).toMatchObject({
        state: 'completed',
        result: { status: 'ok', reply: 'hi' },
        calls: 2,
        firstRunId: 'run-1',
        runId,
        updatedAt: 3000,
      });
      expect(await store.toolCalls.get(other.key)).toMatchObject({
        state: 'completed',
        result: { status: 'accepted' },
        calls: 1,
        divergedFrom: call.key,
        firstRunId: runId,
      });
      expect((await store.toolCalls.list({ sessionKey: S })).map((r) => r.key)).toEqual([call.key, other.key]);
      expect((await store.toolCalls.list({ runId: 'run-1' })).map((r) => r.key)).toEqual([call.key]);
      expect(await store.toolCalls.get('tc:none')).toBeUndefined();
    });

    it('tool calls: a spawn and an exchange record their call in their own transaction; a repeat writes no second row', async () => {
      const call = {
        key: 'tc:in-2:1:0:sessions_send:cccc',
        scope: 'in-2',
        step: 1,
        index: 0,
        tool: 'sessions_send',
        argsHash: 'cccc',
        sessionKey: S,
        runId: 'run-1',
      };
      const rate = { bucket: 'tc-ex', windowMs: 60_000, max: 10 };
      const input = newInput('agent:expert:main', { idempotencyKey: call.key });
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          store.exchanges.open(newExchange(`ex-tc${i}`), { ...input, id: id('in') }, 1000, { rate, call }),
        ),
      );
      expect(await store.toolCalls.list({ sessionKey: S })).toMatchObject([{ key: call.key, calls: 1 }]);
      expect(await store.exchanges.list({})).toHaveLength(1);
    });

    it('rate limits: concurrent guarded writes never pass the window, repeats are not counted, and the window slides', async () => {
      const rate = { bucket: 'pair:a:b', windowMs: 60_000, max: 2 };
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: `r-${i}` }), 10_000 + i, { rate }),
        ),
      );
      expect(results.filter((r) => 'limited' in r)).toHaveLength(4);
      expect(results.find((r) => 'limited' in r)).toEqual({ limited: { count: 2, oldestAt: expect.any(Number) } });
      expect(await store.inputs.list({ sessionKey: 'agent:expert:main' })).toHaveLength(2);
      const accepted = results.find((r) => !('limited' in r)) as { input: { idempotencyKey: string } };
      expect(
        await store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: accepted.input.idempotencyKey }), 20_000, { rate }),
      ).toMatchObject({ created: false });
      expect(await store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: 'later' }), 80_000, { rate })).toMatchObject({
        created: true,
      });
      const opened = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          store.exchanges.open(newExchange(`ex-r${i}`), newInput('agent:expert:main', { idempotencyKey: `x-${i}` }), 90_000 + i, {
            rate: { ...rate, bucket: 'pair:c:d' },
          }),
        ),
      );
      expect(opened.filter((r) => 'limited' in r)).toHaveLength(3);
      expect((await store.exchanges.list({})).length).toBe(2);
    });

    it('exchanges: a key already used by a plain input is refused, writing nothing', async () => {
      await store.inputs.enqueue(newInput('agent:expert:main', { idempotencyKey: 'plain' }), 1000);
      await expect(
        store.exchanges.open(newExchange('ex-p'), newInput('agent:expert:main', { idempotencyKey: 'plain' }), 1001),
      ).rejects.toMatchObject({
        code: 'IDEMPOTENCY_KEY_REUSED',
        message: expect.stringMatching(
          /^idempotency key "plain" was already used for input \S+ to agent:expert:main, stored with mode "followup" and no reply exchange; a key names one message, so use a new key for this one$/,
        ),
      });
      expect(await store.exchanges.get('ex-p')).toBeUndefined();
    });

    it('exchanges: transition is a compare-and-set on reply state and phase', async () => {
      await store.exchanges.open(newExchange('ex-c'), newInput('agent:expert:main'), 1000);
      const taken = await store.exchanges.transition(
        'ex-c',
        { replyStates: ['awaiting'] },
        { replyState: 'replied', replyText: 'answer', replyRunId: 'run-b', replyStatus: 'succeeded' },
        2000,
      );
      expect(taken.changed).toBe(true);
      expect(taken.exchange).toMatchObject({ replyState: 'replied', replyText: 'answer', replyRunId: 'run-b', updatedAt: 2000 });
      const late = await store.exchanges.transition('ex-c', { replyStates: ['awaiting'] }, { replyState: 'detached' }, 3000);
      expect(late.changed).toBe(false);
      expect(late.exchange.replyState).toBe('replied');
      const wrongPhase = await store.exchanges.transition('ex-c', { phases: ['ping_pong'] }, { phase: 'done' }, 3000);
      expect(wrongPhase.changed).toBe(false);
      expect(
        (await store.exchanges.transition('ex-c', { phases: ['request'] }, { phase: 'ping_pong', turn: 1 }, 3000)).exchange,
      ).toMatchObject({ phase: 'ping_pong', turn: 1 });
      expect((await store.exchanges.list({ replyStates: ['replied'], waiterRunId: 'run-a' })).map((e) => e.id)).toEqual(['ex-c']);
      expect(await store.exchanges.list({ replyStates: ['awaiting'] })).toEqual([]);
      expect((await store.exchanges.list({ requesterSession: S, targetSession: 'agent:expert:main' })).length).toBe(1);
    });

    it('exchanges: a move that lands journals its event with it; one that does not, or whose builder answers none, journals nothing', async () => {
      await store.exchanges.open(newExchange('ex-j'), newInput('agent:expert:main'), 1000);
      const journal = (moved: ExchangeRecord) => ({
        type: 'exchange.updated' as const,
        sessionKey: S,
        payload: { exchangeId: moved.id, phase: moved.phase, replyState: moved.replyState },
      });
      const moved = await store.exchanges.transition('ex-j', { replyStates: ['awaiting'] }, { replyState: 'replied' }, 2000, journal);
      expect(moved.changed).toBe(true);
      expect(moved.events).toEqual(await store.events.list({ sessionKey: S }));
      expect(moved.events.map((event) => [event.type, event.payload, event.createdAt])).toEqual([
        ['exchange.updated', { exchangeId: 'ex-j', phase: 'request', replyState: 'replied' }, 2000],
      ]);
      const late = await store.exchanges.transition('ex-j', { replyStates: ['awaiting'] }, { replyState: 'detached' }, 3000, journal);
      expect(late).toMatchObject({ changed: false, events: [] });
      const quiet = await store.exchanges.transition('ex-j', { phases: ['request'] }, { phase: 'done' }, 3000, () => undefined);
      expect(quiet).toMatchObject({ changed: true, events: [] });
      expect(await store.events.list({ sessionKey: S })).toHaveLength(1);
    });

    it('exchanges: list is oldest first, or the newest n with newest: true', async () => {
      for (const [index, exchangeId] of ['ex-1', 'ex-2', 'ex-3'].entries())
        await store.exchanges.open(newExchange(exchangeId), newInput('agent:expert:main'), 1000 + index);
      expect((await store.exchanges.list()).map((e) => e.id)).toEqual(['ex-1', 'ex-2', 'ex-3']);
      expect((await store.exchanges.list({ newest: true, limit: 2 })).map((e) => e.id)).toEqual(['ex-3', 'ex-2']);
      expect((await store.exchanges.list({ limit: 2 })).map((e) => e.id)).toEqual(['ex-1', 'ex-2']);
    });

    it('a2a tasks: save and attachInput upsert without clobbering each other; list filters; events replay in order', async () => {
      const base = { id: 't1', agentId: 'support', contextId: 'c1', owner: 'peer-a' };
      await store.a2aTasks.attachInput(base, 'agent:support:a2a:peer-a:c1', 'in-1', 'gw-1', 1000);
      expect(await store.a2aTasks.get('t1')).toMatchObject({
        state: 'TASK_STATE_SUBMITTED',
        sessionKey: 'agent:support:a2a:peer-a:c1',
        inputId: 'in-1',
        executor: 'gw-1',
      });
      const saved = await store.a2aTasks.save(
        {
          ...base,
          state: 'TASK_STATE_WORKING',
          task: { id: 't1', status: { state: 'TASK_STATE_WORKING' } },
          firstMessageId: 'm-1',
          statusAt: 1900,
        },
        2000,
      );
      expect(await store.a2aTasks.get('t1')).toMatchObject({
        state: 'TASK_STATE_WORKING',
        inputId: 'in-1',
        executor: 'gw-1',
        task: { status: { state: 'TASK_STATE_WORKING' } },
        createdAt: 1000,
        lastActivityAt: 2000,
      });
      // save answers the task as stored, without a read.
      expect(saved).toEqual(await store.a2aTasks.get('t1'));
      await store.a2aTasks.save(
        { id: 't2', agentId: 'support', contextId: 'c2', owner: 'peer-b', state: 'TASK_STATE_COMPLETED', task: {} },
        3000,
      );
      await store.a2aTasks.attachInput(
        { id: 't2', agentId: 'support', contextId: 'c2', owner: 'peer-b' },
        'agent:support:a2a:peer-b:c2',
        'in-2',
        'gw-2',
        3500,
      );
      expect(await store.a2aTasks.get('t2')).toMatchObject({ state: 'TASK_STATE_COMPLETED', inputId: 'in-2', executor: 'gw-2' });
      expect((await store.a2aTasks.list()).map((t) => t.id)).toEqual(['t2', 't1']);
      expect((await store.a2aTasks.list({ owner: 'peer-a' })).map((t) => t.id)).toEqual(['t1']);
      expect((await store.a2aTasks.list({ states: ['TASK_STATE_WORKING', 'TASK_STATE_SUBMITTED'] })).map((t) => t.id)).toEqual(['t1']);
      expect((await store.a2aTasks.list({ contextId: 'c2', limit: 1, offset: 0 })).map((t) => t.id)).toEqual(['t2']);
      await store.a2aTasks.appendEvent('t1', 'message', { text: 'hi' }, 1000);
      await store.a2aTasks.appendEvent('t1', 'state', { state: 'TASK_STATE_WORKING' }, 1001);
      expect((await store.a2aTasks.listEvents('t1')).map((e) => [e.type, e.detail, e.createdAt])).toEqual([
        ['message', { text: 'hi' }, 1000],
        ['state', { state: 'TASK_STATE_WORKING' }, 1001],
      ]);
      // The first message saved stays the task's; a retry of it is found by its sender and agent only.
      await store.a2aTasks.save(
        { ...base, state: 'TASK_STATE_COMPLETED', task: { id: 't1' }, firstMessageId: 'm-2', statusAt: 4000 },
        4000,
      );
      expect(await store.a2aTasks.get('t1')).toMatchObject({
        state: 'TASK_STATE_COMPLETED',
        firstMessageId: 'm-1',
        statusAt: 4000,
        inputId: 'in-1',
        createdAt: 1000,
      });
      expect((await store.a2aTasks.findByFirstMessage('support', 'peer-a', 'm-1'))?.id).toBe('t1');
      expect(await store.a2aTasks.findByFirstMessage('support', 'peer-b', 'm-1')).toBeUndefined();
      expect(await store.a2aTasks.findByFirstMessage('other', 'peer-a', 'm-1')).toBeUndefined();
      expect(await store.a2aTasks.findByFirstMessage('support', 'peer-a', 'm-2')).toBeUndefined();
      // Another owner of a context: none for its own peer, an unknown context or another agent; peer-a for peer-b.
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-a')).toBeUndefined();
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-b')).toBe('peer-a');
      expect(await store.a2aTasks.otherContextOwner('support', 'c9', 'peer-b')).toBeUndefined();
      expect(await store.a2aTasks.otherContextOwner('other', 'c1', 'peer-b')).toBeUndefined();
      await store.a2aTasks.save(
        { id: 't3', agentId: 'support', contextId: 'c1', owner: 'peer-a', state: 'TASK_STATE_WORKING', task: {} },
        5000,
      );
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-a')).toBeUndefined();
      await store.a2aTasks.save(
        { id: 't4', agentId: 'support', contextId: 'c1', owner: 'peer-b', state: 'TASK_STATE_WORKING', task: {} },
        5001,
      );
      // Two owners (two peers racing to open one context id): each sees the other.
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-a')).toBe('peer-b');
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-b')).toBe('peer-a');
    });

    it('a2a tasks: a save with a state change journals an a2a.task event with it; one without writes no event', async () => {
      const base = {
        id: 't9',
        agentId: 'support',
        contextId: 'c9',
        owner: 'peer-a',
        task: { id: 't9' },
        sessionKey: 'agent:support:a2a:peer-a:c9',
      };
      const before = await store.events.latestSeq();
      await store.a2aTasks.save({ ...base, state: 'TASK_STATE_WORKING' }, 1000, { from: null });
      await store.a2aTasks.save({ ...base, state: 'TASK_STATE_WORKING' }, 1100);
      await store.a2aTasks.save({ ...base, state: 'TASK_STATE_COMPLETED' }, 1200, { from: 'TASK_STATE_WORKING' });
      const events = await store.events.list({ afterSeq: before });
      expect(events.map((event) => [event.type, event.sessionKey, event.payload, event.createdAt])).toEqual([
        [
          'a2a.task',
          base.sessionKey,
          { taskId: 't9', agentId: 'support', peer: 'peer-a', contextId: 'c9', from: null, state: 'TASK_STATE_WORKING' },
          1000,
        ],
        [
          'a2a.task',
          base.sessionKey,
          { taskId: 't9', agentId: 'support', peer: 'peer-a', contextId: 'c9', from: 'TASK_STATE_WORKING', state: 'TASK_STATE_COMPLETED' },
          1200,
        ],
      ]);
      expect(await store.a2aTasks.get('t9')).toMatchObject({ state: 'TASK_STATE_COMPLETED' });
    });

    it('a2a tasks: a save with the session mapping records it in the same write; a later save without one keeps it; events are listed in the order written', async () => {
      const base = { id: 't3', agentId: 'support', contextId: 'c3', owner: 'peer-a' };
      await store.a2aTasks.save(
        {
          ...base,
          state: 'TASK_STATE_WORKING',
          task: { id: 't3' },
          firstMessageId: 'm-3',
          statusAt: 1000,
          sessionKey: 'agent:support:a2a:peer-a:c3',
          inputId: 'in-3',
          executor: 'gw-1',
        },
        1000,
      );
      const mapped = { sessionKey: 'agent:support:a2a:peer-a:c3', inputId: 'in-3', executor: 'gw-1' };
      expect(await store.a2aTasks.get('t3')).toMatchObject({ state: 'TASK_STATE_WORKING', ...mapped });
      const ended = await store.a2aTasks.save({ ...base, state: 'TASK_STATE_COMPLETED', task: { id: 't3' }, statusAt: 2000 }, 2000);
      expect(ended).toMatchObject({ state: 'TASK_STATE_COMPLETED', firstMessageId: 'm-3', ...mapped });
      expect(await store.a2aTasks.get('t3')).toMatchObject({ state: 'TASK_STATE_COMPLETED', ...mapped });
      await store.a2aTasks.appendEvent('t3', 'message', { text: 'hi' }, 2500);
      await store.a2aTasks.appendEvent('t3', 'state', { state: 'TASK_STATE_WORKING' }, 2500);
      await store.a2aTasks.appendEvent('t3', 'state', { state: 'TASK_STATE_COMPLETED' }, 3000);
      expect((await store.a2aTasks.listEvents('t3')).map((e) => [e.type, e.detail, e.createdAt])).toEqual([
        ['message', { text: 'hi' }, 2500],
        ['state', { state: 'TASK_STATE_WORKING' }, 2500],
        ['state', { state: 'TASK_STATE_COMPLETED' }, 3000],
      ]);
    });

    it('a2a tasks: a save with events adds them to the replay log in its transaction, with or without a state change', async () => {
      const base = { id: 't4', agentId: 'support', contextId: 'c4', owner: 'peer-a', task: { id: 't4' } };
      const working = await store.a2aTasks.save(
        {
          ...base,
          state: 'TASK_STATE_WORKING',
          events: [
            { type: 'message', detail: { text: 'hi' } },
            { type: 'state', detail: { state: 'TASK_STATE_WORKING' } },
          ],
        },
        1000,
        { from: null },
      );
      expect(working).not.toHaveProperty('events');
      await store.a2aTasks.save({ ...base, state: 'TASK_STATE_WORKING', events: [{ type: 'note', detail: { n: 1 } }] }, 1500);
      await store.a2aTasks.save({ ...base, state: 'TASK_STATE_COMPLETED', events: [] }, 1800);
      // One transaction: an event that cannot be written takes the task's write back with it.
      await expect(
        store.a2aTasks.save({ ...base, state: 'TASK_STATE_FAILED', events: [{ type: 'lost', detail: 1n }] }, 1900, {
          from: 'TASK_STATE_COMPLETED',
        }),
      ).rejects.toThrow(/BigInt/);
      expect((await store.a2aTasks.listEvents('t4')).map((e) => [e.type, e.detail, e.createdAt])).toEqual([
        ['message', { text: 'hi' }, 1000],
        ['state', { state: 'TASK_STATE_WORKING' }, 1000],
        ['note', { n: 1 }, 1500],
      ]);
      expect(await store.a2aTasks.get('t4')).toMatchObject({ state: 'TASK_STATE_COMPLETED' });
    });

    it("a2a push rows: written in the task's order, each listed after the one before even in the same millisecond; nothing but a final state after a final one", async () => {
      await store.a2aTasks.save(
        { id: 'tp', agentId: 'support', contextId: 'c1', owner: 'peer-a', state: 'TASK_STATE_WORKING', task: {} },
        1000,
      );
      const row = (n: number) => ({
        id: `push-${n}`,
        kind: 'a2a.push',
        target: 'https://hook',
        payload: { n },
        idempotencyKey: `push:tp:${n}`,
      });
      expect(await store.a2aTasks.enqueuePush('tp', { state: 'TASK_STATE_WORKING', final: false }, [row(1)], 2000)).toBe(true);
      expect(await store.a2aTasks.enqueuePush('tp', { state: null, final: false }, [row(2)], 2000)).toBe(true);
      // A clock behind the one that wrote before still lists it later.
      expect(await store.a2aTasks.enqueuePush('tp', { state: 'TASK_STATE_COMPLETED', final: true }, [row(3)], 1500)).toBe(true);
      expect(await store.a2aTasks.enqueuePush('tp', { state: 'TASK_STATE_WORKING', final: false }, [row(4)], 5000)).toBe(false);
      // A final state is the last word: a late, different final state (a paused gateway's failed) is refused too.
      expect(await store.a2aTasks.enqueuePush('tp', { state: 'TASK_STATE_FAILED', final: true }, [row(5)], 5000)).toBe(false);
      expect(await store.a2aTasks.enqueuePush('tp', { state: 'TASK_STATE_COMPLETED', final: true }, [row(6)], 5000)).toBe(true);
      const due = await store.outbox.listDue(10_000, 100);
      expect(due.map((r) => [r.id, r.createdAt])).toEqual([
        ['push-1', 2000],
        ['push-2', 2001],
        ['push-3', 2002],
        ['push-6', 5000],
      ]);
      expect((await store.a2aTasks.listEvents('tp')).map((event) => [event.type, event.detail])).toEqual([
        ['push.queued', { state: 'TASK_STATE_WORKING', rows: 1 }],
        ['push.queued', { state: null, rows: 1 }],
        ['push.final', { state: 'TASK_STATE_COMPLETED', rows: 1 }],
        ['push.final', { state: 'TASK_STATE_COMPLETED', rows: 1 }],
      ]);
    });

    it('a2a push configs: saved by task and id, replaced on a repeated id, deleted one or all', async () => {
      const config = (configId: string, url: string) => ({
        taskId: 't1',
        configId,
        owner: 'peer-a',
        config: { id: configId, url },
        wireVersion: '1.0',
      });
      await store.a2aTasks.savePushConfig(config('p1', 'https://a.example/hook'), 1000);
      await store.a2aTasks.savePushConfig(config('p2', 'https://b.example/hook'), 1001);
      await store.a2aTasks.savePushConfig(config('p1', 'https://c.example/hook'), 1002);
      expect((await store.a2aTasks.listPushConfigs('t1')).map((c) => [c.configId, (c.config as { url: string }).url])).toEqual([
        ['p1', 'https://c.example/hook'],
        ['p2', 'https://b.example/hook'],
      ]);
      await store.a2aTasks.deletePushConfig('t1', 'p2');
      expect((await store.a2aTasks.listPushConfigs('t1')).map((c) => c.configId)).toEqual(['p1']);
      await store.a2aTasks.deletePushConfig('t1');
      expect(await store.a2aTasks.listPushConfigs('t1')).toEqual([]);
    });

    it('a2a remote tasks: saved, updated by task id, and listed while their result is still owed', async () => {
      const task = {
        taskId: 'r1',
        remote: 'partner',
        contextId: 'c1',
        sessionKey: S,
        state: 'waiting' as const,
        remoteState: 'TASK_STATE_WORKING',
        pushToken: null,
        waiterRunId: 'run-1',
        result: null,
        createdAt: 0,
        updatedAt: 0,
      };
      await store.a2aTasks.saveRemoteTask({ ...task, conversation: { id: 'c-1', hop: 2 } }, 1000);
      await store.a2aTasks.saveRemoteTask({ ...task, taskId: 'r2', state: 'returned', result: { text: 'done' } }, 1001);
      expect((await store.a2aTasks.listRemoteTasks({ states: ['waiting', 'followed'] })).map((t) => t.taskId)).toEqual(['r1']);
      expect(await store.a2aTasks.listRemoteTasks({ states: ['returned'], waiterRunId: 'run-1' })).toMatchObject([
        { taskId: 'r2', result: { text: 'done' } },
      ]);
      expect(await store.a2aTasks.listRemoteTasks({ states: ['returned'], waiterRunId: 'run-2' })).toEqual([]);
      await store.a2aTasks.saveRemoteTask({ ...task, state: 'delivered', remoteState: 'TASK_STATE_COMPLETED', pushToken: 'secret' }, 2000);
      expect(await store.a2aTasks.getRemoteTask('r1')).toMatchObject({
        state: 'delivered',
        remoteState: 'TASK_STATE_COMPLETED',
        pushToken: 'secret',
        // The hop budget's conversation, set by the send that made the task, is kept by later saves.
        conversation: { id: 'c-1', hop: 2 },
        createdAt: 1000,
        updatedAt: 2000,
      });
      expect((await store.a2aTasks.getRemoteTask('r2'))!.conversation).toBeNull();
      expect(await store.a2aTasks.listRemoteTasks({ states: ['waiting', 'followed'] })).toEqual([]);
    });

    describe('sub-agents', () => {
      const child = 'agent:support:subagent:c1';
      const spawnChild = (overrides: Partial<NewSubagent> = {}, now = 3000) =>
        store.subagents.spawn(
          {
            id: 'c1',
            sessionKey: child,
            parentSession: S,
            rootSession: S,
            agentId: 'support',
            depth: 1,
            role: 'leaf',
            label: 'helper',
            task: 'do it',
            correlationId: 'corr-1',
            firstRunId: 'run-c1',
            model: null,
            tools: ['time_now'],
            timeoutSeconds: 60,
            workdir: null,
            worktree: null,
            ...overrides,
          },
          newInput(overrides.sessionKey ?? child, {
            idempotencyKey: `spawn:${overrides.id ?? 'c1'}`,
            provenance: { kind: 'subagent_task', sourceSession: S },
          }),
          now,
        );

      async function runChild(finalText: string | null, status: 'succeeded' | 'failed' = 'succeeded') {
        const [input] = await store.inputs.listQueued(child);
        const runId = id('run');
        const started = await store.runs.start(
          {
            id: runId,
            sessionKey: child,
            agentId: 'support',
            owner: 'gw-1',
            leaseTtlMs: 30_000,
            model: 'scripted/x',
            inputIds: [input.id],
            subagentId: 'c1',
          },
          4000,
        );
        if (typeof started === 'string') throw new Error(`the child's run did not start: ${started}`);
        expect(started.inputs).toHaveLength(1);
        await store.runs.commit(
          {
            runId,
            sessionKey: child,
            epoch: started.epoch,
            outcome: { status, usage, preambleChars: 0, promptChars: 0, finalText, errorMessage: status === 'failed' ? 'boom' : null },
            transcript: [],
            consumedInputIds: [input.id],
            outbox: [],
            events: [],
            subagent: { id: 'c1', error: status === 'failed' ? 'boom' : null, maxResultChars: 1000 },
          },
          5000,
        );
        return runId;
      }

      it('spawn stores the session, the sub-agent and its task in one transaction; a repeated correlation id writes nothing', async () => {
        const first = await spawnChild();
        expect(first.created).toBe(true);
        expect(first.subagent).toMatchObject({
          id: 'c1',
          state: 'pending',
          history: [{ state: 'pending', at: 3000 }],
          tools: ['time_now'],
          completion: null,
          waiting: false,
        });
        expect(await store.sessions.get(child)).toMatchObject({ parentKey: S, depth: 1, label: 'helper' });
        expect(await store.inputs.listQueued(child)).toHaveLength(1);
        const again = await spawnChild({ id: 'c2', sessionKey: 'agent:support:subagent:c2' });
        expect(again).toMatchObject({ created: false, subagent: { id: 'c1' } });
        expect(await store.sessions.get('agent:support:subagent:c2')).toBeUndefined();
        expect(await store.subagents.findByCorrelation(S, 'corr-1')).toMatchObject({ id: 'c1' });
        expect(await store.subagents.count({ parentSession: S, states: ['pending', 'running'] })).toBe(1);
      });

      it('noteRetry notes the retry of an interrupted run once: a second note for that run, or for a run it is not on, writes nothing', async () => {
        await spawnChild();
        const [input] = await store.inputs.listQueued(child);
        const started = await store.runs.start(
          {
            id: 'run-c1',
            sessionKey: child,
            agentId: 'support',
            owner: 'gw-1',
            leaseTtlMs: 30_000,
            model: 'm',
            inputIds: [input!.id],
            subagentId: 'c1',
          },
          4000,
        );
        if (typeof started === 'string') throw new Error(started);
        await store.runs.recoverOrphans({ recoverer: 'gw-1', scope: 'own', diagnostic: () => 'stopped', maxRetries: 1 }, 4500);
        expect(await store.subagents.noteRetry('c1', 'run-c1', 'stopped', 5000)).toBe(true);
        expect(await store.subagents.noteRetry('c1', 'run-c1', 'stopped', 5001)).toBe(false);
        expect(await store.subagents.noteRetry('c1', 'run-other', 'stopped', 5002)).toBe(false);
        const record = await store.subagents.get('c1');
        expect(record).toMatchObject({ attempts: 1, retryOf: 'run-c1', runId: 'run-c1', state: 'running' });
        expect(record!.history.filter((step) => step.state === 'interrupted')).toHaveLength(1);
      });

      it('spawn with limits: concurrent spawns of one parent never pass maxLive; a repeated correlation id is answered, not refused', async () => {
        const guarded = (i: number) =>
          store.subagents.spawn(
            {
              id: `g${i}`,
              sessionKey: `agent:support:subagent:g${i}`,
              parentSession: S,
              rootSession: S,
              agentId: 'support',
              depth: 1,
              role: 'leaf',
              label: null,
              task: 'do it',
              correlationId: `corr-g${i}`,
              firstRunId: `run-g${i}`,
              model: null,
              tools: [],
              timeoutSeconds: 60,
              workdir: null,
              worktree: null,
            },
            newInput(`agent:support:subagent:g${i}`, {
              idempotencyKey: `spawn:g${i}`,
              provenance: { kind: 'subagent_task', sourceSession: S },
            }),
            3000,
            { maxLive: 2 },
          );
        const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => guarded(i)));
        expect(outcomes.filter((o) => 'refused' in o)).toHaveLength(4);
        expect(outcomes.find((o) => 'refused' in o)).toEqual({ refused: { live: 2 } });
        expect(await store.subagents.count({ parentSession: S, states: ['pending', 'running'] })).toBe(2);
        const winner = outcomes.findIndex((o) => !('refused' in o));
        expect(await guarded(winner)).toMatchObject({ created: false, subagent: { id: `g${winner}` } });
      });

      it("a run's start marks it running; its commit settles it with the frozen result, usage and the completion outbox row", async () => {
        await spawnChild();
        const runId = await runChild('x'.repeat(1500));
        const record = (await store.subagents.get('c1'))!;
        expect(record).toMatchObject({
          state: 'succeeded',
          runId,
          startedAt: 4000,
          settledAt: 5000,
          resultChars: 1500,
          completion: 'pending',
        });
        expect(record.result).toHaveLength(1000);
        expect(record.usage).toEqual({ inputTokens: 3, outputTokens: 5, modelCalls: 1, runs: 1, durationMs: 1000 });
        expect(record.history.map((step) => step.state)).toEqual(['pending', 'running', 'succeeded']);
        const [row] = (await store.outbox.list()).filter((candidate) => candidate.kind === 'subagent.completion');
        expect(row).toMatchObject({
          target: S,
          idempotencyKey: `completion:${child}:${runId}`,
          payload: { subagentId: 'c1', status: 'succeeded', truncated: true, resultHash: record.resultHash },
        });
        expect(await store.subagents.countUndelivered(S)).toBe(1);
        await store.subagents.markCompletion('c1', 'delivered', 6000);
        expect(await store.subagents.countUndelivered(S)).toBe(0);
      });

      it('reopen: a settled sub-agent whose completion went out is live again with its follow-up task; a repeat writes nothing', async () => {
        await spawnChild();
        const firstRun = await runChild('first');
        const task = newInput(child, { idempotencyKey: 'followup:c1:k1', provenance: { kind: 'subagent_task', sourceSession: S } });
        expect(await store.subagents.reopen('c1', task, 5500, { maxLive: 5 })).toMatchObject({ delivering: { id: 'c1' } });
        await store.subagents.markCompletion('c1', 'delivered', 6000);
        expect(await store.subagents.reopen('c1', task, 6500, { maxLive: 0 })).toEqual({ refused: { live: 0 } });
        const reopened = await store.subagents.reopen('c1', task, 7000, { maxLive: 5 });
        expect(reopened).toMatchObject({
          created: true,
          reopened: true,
          subagent: { state: 'pending', completion: null, settledAt: null },
        });
        expect(await store.subagents.countUndelivered(S)).toBe(1);
        expect(await store.subagents.reopen('c1', task, 7500, { maxLive: 5 })).toMatchObject({ created: false, reopened: false });
        expect(await store.inputs.listQueued(child)).toHaveLength(1);
        const secondRun = await runChild('second');
        expect(await store.subagents.get('c1')).toMatchObject({
          state: 'succeeded',
          result: 'second',
          completion: 'pending',
          runId: secondRun,
        });
        const rows = (await store.outbox.list()).filter((candidate) => candidate.kind === 'subagent.completion');
        expect(rows.map((row) => row.idempotencyKey).sort()).toEqual(
          [`completion:${child}:${firstRun}`, `completion:${child}:${secondRun}`].sort(),
        );
      });

      it('reopen refuses a cancelled sub-agent, and an archived one whose worktree was removed, writing nothing', async () => {
        await spawnChild({ worktree: { path: '/tmp/wt-c1', branch: 'switchboard/subagent-c1', repo: '/tmp/repo' } });
        await runChild('done');
        await store.subagents.markCompletion('c1', 'delivered', 6000);
        await store.subagents.markArchived('c1', 7000);
        const task = newInput(child, { idempotencyKey: 'followup:c1:k2', provenance: { kind: 'subagent_task', sourceSession: S } });
        expect(await store.subagents.reopen('c1', task, 8000, { maxLive: 5 })).toMatchObject({ closed: 'archived' });
        const other = 'agent:support:subagent:c3';
        await spawnChild({ id: 'c3', sessionKey: other, correlationId: 'corr-3' });
        await store.subagents.settle(
          'c3',
          { state: 'cancelled', diagnostic: 'killed', text: null, notifyParent: false, maxResultChars: 100 },
          8000,
        );
        const toOther = newInput(other, { idempotencyKey: 'followup:c3:k1', provenance: { kind: 'subagent_task', sourceSession: S } });
        expect(await store.subagents.reopen('c3', toOther, 8500, { maxLive: 5 })).toMatchObject({ closed: 'cancelled' });
        expect(await store.inputs.listQueued(child)).toHaveLength(0);
        expect(await store.inputs.listQueued(other)).toHaveLength(1);
      });

      it("ids as the gateway makes them (UUIDs): a child's run commits and its completion row is stored (PostgreSQL enforces lengths)", async () => {
        const subagentId = randomUUID();
        const runId = randomUUID();
        const session = `agent:support:subagent:${subagentId}`;
        await spawnChild({ id: subagentId, sessionKey: session, firstRunId: runId, correlationId: randomUUID() });
        const [input] = await store.inputs.listQueued(session);
        const started = await store.runs.start(
          {
            id: runId,
            sessionKey: session,
            agentId: 'support',
            owner: `gw-${randomUUID()}`,
            leaseTtlMs: 30_000,
            model: 'm',
            inputIds: [input!.id],
            subagentId,
          },
          4000,
        );
        if (typeof started === 'string') throw new Error(started);
        await store.runs.commit(
          {
            runId,
            sessionKey: session,
            epoch: started.epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 0, promptChars: 0, finalText: 'done' },
            transcript: [],
            consumedInputIds: [input!.id],
            outbox: [],
            events: [],
            subagent: { id: subagentId, error: null, maxResultChars: 1000 },
          },
          5000,
        );
        expect(await store.outbox.get(`completion-${subagentId}-${runId}`)).toMatchObject({
          idempotencyKey: `completion:${session}:${runId}`,
        });
      });

      it('a run that ends while the sub-agent still has children out freezes its answer instead of settling', async () => {
        await spawnChild();
        await store.subagents.spawn(
          {
            id: 'g1',
            sessionKey: `${child}:subagent:g1`,
            parentSession: child,
            rootSession: S,
            agentId: 'support',
            depth: 2,
            role: 'leaf',
            label: null,
            task: 't',
            correlationId: 'g',
            firstRunId: 'run-g1',
            model: null,
            tools: [],
            timeoutSeconds: 60,
            workdir: null,
            worktree: null,
          },
          newInput(`${child}:subagent:g1`),
          3500,
        );
        // Listed by spawn time (the collaboration map's window).
        expect((await store.subagents.list({ createdSince: 3500 })).map((row) => row.id)).toEqual(['g1']);
        expect((await store.subagents.list({ createdSince: 3000 })).map((row) => row.id)).toEqual(['c1', 'g1']);
        await runChild('first answer');
        expect(await store.subagents.get('c1')).toMatchObject({
          state: 'running',
          waiting: true,
          frozenText: 'first answer',
          completion: null,
        });
        expect((await store.outbox.list()).filter((row) => row.kind === 'subagent.completion')).toEqual([]);
      });

      it("handOver stores the parent's input and marks the completion in one transaction, from what the parent is doing", async () => {
        await spawnChild();
        await store.subagents.spawn(
          {
            id: 'g1',
            sessionKey: `${child}:subagent:g1`,
            parentSession: child,
            rootSession: S,
            agentId: 'support',
            depth: 2,
            role: 'leaf',
            label: null,
            task: 't',
            correlationId: 'g1',
            firstRunId: 'run-g1',
            model: null,
            tools: [],
            timeoutSeconds: 60,
            workdir: null,
            worktree: null,
          },
          newInput(`${child}:subagent:g1`, { idempotencyKey: 'spawn:g1' }),
          3500,
        );
        await store.subagents.spawn(
          {
            id: 'g2',
            sessionKey: `${child}:subagent:g2`,
            parentSession: child,
            rootSession: S,
            agentId: 'support',
            depth: 2,
            role: 'leaf',
            label: null,
            task: 't',
            correlationId: 'g2',
            firstRunId: 'run-g2',
            model: null,
            tools: [],
            timeoutSeconds: 60,
            workdir: null,
            worktree: null,
          },
          newInput(`${child}:subagent:g2`, { idempotencyKey: 'spawn:g2' }),
          3500,
        );
        await runChild('waiting for both');
        const seen: ParentFacts[] = [];
        const build = (key: string) => (facts: ParentFacts) => (seen.push(facts), newInput(child, { idempotencyKey: key, mode: 'notify' }));
        // Both at once (as two gateways' outboxes could): one of them is the last in and sees no other out.
        const [first, last] = await Promise.all([
          store.subagents.handOver('g1', 'delivered', 6000, build('completion:g1')),
          store.subagents.handOver('g2', 'dead', 6100, build('completion:g2')),
        ]);
        expect(first).toMatchObject({ created: true, input: { sessionKey: child, idempotencyKey: 'completion:g1', status: 'queued' } });
        expect(await store.subagents.get('g1')).toMatchObject({ completion: 'delivered', updatedAt: 6000 });
        expect(last.created).toBe(true);
        expect(seen.map((facts) => facts.others).sort()).toEqual([0, 1]);
        expect(seen.every((facts) => facts.waiting)).toBe(true);
        expect(await store.subagents.get('g2')).toMatchObject({ completion: 'dead' });
        expect(await store.subagents.countUndelivered(child)).toBe(0);
        // Handed over again (a retried delivery): the same input, nothing new.
        expect(await store.subagents.handOver('g1', 'delivered', 6200, build('completion:g1'))).toMatchObject({
          created: false,
          input: { id: first.input.id },
        });
        expect(seen.at(-1)).toEqual({ waiting: true, others: 0 });
        // A child of a top-level session: its parent is no sub-agent, so it never waits.
        await store.subagents.settle(
          'c1',
          { state: 'succeeded', diagnostic: null, text: 'done', notifyParent: true, maxResultChars: 1000 },
          6300,
        );
        await store.subagents.handOver('c1', 'delivered', 6400, build('completion:c1'));
        expect(seen.at(-1)).toEqual({ waiting: false, others: 0 });
      });

      it('settle is a compare-and-set: it drops queued inputs once, and a second settle writes nothing', async () => {
        await spawnChild();
        const settled = await store.subagents.settle(
          'c1',
          {
            state: 'cancelled',
            diagnostic: 'killed',
            text: null,
            dropNote: 'dropped: cancelled',
            notifyParent: false,
            maxResultChars: 1000,
          },
          4000,
        );
        expect(settled).toMatchObject({ state: 'cancelled', diagnostic: 'killed', completion: 'skipped' });
        expect((await store.inputs.list({ sessionKey: child }))[0]).toMatchObject({ status: 'dropped', note: 'dropped: cancelled' });
        expect(
          await store.subagents.settle(
            'c1',
            { state: 'failed', diagnostic: 'x', text: null, notifyParent: true, maxResultChars: 1000 },
            5000,
          ),
        ).toBeUndefined();
        expect(await store.subagents.get('c1')).toMatchObject({ state: 'cancelled' });
        expect(await store.outbox.list()).toEqual([]);
        await store.subagents.markArchived('c1', 6000);
        expect(await store.sessions.get(child)).toMatchObject({ state: 'archived' });
        expect(await store.subagents.list({ settledBefore: 10_000 })).toEqual([]);
      });
    });
  });
}
