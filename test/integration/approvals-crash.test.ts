/**
 * An approval across a crash and across gateways (docs/gates.md): the request is a row and the wait a suspended run, so
 * a SIGKILL while it waits loses neither; approving it after the restart (or on another gateway of the same database)
 * runs the command once, and the run goes on from its committed step without asking the model again.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApprovalRecord, RunRecord } from '../../src/ports/index.js';
import type { RunStepView } from '../../src/ports/gateway.js';
import { Cluster } from '../helpers/cluster.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

/** An agent whose one exec (it appends a line to log.txt) needs approval, then says what the exec answered. */
function agentConfig(workspace: string, store = ''): string {
  return `{
    ${store}
    agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)}, exec: { enabled: true }, tools: { ask: ["exec"] } }] },
    models: { providers: { scripted: { type: "scripted", models: { coder: { rules: [
      { match: "^log (\\\\w+)", steps: [
        { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> log.txt"] } }] },
        { text: "done: {{tool.exec.status}}" },
      ] },
    ] } } } } },
  }`;
}

type Requester = Pick<GatewayProcess, 'request'>;

async function pending(gw: Requester): Promise<ApprovalRecord> {
  return waitUntil(
    'a pending approval request',
    async () => (await gw.request<{ approvals: ApprovalRecord[] }>('GET', '/v1/approvals')).body.approvals[0],
    20_000,
    20,
  );
}

async function finished(gw: Requester, runId: string): Promise<{ run: RunRecord; steps: RunStepView[] }> {
  return waitUntil(
    'the run succeeded',
    async () => {
      const { body } = await gw.request<{ run: RunRecord; steps: RunStepView[] }>('GET', `/v1/runs/${runId}`);
      return body.run.status === 'succeeded' && body;
    },
    20_000,
    20,
  );
}

describe('an approval across a SIGKILL', () => {
  it('is still there after the restart, and approving it runs the command once without asking the model again', async () => {
    const { dir, configPath } = tempConfig('{}');
    const workspace = realpathSync(dir);
    writeFileSync(configPath, agentConfig(workspace));
    let gw = await startGatewayProcess(configPath);
    expect((await gw.request('POST', '/v1/send', { target: 'coder', message: 'log once', idempotencyKey: 'once' })).status).toBe(200);
    const asked = await pending(gw);
    expect(asked).toMatchObject({ subject: 'exec', details: { command: 'sh', cwd: workspace } });
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath);
    try {
      // The same request, still waiting, and the run still suspended on it.
      expect(await pending(gw)).toEqual(asked);
      expect((await gw.request<{ run: RunRecord }>('GET', `/v1/runs/${asked.runId}`)).body.run.status).toBe('suspended');
      expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
      const answer = await gw.request<{ approval: ApprovalRecord }>('POST', `/v1/approvals/${asked.id.slice(0, 10)}/approve`, {
        by: 'cli:test',
        note: 'go',
      });
      expect(answer).toMatchObject({ status: 200, body: { approval: { id: asked.id, status: 'approved', decidedBy: 'cli:test' } } });
      const { run, steps } = await finished(gw, asked.runId);
      expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('once\n');
      // Step 0 is the answer the first attempt committed: replayed, so the model was asked twice in all.
      expect(steps[0]).toMatchObject({ step: 0, attempt: 1 });
      expect(run.usage.modelCalls).toBe(2);
      const again = await gw.request('POST', `/v1/approvals/${asked.id}/deny`, {});
      expect(again).toMatchObject({ status: 409, body: { error: { code: 'APPROVAL_ANSWERED' } } });
    } finally {
      await stopGatewayProcess(gw);
    }
  }, 120_000);
});

const schema = `sb_approvals_${process.pid}`;
if (process.env.CI || (await postgresReachable())) {
  describe('an approval across gateways on PostgreSQL', async () => {
    const { dir } = tempConfig('{}');
    const workspace = realpathSync(dir);
    const cluster = new Cluster(agentConfig(workspace, `store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },`), 2);
    afterAll(async () => {
      await cluster.stop();
      await dropSchemas(schema);
    });

    it('waits on A, is approved on B, and the run resumes once', async () => {
      await cluster.start();
      const [a, b] = cluster.members as GatewayProcess[];
      expect((await a.request('POST', '/v1/send', { target: 'coder', message: 'log across', idempotencyKey: 'across' })).status).toBe(200);
      const asked = await pending(a);
      await waitUntil(
        'the run suspends on A',
        async () => (await a.request<{ run: RunRecord }>('GET', `/v1/runs/${asked.runId}`)).body.run.status === 'suspended',
      );
      expect((await b.request<{ approvals: ApprovalRecord[] }>('GET', '/v1/approvals')).body.approvals.map((row) => row.id)).toEqual([
        asked.id,
      ]);
      expect((await b.request('POST', `/v1/approvals/${asked.id}/approve`, { by: 'on-b' })).status).toBe(200);
      const { run } = await finished(a, asked.runId);
      expect(run.attempt).toBe(2);
      expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('across\n');
      // Resumed once (attempt 2), and the answer recorded as B's.
      expect((await a.request<{ approval: ApprovalRecord }>('GET', `/v1/approvals/${asked.id}`)).body.approval).toMatchObject({
        status: 'approved',
        decidedBy: 'on-b',
      });
    }, 120_000);
  });
}
