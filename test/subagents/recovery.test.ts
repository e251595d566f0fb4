/**
 * A gateway that stops while a child runs: on the next start the child is `interrupted`, its parent is
 * told, and it is not run again, unless `retryInterrupted` allows one retry. A pending child whose
 * orchestrator was interrupted is cancelled rather than started for nobody.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const MAIN = 'agent:main:main';

function opener(retry: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recover-'));
  const { config } = parseConfigText(
    `{
      agents: { defaults: { subagents: { retryInterrupted: ${retry} } }, list: [{ id: "main", model: "scripted/m" }] },
      models: { providers: { scripted: { type: "scripted", models: { m: { rules: [
        { match: "sub-agent", reply: "parent heard it" },
        { match: "slow", delayMs: 800, reply: "finished slowly" },
      ] } } } } },
    }`,
    '/t.json5',
  );
  return async () => {
    gateway = await startGateway({
      config,
      store: await SqliteStore.open({ path: join(dir, 'db.sqlite') }),
      gatewayId: 'gw-r',
      capabilitySecret: 's',
    });
    await gateway.openSession(MAIN, 'main');
    return gateway;
  };
}

async function spawnAndStop(open: () => Promise<Gateway>) {
  let g = await open();
  const child = await g.subagents.spawn({ sessionKey: MAIN, agentId: 'main', idempotencyKey: 'k' }, { task: 'slow work' });
  await waitUntil('the child runs', async () => (await g.store.subagents.getBySession(child.childSessionKey))?.state === 'running');
  await stopTestGateway(g);
  gateway = undefined;
  g = await open();
  return { g, child };
}

describe('sub-agents across a restart', () => {
  it('a running child becomes interrupted, is not run again, and its parent is told', async () => {
    const { g, child } = await spawnAndStop(opener(false));
    const record = (await g.store.subagents.getBySession(child.childSessionKey))!;
    expect(record.state).toBe('interrupted');
    expect(record.diagnostic).toBe('gateway shut down while the run was active');
    const told = await waitUntil('the parent was told', async () => {
      const input = await g.store.inputs.getByIdempotencyKey(`completion:${child.childSessionKey}:${child.runId}`);
      return input?.status === 'consumed' && input;
    });
    expect(told.text).toContain('was interrupted (the gateway stopped while it ran; it was not run again)');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await g.listRuns({ sessionKey: child.childSessionKey })).map((run) => run.status)).toEqual(['interrupted']);
    expect((await g.store.inputs.list({ sessionKey: child.childSessionKey }))[0]).toMatchObject({
      status: 'dropped',
      note: expect.stringMatching(/^dropped: the sub-agent was interrupted/),
    });
  });

  it('with retryInterrupted: true it is run once more and can still succeed', async () => {
    const { g, child } = await spawnAndStop(opener(true));
    const record = await waitUntil('the retry finished', async () => {
      const found = await g.store.subagents.getBySession(child.childSessionKey);
      return found?.state === 'succeeded' && found;
    });
    expect(record).toMatchObject({ result: 'finished slowly', attempts: 1 });
    expect(record.history.map((step) => step.state)).toEqual(['pending', 'running', 'interrupted', 'succeeded']);
    expect((await g.listRuns({ sessionKey: child.childSessionKey })).map((run) => run.status).sort()).toEqual(['interrupted', 'succeeded']);
  });
});
