/**
 * On PostgreSQL a run's start hands back the history the run reads next (StartedRun.history, migration 0020) and its
 * session (StartedRun.session, 0021), so a run makes no read of its own for them: the same entries `transcript.list`
 * gives, and a gateway's runs use them. A send opens its session with its input and hands the lane the session's
 * queue (0021), so that a waited send makes no read of its own: the accept, the start and the commit.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { newInput as input, newRunId, usage } from '../helpers/inputs.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

if (process.env.CI || (await postgresReachable())) {
  describe('a run start on PostgreSQL', () => {
    const schemas: string[] = [];
    const open = () => {
      const schema = `sb_start_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      return PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 2 });
    };
    afterAll(async () => {
      await dropSchemas(...schemas);
    });

    it('hands back the newest historyLimit entries, oldest first, as transcript.list gives them', async () => {
      const store = await open();
      try {
        const S = 'agent:w:main';
        await store.sessions.ensure({ key: S, agentId: 'w' }, 1000);
        const start = async (historyLimit?: number) => {
          const { input: queued } = await store.inputs.enqueue(input(S), 1000);
          const runId = newRunId();
          const started = await store.runs.start(
            { id: runId, sessionKey: S, agentId: 'w', owner: 'gw', leaseTtlMs: 60_000, model: 'm', inputIds: [queued.id], historyLimit },
            2000,
          );
          if (typeof started === 'string') throw new Error(`the run did not start: ${started}`);
          return { runId, started, inputId: queued.id };
        };
        const first = await start(5);
        expect(first.started.history).toEqual([]);
        expect(first.started.reachedOut).toEqual(await store.sessions.reachedOut(S));
        await store.runs.commit(
          {
            runId: first.runId,
            sessionKey: S,
            epoch: first.started.epoch,
            outcome: { status: 'succeeded', usage, preambleChars: 0, promptChars: 0, finalText: 'ok' },
            transcript: [
              { role: 'user', content: 'one', provenance: { kind: 'user' }, inputId: first.inputId, runId: first.runId },
              { role: 'assistant', content: [{ type: 'text', text: 'two' }], provenance: null, inputId: null, runId: first.runId },
              { role: 'user', content: 'three', provenance: null, inputId: null, runId: first.runId },
            ],
            consumedInputIds: [first.inputId],
            outbox: [],
            events: [],
          },
          3000,
        );
        // A child of the session: the next start says the session has spawned.
        await store.sessions.ensure({ key: 'agent:w:subagent:child', agentId: 'w', parentKey: S, depth: 1 }, 3000);
        const second = await start(2);
        expect(second.started.history).toEqual(await store.transcript.list(S, { limit: 2 }));
        expect(second.started.history?.map((entry) => entry.content)).toEqual([[{ type: 'text', text: 'two' }], 'three']);
        expect(second.started.reachedOut).toEqual({ spawned: true, sent: false });
        // Without a limit the start reads nothing more.
        const other = 'agent:w:other';
        await store.sessions.ensure({ key: other, agentId: 'w' }, 1000);
        const { input: queued } = await store.inputs.enqueue(input(other), 1000);
        const plain = await store.runs.start(
          {
            id: newRunId(),
            sessionKey: other,
            agentId: 'w',
            owner: 'gw',
            leaseTtlMs: 60_000,
            model: 'm',
            inputIds: [queued.id],
          },
          2000,
        );
        expect(typeof plain !== 'string' && plain.history).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it("a gateway's sends and runs read no session, and runs take their history and the tool offer's facts from the start", async () => {
      const store = await open();
      const { config } = parseConfigText(
        `{ agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`,
        '/test.json5',
        {},
      );
      const gateway = await startGateway({ config, store, gatewayId: 'gw-history' });
      try {
        const reads = vi.spyOn(store.transcript, 'list');
        const facts = vi.spyOn(store.sessions, 'reachedOut');
        const sessions = vi.spyOn(store.sessions, 'get');
        const plans = vi.spyOn(store.inputs, 'listQueuedForPlan');
        const replies = [];
        const runs = [];
        for (const message of ['first message', 'second']) {
          const sent = await gateway.send({ target: 'echo', message, waiting: true });
          const result = await gateway.waitForInput(sent.input.id, 10_000, true);
          if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
          replies.push(result.reply);
          runs.push(result.run);
        }
        expect(replies).toEqual(['echo: first message', 'echo: second']);
        expect(reads).not.toHaveBeenCalled();
        expect(facts).not.toHaveBeenCalled();
        // The send opened the session with its input, and the run's start handed the session back.
        expect(sessions).not.toHaveBeenCalled();
        // The send handed the lane the session's queue, and each commit said nothing was left in it.
        expect(plans).not.toHaveBeenCalled();
        // The second run's prompt held the first exchange: its history came with its start.
        expect(runs[1]!.promptChars - runs[0]!.promptChars).toBeGreaterThanOrEqual('first message'.length + 'echo: first message'.length);
      } finally {
        await gateway.stop();
        await store.close();
      }
    });

    it('an input that opens its session hands back the queue when it is shorter than the plan head, and only then', async () => {
      const store = await open();
      try {
        const S = 'agent:w:api:direct:ann';
        const opening = { key: S, agentId: 'w', route: { channel: 'api', peer: 'ann' }, create: true };
        const one = await store.inputs.enqueueOpening(opening, input(S), 1000, { planHead: 3 });
        if (one === 'missing') throw new Error('refused');
        expect(one.queued).toEqual(await store.inputs.listQueuedForPlan(S, 3));
        expect(one.queued?.map((queued) => queued.id)).toEqual([one.input.id]);
        const two = await store.inputs.enqueueOpening(opening, input(S), 1000, { planHead: 3 });
        expect(two !== 'missing' && two.queued?.length).toBe(2);
        // As deep as the head: the lane reads the queue itself (listQueuedForPlan reads past the head).
        const three = await store.inputs.enqueueOpening(opening, input(S), 1000, { planHead: 3 });
        expect(three !== 'missing' && three.queued).toBeUndefined();
        // Without a plan head, or for an input that was there already, nothing is read.
        expect(await store.inputs.enqueueOpening(opening, input(S), 1000)).not.toHaveProperty('queued');
        const again = await store.inputs.enqueueOpening(opening, { ...input(S), idempotencyKey: one.input.idempotencyKey }, 1000, {
          planHead: 9,
        });
        expect(again).toEqual({ input: one.input, created: false });
      } finally {
        await store.close();
      }
    });

    it('a lane that took the queue from a send still runs what was sent during a run, and is interrupted by an interrupt', async () => {
      const store = await open();
      const { config } = parseConfigText(
        `{ agents: { list: [{ id: "w", model: "scripted/w" }] }, models: { providers: { scripted: { type: "scripted", models: {
          w: { rules: [{ match: "slow", delayMs: 400, reply: "slow done" }, { reply: "got: {{inputs}}" }] } } } } } }`,
        '/test.json5',
        {},
      );
      const gateway = await startGateway({ config, store, gatewayId: 'gw-lanes' });
      try {
        const slow = await gateway.send({ target: 'w', message: 'slow' });
        await waitUntil('the slow run is active', () => gateway.status().activeRuns.length === 1);
        const next = await gateway.send({ target: 'w', message: 'next' });
        expect(await gateway.waitForInput(slow.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'slow done' });
        expect(await gateway.waitForInput(next.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'got: next' });
        const long = await gateway.send({ target: 'w', message: 'slow again' });
        await waitUntil('the second slow run is active', () => gateway.status().activeRuns.length === 1);
        const interrupt = await gateway.send({ target: 'w', message: 'stop that', mode: 'interrupt' });
        expect(await gateway.waitForInput(long.input.id, 5000)).toMatchObject({ status: 'completed', run: { status: 'interrupted' } });
        expect(await gateway.waitForInput(interrupt.input.id, 5000)).toMatchObject({ status: 'completed', reply: 'got: stop that' });
      } finally {
        await gateway.stop();
        await store.close();
      }
    });
  });
} else {
  describe('a run start on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
