/**
 * A run's durable steps on the console's session page, in headless Chromium against a real gateway process on the demo
 * agents: a run of two tool steps lists each model call with its tools and tokens; a run a crash cut (left in the
 * store as a killed gateway leaves it) is resumed by the gateway and shows its attempt and the step it replayed; a run
 * suspended in a wait (support asking a slow expert) shows the time it waits until.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/ports/runs.js';
import type { RunStepView } from '../../src/ports/answers.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { newInput } from '../helpers/inputs.js';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { CHROMIUM, demoConfig, launch, loginLink, SHOTS } from './console-helpers.js';

const TWO_STEPS = 'agent:support:web:direct:two-steps';
const CRASHED = 'agent:support:web:direct:crashed';
const WAITING = 'agent:support:web:direct:waiting';
const CRASHED_RUN = 'run-crashed-0001';

let gateway: GatewayProcess;
let browser: Browser;
let page: Page;

const missing = !existsSync(CHROMIUM) && !process.env.CI;
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const sessionPage = (key: string) => `${gateway.url}/#/session/${encodeURIComponent(key)}`;

/**
 * What a gateway killed in the middle of a run leaves in its store: the run committed its first step (read_file, with
 * its result), and the recovery suspended it, its input queued again for it.
 */
async function seedStore(path: string): Promise<void> {
  const store = await SqliteStore.open({ path });
  try {
    const now = Date.now();
    await store.sessions.ensure({ key: CRASHED, agentId: 'support' }, now);
    const { input } = await store.inputs.enqueue({ ...newInput(CRASHED), text: 'two steps: what is our refund policy?' }, now);
    const started = await store.runs.start(
      {
        id: CRASHED_RUN,
        sessionKey: CRASHED,
        agentId: 'support',
        owner: 'gw-gone',
        leaseTtlMs: 30_000,
        model: 'scripted/support',
        inputIds: [input.id],
      },
      now,
    );
    if (typeof started === 'string') throw new Error(`the seeded run did not start: ${started}`);
    await store.steps.record(
      {
        runId: CRASHED_RUN,
        sessionKey: CRASHED,
        epoch: started.epoch,
        step: 0,
        attempt: 1,
        model: 'scripted/support',
        // The scripted model's own answer for the rule's first step: the resume hands it to the SDK again.
        response: {
          content: [
            { type: 'tool-call', toolCallId: 'call_0_0', toolName: 'read_file', input: JSON.stringify({ path: 'policies/refunds.md' }) },
          ],
          finishReason: { unified: 'tool-calls' },
        },
        toolNames: ['read_file'],
        inputIds: [input.id],
        usage: { inputTokens: 321, outputTokens: 12, cachedInputTokens: 0 },
        request: { bytes: 0, systemBytes: 0, toolBytes: 0 },
        startedAt: now,
      },
      now + 40,
    );
    await store.steps.settle(
      {
        runId: CRASHED_RUN,
        epoch: started.epoch,
        step: 0,
        results: [
          { toolCallId: 'call_0_0', toolName: 'read_file', output: { path: 'policies/refunds.md', content: 'Refunds within 30 days.' } },
        ],
        toolCalls: [],
      },
      now + 50,
    );
    const recovered = await store.runs.recoverOrphans(
      { recoverer: 'gw-gone', scope: 'own', diagnostic: () => 'gateway gw-gone was killed', maxRetries: 2 },
      now + 60,
    );
    expect(recovered.suspendedRuns).toEqual([CRASHED_RUN]);
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  if (missing) return;
  const database = join(mkdtempSync(join(tmpdir(), 'sb-console-steps-')), 'switchboard.db');
  await seedStore(database);
  const { configPath } = demoConfig({ store: { sqlite: { path: database } } }, (demo) => {
    demo.models.providers.scripted.models.support.rules.unshift({
      match: '^two steps',
      steps: [
        { toolCalls: [{ tool: 'read_file', args: { path: 'policies/refunds.md' } }] },
        { toolCalls: [{ tool: 'time_now' }] },
        { text: 'Refunds within 30 days; it is a fine day for one.' },
      ],
    });
    // support asks expert a question that takes expert a minute: support's run waits on the reply, suspended.
    demo.models.providers.scripted.models.support.rules.unshift({
      match: '^ask slowly',
      steps: [
        {
          toolCalls: [{ tool: 'sessions_send', args: { agentId: 'expert', message: 'Research for a customer: slow', timeoutSeconds: 90 } }],
        },
        { text: 'done' },
      ],
    });
  });
  gateway = await startGatewayProcess(configPath);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(await loginLink(configPath));
  await page.waitForURL(`${gateway.url}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (gateway) await stopGatewayProcess(gateway);
});

/** The session's only run, and its steps, as the control API answers them. */
async function onlyRun(sessionKey: string): Promise<{ run: RunRecord; steps: RunStepView[] }> {
  const { body } = await gateway.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}`);
  expect(body.runs).toHaveLength(1);
  return (await gateway.request<{ run: RunRecord; steps: RunStepView[] }>('GET', `/v1/runs/${body.runs[0].id}`)).body;
}

/** Opens the run's list of steps and answers its rows' cells, once all `count` rows are shown. */
async function openSteps(line: Locator, count: number): Promise<string[][]> {
  await line.getByText('steps', { exact: true }).click();
  const rows = line.getByTestId('step');
  await expect.poll(() => rows.count()).toBe(count);
  return Promise.all((await rows.all()).map((row) => row.locator('td').allTextContents()));
}

describe.skipIf(missing)("the console's session page: a run's steps", () => {
  it('lists each step of a run with the tools it asked for and its tokens', async () => {
    const sent = await gateway.request('POST', '/v1/send', {
      target: TWO_STEPS,
      message: 'two steps: what is our refund policy?',
      wait: true,
    });
    expect(sent.body).toMatchObject({ status: 'ok' });
    const { run, steps } = await onlyRun(TWO_STEPS);
    expect(run.attempt).toBe(1);
    expect(steps.map((step) => [step.step, step.tools, step.state])).toEqual([
      [0, ['read_file'], 'settled'],
      [1, ['time_now'], 'settled'],
      [2, [], 'final'],
    ]);

    await page.goto(sessionPage(TWO_STEPS));
    const line = page.getByTestId('run');
    await expect.poll(() => line.getByTestId('run-state').textContent()).toBe('succeeded');
    expect(await line.textContent()).not.toContain('attempt');
    const cells = await openSteps(line, 3);
    // step, attempt, model, tools, tokens in, tokens out, ms, notes
    expect(cells.map((row) => [row[0], row[1], row[2], row[3], row[4], row[5]])).toEqual(
      steps.map((step) => [
        String(step.step),
        '1',
        'scripted/support',
        step.tools.join(', '),
        String(step.inputTokens),
        String(step.outputTokens),
      ]),
    );
    expect(steps.every((step) => step.inputTokens > 0 && step.outputTokens > 0)).toBe(true);
    expect(cells.map((row) => row[7])).toEqual(['', '', "the run's last answer"]);
    await shot('session-steps');
  });

  it('shows a run a crash cut, resumed by the gateway, with its attempt and the step it replayed rather than asked again', async () => {
    // The gateway resumes the seeded run when it starts: step 0 from the store, the model asked from step 1 on.
    await waitUntil(
      'the crashed run succeeded',
      async () => (await gateway.request<{ run: RunRecord }>('GET', `/v1/runs/${CRASHED_RUN}`)).body.run.status === 'succeeded',
      15_000,
      50,
    );
    const { run, steps } = await onlyRun(CRASHED);
    expect(run.attempt).toBe(2);
    expect(steps.map((step) => [step.step, step.attempt, step.tools, step.inputTokens, step.outputTokens])).toEqual([
      [0, 1, ['read_file'], 321, 12],
      [1, 2, ['time_now'], steps[1].inputTokens, steps[1].outputTokens],
      [2, 2, [], steps[2].inputTokens, steps[2].outputTokens],
    ]);

    await page.goto(sessionPage(CRASHED));
    const line = page.getByTestId('run');
    await expect.poll(() => line.textContent()).toContain('attempt 2');
    expect(await line.getByTestId('run-state').textContent()).toBe('succeeded');
    const cells = await openSteps(line, 3);
    expect(cells[0].slice(0, 6)).toEqual(['0', '1', 'scripted/support', 'read_file', '321', '12']);
    expect(cells[0][7]).toBe('replayed on resume, not asked again');
    expect(cells[1].slice(0, 4)).toEqual(['1', '2', 'scripted/support', 'time_now']);
    expect(cells[1][7]).toBe('');
    expect(cells[2][7]).toBe("the run's last answer");
    await shot('session-steps-resumed');
  });

  it('shows a run suspended in a wait as waiting until its deadline, its step without committed results', async () => {
    await gateway.request('POST', '/v1/send', { target: WAITING, message: 'ask slowly about the database' });
    // The wait sleeps in memory for lanes.suspendWaitsAfterMs (2 s), then suspends the run until the reply or its deadline.
    const run = await waitUntil(
      "support's run suspended in its wait",
      async () => {
        const { body } = await gateway.request<{ runs: RunRecord[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(WAITING)}`);
        return body.runs.find((candidate) => candidate.status === 'suspended' && candidate.waitingUntil !== null);
      },
      15_000,
      50,
    );
    const { steps } = (await gateway.request<{ steps: RunStepView[] }>('GET', `/v1/runs/${run.id}`)).body;
    expect(steps.map((step) => [step.step, step.attempt, step.tools, step.state])).toEqual([[0, 1, ['sessions_send'], 'answered']]);

    await page.goto(sessionPage(WAITING));
    const line = page.getByTestId('suspended');
    const until = new Date(run.waitingUntil!).toISOString().replace('T', ' ').slice(0, 19);
    await expect.poll(() => line.getByTestId('run-state').textContent()).toBe(`waiting until ${until}`);
    expect(await page.getByTestId('working').count()).toBe(0);
    const cells = await openSteps(line, 1);
    expect(cells[0].slice(0, 6)).toEqual([
      '0',
      '1',
      'scripted/support',
      'sessions_send',
      String(steps[0].inputTokens),
      String(steps[0].outputTokens),
    ]);
    expect(cells[0][7]).toBe('results not committed');
    await shot('session-steps-waiting');
  });
});
