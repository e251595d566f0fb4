import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "slow", model: "scripted/slow" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    slow: { rules: [{ delayMs: 60000, reply: "late" }] },
  } } } },
}`);

describe('graceful shutdown', () => {
  it('shutdown: SIGTERM ends pending waits at once as delivered; after a restart the input runs again with a note', async () => {
    let gw = await startGatewayProcess(configPath);
    const waiting = gw.request<{ status: string; delivered: boolean; inputId: string }>('POST', '/v1/send', {
      target: 'slow',
      message: 'do it',
      wait: true,
      timeoutSeconds: 60,
    });
    await waitUntil(
      'the run is active',
      async () => (await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status')).body.activeRuns.length > 0,
      10_000,
      20,
    );
    const started = Date.now();
    expect(await stopGatewayProcess(gw)).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    const answer = await waiting;
    expect(answer.body).toMatchObject({ status: 'timeout', delivered: true });

    gw = await startGatewayProcess(configPath);
    try {
      type Run = { id: string; status: string; errorMessage: string | null };
      const runs = async () => (await gw.request<{ runs: Run[] }>('GET', '/v1/runs')).body.runs;
      const retry = await waitUntil('the input runs again', async () => (await runs()).find((run) => run.status === 'running'), 10_000, 50);
      expect((await runs()).find((run) => run.status === 'interrupted')).toMatchObject({
        errorMessage: 'gateway shut down while the run was active',
      });
      const shown = await gw.request<{ inputs: { id: string; note: string; attempts: number }[] }>('GET', `/v1/runs/${retry.id}`);
      expect(shown.body.inputs).toMatchObject([
        { id: answer.body.inputId, attempts: 2, note: 'previous attempt was interrupted: gateway shut down while the run was active' },
      ]);
    } finally {
      await stopGatewayProcess(gw);
    }
  });
});
