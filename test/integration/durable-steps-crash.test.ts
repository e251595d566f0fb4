/**
 * Durable steps (ARCHITECTURE.md 4.7) under SIGKILL. An agent makes five steps, each a write_file call, then answers,
 * on a local OpenAI-compatible server that counts the calls. Each of 20 runs is killed once at a random point and the
 * gateway restarted: every run ends succeeded, the model was asked at most once per step plus once for the step in
 * flight at the kill, and the run's transcript is the one a run without a kill leaves.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { STEPS, stepOf, stepperAnswer, transcriptShape } from '../helpers/stepper-model.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import type { RunRecord, TranscriptEntry } from '../../src/ports/index.js';
import type { RunStepView } from '../../src/ports/gateway.js';

const KILLS = 20;

describe('durable steps: a run SIGKILLed at a random point resumes at its last step', () => {
  const provider = new FakeProviderServer();
  let gw: GatewayProcess;
  let configPath: string;

  beforeAll(async () => {
    await provider.start();
    provider.responder = stepperAnswer;
    // Long enough that a kill lands inside a model call as often as between them.
    provider.delayMs = 60;
    const workspace = mkdtempSync(join(tmpdir(), 'sb-steps-ws-'));
    configPath = tempConfig(`{
      recovery: { retryInterrupted: 3 },
      agents: { defaults: { workspace: ${JSON.stringify(workspace)} }, list: [{ id: "stepper", model: "fake/m" }] },
      models: { providers: { fake: { type: "openai-compatible", baseURL: "${provider.url}/v1" } } },
    }`).configPath;
    gw = await startGatewayProcess(configPath);
  });
  afterAll(async () => {
    await stopGatewayProcess(gw);
    await provider.close();
  });

  /** Each task in a session of its own: a peer of the API channel. */
  const sessions = new Map<string, string>();
  async function send(task: string): Promise<number> {
    const sent = await gw.request<{ sessionKey: string }>('POST', '/v1/send', {
      target: 'stepper',
      peer: task,
      message: `do task ${task}`,
      idempotencyKey: task,
    });
    sessions.set(task, sent.body.sessionKey);
    return sent.status;
  }
  const callsFor = (task: string) => provider.requests.filter((request) => stepOf(request.body).task === task).length;

  async function finished(task: string): Promise<RunRecord> {
    let run: RunRecord | undefined;
    await waitUntil(
      `task ${task} succeeded`,
      async () => {
        const { body } = await gw.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessions.get(task)!)}`);
        run = body.runs.find((candidate) => candidate.status === 'succeeded');
        return run !== undefined;
      },
      30_000,
    );
    return run!;
  }

  const transcript = async (task: string) =>
    (await gw.request<{ entries: TranscriptEntry[] }>('GET', `/v1/sessions/${encodeURIComponent(sessions.get(task)!)}/history`)).body
      .entries;

  it('20 runs, each killed once: all succeed, no committed model call is asked again, and the transcripts are as without a kill', async () => {
    // The reference: a run nobody kills.
    expect(await send('t0')).toBe(200);
    const reference = await finished('t0');
    expect(callsFor('t0')).toBe(STEPS + 1);
    expect(reference.usage.modelCalls).toBe(STEPS + 1);
    const steps = (await gw.request<{ steps: RunStepView[] }>('GET', `/v1/runs/${reference.id}`)).body.steps;
    expect(steps.map((step) => [step.step, step.state, step.tools.join()])).toEqual([
      ...Array.from({ length: STEPS }, (_, i) => [i, 'settled', 'write_file']),
      [STEPS, 'final', ''],
    ]);
    const expected = transcriptShape(await transcript('t0'), 't0');

    let resumed = 0;
    for (let i = 1; i <= KILLS; i += 1) {
      const task = `t${i}`;
      expect(await send(task)).toBe(200);
      // Anywhere in the run: before its first step, between steps, inside a model call or a tool.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * (STEPS + 1) * 70)));
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
      const run = await finished(task);
      if (run.attempt > 1) resumed += 1;
      expect(callsFor(task), `model calls of ${task} (run ${run.id}, attempt ${run.attempt})`).toBeLessThanOrEqual(STEPS + 2);
      expect(transcriptShape(await transcript(task), task)).toBe(expected);
      // What the model answered and the run committed is counted once: the run's calls are at most those it asked.
      expect(run.usage.modelCalls).toBeGreaterThanOrEqual(STEPS + 1);
      expect(run.usage.modelCalls).toBeLessThanOrEqual(callsFor(task));
    }
    // Kills land all over the run: most of them after a step committed, which the run resumed from.
    expect(resumed).toBeGreaterThan(0);
  }, 240_000);
});
