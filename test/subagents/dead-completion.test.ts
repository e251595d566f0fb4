/** A completion whose delivery gives up: the parent is told the truth, and a waiting orchestrator is woken. */
import { afterEach, describe, expect, it } from 'vitest';
import { COMPLETION_KIND } from '../../src/core/subagent.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const MAIN = 'agent:main:main';

describe('dead completions', () => {
  it('a completion that goes dead is marked dead, and the parent gets a message saying so (and how to read the result)', async () => {
    gateway = await startTestGateway(`{
      outbox: { maxAttempts: 1 },
      agents: { list: [{ id: "main", model: "scripted/m" }] },
      models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ match: "could not be delivered", reply: "noted the loss" }, { reply: "done" }] } } } } },
    }`);
    const g = gateway;
    await g.openSession(MAIN, 'main');
    g.registerDelivery(COMPLETION_KIND, async () => {
      throw new Error('parent store offline');
    });
    const { childSessionKey } = await g.subagents.spawn({ sessionKey: MAIN, agentId: 'main', idempotencyKey: 'k' }, { task: 'work' });
    const record = await waitUntil('the completion went dead', async () => {
      const child = await g.store.subagents.getBySession(childSessionKey);
      return child?.completion === 'dead' && child;
    });
    const [dead] = await g.store.outbox.list({ status: 'dead' });
    expect(dead).toMatchObject({ kind: COMPLETION_KIND, lastError: 'parent store offline' });
    const told = await waitUntil('the parent was told', async () =>
      (await g.store.inputs.list({ sessionKey: MAIN })).find((input) => input.idempotencyKey === `${dead.idempotencyKey}:dead`),
    );
    expect(told.text).toBe(
      `Your sub-agent ${childSessionKey} ended succeeded, but its completion event could not be delivered (parent store offline). Read its result with subagents (action "result") if you need it.`,
    );
    expect(told.provenance).toMatchObject({ kind: 'system', sourceSession: childSessionKey, subagent: { id: record.id } });
    await waitUntil('the parent read it', async () =>
      (await g.listRuns({ sessionKey: MAIN })).some((run) => run.finalText === 'noted the loss'),
    );
  });
});
