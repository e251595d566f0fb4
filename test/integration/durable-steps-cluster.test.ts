/**
 * Durable steps across gateways (ARCHITECTURE.md 4.7): two gateway processes on one PostgreSQL schema. In each of 20
 * rounds, a five-step run on gateway A is cut by a SIGKILL of A at a random point; A stays down, so gateway B takes the
 * run over once its lease expires and resumes it from its last committed step. Every run ends succeeded, the model was asked at most once per
 * step plus once for the step in flight, and the transcript is the one a run without a kill leaves.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster } from '../helpers/cluster.js';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { STEPS, stepOf, stepperAnswer, transcriptShape } from '../helpers/stepper-model.js';
import { waitUntil } from '../helpers/wait.js';
import type { RunRecord, TranscriptEntry } from '../../src/ports/index.js';

const schema = `sb_steps_cluster_${process.pid}`;
const ROUNDS = 20;

if (process.env.CI || (await postgresReachable())) {
  describe('durable steps on PostgreSQL: the other gateway resumes a run after its lease expires', async () => {
    const provider = await new FakeProviderServer().start();
    provider.responder = stepperAnswer;
    provider.delayMs = 60;
    const cluster = new Cluster(
      `{
        store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },
        lanes: { leaseTtlSeconds: 2 },
        agents: { list: [{ id: "stepper", model: "fake/m" }] },
        models: { providers: { fake: { type: "openai-compatible", baseURL: "${provider.url}/v1" } } },
      }`,
      2,
    );
    afterAll(async () => {
      await cluster.stop();
      await provider.close();
      await dropSchemas(schema);
    });
    const callsFor = (task: string) => provider.requests.filter((request) => stepOf(request.body).task === task).length;

    it('each run, its gateway killed at a random point, is resumed by the other and succeeds as if never cut', async () => {
      await cluster.start();
      const [idA, idB] = cluster.ids;
      const sessions = new Map<string, string>();
      const runOf = async (task: string) => {
        const { body } = await cluster.request<{ runs: RunRecord[] }>(
          'GET',
          `/v1/runs?sessionKey=${encodeURIComponent(sessions.get(task)!)}`,
        );
        return body.runs.find((run) => run.status === 'succeeded');
      };
      const transcript = async (task: string) =>
        (await cluster.request<{ entries: TranscriptEntry[] }>('GET', `/v1/sessions/${encodeURIComponent(sessions.get(task)!)}/history`))
          .body.entries;
      const send = async (task: string) => {
        const a = cluster.members[0]!;
        const sent = await a.request<{ sessionKey: string }>('POST', '/v1/send', {
          target: 'stepper',
          peer: task,
          message: `do task ${task}`,
          idempotencyKey: task,
        });
        expect(sent.status).toBe(200);
        sessions.set(task, sent.body.sessionKey);
      };

      await send('t0');
      await waitUntil('the reference run succeeded', async () => (await runOf('t0')) !== undefined, 30_000);
      const expected = transcriptShape(await transcript('t0'), 't0');
      let takenOver = 0;
      for (let i = 1; i <= ROUNDS; i += 1) {
        const task = `t${i}`;
        await send(task);
        await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * (STEPS + 1) * 70)));
        await cluster.kill(0, true);
        let run: RunRecord | undefined;
        await waitUntil(
          `${task} succeeded on gateway B`,
          async () => {
            run = await runOf(task);
            return run !== undefined;
          },
          30_000,
        );
        if (run!.owner === idB && run!.attempt > 1) takenOver += 1;
        expect([idA, idB]).toContain(run!.owner);
        expect(callsFor(task), `model calls of ${task} (attempt ${run!.attempt})`).toBeLessThanOrEqual(STEPS + 2);
        expect(transcriptShape(await transcript(task), task)).toBe(expected);
        await cluster.restart(0);
      }
      // Most kills land after a step committed: B resumed those runs under their own ids.
      expect(takenOver).toBeGreaterThan(0);
    }, 240_000);
  });
}
