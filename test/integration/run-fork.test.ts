/**
 * `switchboard runs fork` (docs/delivery.md, "Forking a run") through a real gateway process and the CLI. An agent on a
 * local OpenAI-compatible server that counts the calls makes five steps, each a write_file call, then answers; its run
 * is forked at --step 2. The fork's run succeeds in a new session, the model is asked only from step 2 on (the copied
 * steps are replayed, their tools not run again), and the fork's transcript is the history before the run, the run's
 * input, the two copied steps, then the fork's own.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeProviderServer, type FakeReply } from '../helpers/fake-provider.js';
import { cliWith, startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import type { RunRecord, TranscriptEntry } from '../../src/ports/index.js';
import type { RunStepView } from '../../src/ports/gateway.js';

const STEPS = 5;
const KEPT = 2;
const TASK = 'write the five files';

type Body = { messages: { role: string; content: unknown }[] };

/** How many tools have answered since the last user message: the step the run is at. */
const stepOf = (body: Body) => {
  const lastUser = body.messages.map((message) => message.role).lastIndexOf('user');
  return {
    task: JSON.stringify(body.messages[lastUser]?.content ?? '').includes(TASK),
    done: body.messages.slice(lastUser).filter((message) => message.role === 'tool').length,
  };
};

describe('runs fork: a run forked at a step goes on from it in a new session', () => {
  const provider = new FakeProviderServer();
  /** What the steps write: the fork's own steps write another word of the same length, so their effects can be told apart. */
  let written = 'first';
  let gw: GatewayProcess;
  let cli: ReturnType<typeof cliWith>;
  let workspace: string;

  beforeAll(async () => {
    await provider.start();
    provider.responder = (body: Body): FakeReply => {
      const { task, done } = stepOf(body);
      if (!task) return { text: 'hello to you' };
      if (done < STEPS)
        return {
          toolCall: { id: `call_${done}`, name: 'write_file', args: { path: `out/step-${done}.txt`, content: `${written} ${done}` } },
        };
      return { text: `wrote ${STEPS} files` };
    };
    workspace = mkdtempSync(join(tmpdir(), 'sb-fork-ws-'));
    const { configPath } = tempConfig(`{
      agents: { defaults: { workspace: ${JSON.stringify(workspace)} }, list: [{ id: "stepper", model: "fake/m" }] },
      models: { providers: { fake: { type: "openai-compatible", baseURL: "${provider.url}/v1" } } },
    }`);
    cli = cliWith(configPath);
    gw = await startGatewayProcess(configPath);
  });
  afterAll(async () => {
    if (gw) await stopGatewayProcess(gw);
    await provider.close();
  });

  const send = async (message: string) =>
    (
      await gw.request<{ status: string; sessionKey: string; runId: string; runStatus: string }>('POST', '/v1/send', {
        target: 'stepper',
        peer: 'p1',
        message,
        wait: true,
      })
    ).body;
  const history = async (sessionKey: string) =>
    (await gw.request<{ entries: TranscriptEntry[] }>('GET', `/v1/sessions/${encodeURIComponent(sessionKey)}/history`)).body.entries;
  const shown = async (runId: string) => (await gw.request<{ run: RunRecord; steps: RunStepView[] }>('GET', `/v1/runs/${runId}`)).body;
  const shape = (entries: TranscriptEntry[]) => entries.map((entry) => JSON.stringify([entry.role, entry.content]));
  const file = (n: number) => join(workspace, 'out', `step-${n}.txt`);

  it('runs fork --step 2: the fork succeeds having asked the model only from step 2, and holds the history up to it', async () => {
    // The history before the run, then the run: five steps and the answer, six calls.
    expect(await send('hi')).toMatchObject({ status: 'ok', runStatus: 'succeeded' });
    const source = await send(TASK);
    expect(source).toMatchObject({ status: 'ok', runStatus: 'succeeded' });
    const sourceEntries = await history(source.sessionKey);
    // hi, its answer, the task, five tool calls each with its result, the answer.
    expect(sourceEntries).toHaveLength(3 + 2 * STEPS + 1);
    expect((await shown(source.runId)).run.usage).toMatchObject({ modelCalls: STEPS + 1, inputTokens: (STEPS + 1) * 21 });

    // Effects already made stay as they are: the fork neither undoes nor repeats them.
    for (let n = 0; n < STEPS; n += 1) rmSync(file(n));
    written = 'again';
    const callsBefore = provider.requests.length;

    const forked = await cli('--json', 'runs', 'fork', source.runId.slice(0, 8), '--step', String(KEPT));
    expect(forked.code, forked.stderr).toBe(0);
    const { sessionKey, runId } = JSON.parse(forked.stdout) as { sessionKey: string; runId: string };
    expect(sessionKey).toBe(`agent:stepper:fork:direct:${runId.slice(0, 8)}`);

    const run = await waitUntil(
      `fork ${runId} ended`,
      async () => {
        const { run: current } = await shown(runId);
        return current.status !== 'suspended' && current.status !== 'running' && current;
      },
      30_000,
    );
    expect(run).toMatchObject({ status: 'succeeded', finalText: `wrote ${STEPS} files`, sessionKey, attempt: 2 });

    // Steps 2, 3 and 4 and the answer: six calls less the two kept steps. The first the fork made was at step 2.
    const forkCalls = provider.requests.slice(callsBefore);
    expect(forkCalls).toHaveLength(STEPS + 1 - KEPT);
    expect(stepOf(forkCalls[0].body)).toEqual({ task: true, done: KEPT });
    // The kept steps' tools did not run again; the fork's own steps wrote anew.
    for (let n = 0; n < KEPT; n += 1) expect(existsSync(file(n)), `step-${n}.txt`).toBe(false);
    for (let n = KEPT; n < STEPS; n += 1) expect(readFileSync(file(n), 'utf8')).toBe(`again ${n}`);

    // The history before the run, the run's input and its two kept steps as the source has them, then the fork's own.
    const entries = await history(sessionKey);
    expect(entries).toHaveLength(sourceEntries.length);
    const kept = 3 + 2 * KEPT;
    expect(shape(entries.slice(0, kept))).toEqual(shape(sourceEntries.slice(0, kept)));
    expect(shape(entries.slice(kept))).toEqual(shape(sourceEntries.slice(kept)).map((entry) => entry.replaceAll('first ', 'again ')));

    // The fork's run counts the tokens of the calls it made, not those of the copied steps (the source's run has them).
    expect(run.usage.inputTokens).toBe((STEPS + 1 - KEPT) * 21);
    const { steps } = await shown(runId);
    expect(steps.map((step) => [step.step, step.attempt, step.state])).toEqual([
      [0, 1, 'settled'],
      [1, 1, 'settled'],
      [2, 2, 'settled'],
      [3, 2, 'settled'],
      [4, 2, 'settled'],
      [STEPS, 2, 'final'],
    ]);
  }, 60_000);

  it('POST /v1/runs/<id>/fork: a step beyond the run is refused with what to do instead', async () => {
    const { runs } = (await gw.request<{ runs: RunRecord[] }>('GET', '/v1/runs')).body;
    const source = runs.find((run) => run.usage.modelCalls === STEPS + 1 && run.sessionKey.includes(':api:'))!;
    const refused = await gw.request<{ error: { code: string; message: string } }>('POST', `/v1/runs/${source.id}/fork`, { step: 6 });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining(`run ${source.id} has ${STEPS} committed step(s), 0 to ${STEPS - 1}`),
    });
    const malformed = await gw.request<{ error: { code: string; message: string } }>('POST', `/v1/runs/${source.id}/fork`, { step: 'two' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toContain('step:');
  });
});
