/**
 * The AI SDK runs the tool calls of one step at once: every limit is counted in the write's own
 * transaction, so six calls in one step never get past a limit of two. Each call is in the ledger at
 * its place in the step.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const six = (tool: string, args: (i: number) => string) =>
  `[${Array.from({ length: 6 }, (_, i) => `{ tool: "${tool}", args: ${args(i + 1)} }`).join(', ')}]`;

async function finished(g: Gateway, agentId: string) {
  return waitUntil(`the ${agentId} run finished`, async () =>
    (await g.listRuns({ limit: 50 })).find((run) => run.agentId === agentId && run.status !== 'running' && run.finalText !== null),
  );
}

describe('limits under parallel tool calls', () => {
  it('maxChildrenPerAgent 2: six sessions_spawn calls in one step leave exactly two children; four are refused with SUBAGENT_LIMIT', async () => {
    gateway = await startTestGateway(`{
      agents: { defaults: { subagents: { maxChildrenPerAgent: 2 } }, list: [{ id: "lead", model: "scripted/lead" }, { id: "worker", model: "scripted/worker" }] },
      models: { providers: { scripted: { type: "scripted", models: {
        lead: { rules: [
          { match: "^fan", steps: [{ toolCalls: ${six('sessions_spawn', (i) => `{ task: "part ${i}" }`)} }, { text: "spawned" }] },
          { reply: "noted" },
        ] },
        worker: { rules: [{ delayMs: 1500, reply: "worked" }] },
      } } } },
    }`);
    await gateway.send({ target: 'lead', message: 'fan out' });
    await finished(gateway, 'lead');
    const children = await gateway.store.subagents.list({ parentSession: 'agent:lead:main' });
    expect(children).toHaveLength(2);
    const calls = (await gateway.store.toolCalls.list({ sessionKey: 'agent:lead:main' })).sort((a, b) => a.index - b.index);
    expect(calls.map((call) => [call.tool, call.step, call.index, call.state])).toEqual(
      Array.from({ length: 6 }, (_, i) => ['sessions_spawn', 0, i, 'completed']),
    );
    const refused = calls.filter((call) => (call.result as { code?: string }).code === 'SUBAGENT_LIMIT');
    expect(refused).toHaveLength(4);
    expect(refused[0].result).toEqual({
      status: 'error',
      code: 'SUBAGENT_LIMIT',
      error:
        'this session already has 2 sub-agents pending or running, the limit of agents.defaults.subagents.maxChildrenPerAgent (2); wait for one to finish (subagents wait) before spawning another',
    });
    // Without a correlationId, each child's is its call's ledger key.
    expect(children.map((child) => child.correlationId).sort()).toEqual(
      calls
        .filter((call) => !refused.includes(call))
        .map((call) => call.key)
        .sort(),
    );
  });

  it('maxSendsPerMinute 2: six sessions_send calls in one step store exactly two messages; four are refused with RATE_LIMITED', async () => {
    gateway = await startTestGateway(`{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxSendsPerMinute: 2, maxPingPongTurns: 0 } },
      agents: { list: [{ id: "a", model: "scripted/a" }, { id: "b", model: "scripted/b" }] },
      models: { providers: { scripted: { type: "scripted", models: {
        a: { rules: [{ match: "^storm", steps: [{ toolCalls: ${six('sessions_send', (i) => `{ agentId: "b", message: "m${i}", timeoutSeconds: 0 }`)} }, { text: "sent" }] }, { reply: "noted" }] },
        b: { rules: [{ reply: "ok" }] },
      } } } },
    }`);
    await gateway.send({ target: 'a', message: 'storm' });
    await finished(gateway, 'a');
    expect(await gateway.store.inputs.list({ sessionKey: 'agent:b:main' })).toHaveLength(2);
    const calls = await gateway.store.toolCalls.list({ sessionKey: 'agent:a:main' });
    expect(calls.map((call) => (call.result as { status: string; code?: string }).code ?? 'accepted').sort()).toEqual([
      'RATE_LIMITED',
      'RATE_LIMITED',
      'RATE_LIMITED',
      'RATE_LIMITED',
      'accepted',
      'accepted',
    ]);
  });

  it('the per-pair window is kept in the store: a restarted gateway on the same database still refuses', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sb-rate-')), 'db.sqlite');
    const config = `{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxSendsPerMinute: 2 } },
      agents: { list: [{ id: "a", model: "scripted/n" }, { id: "b", model: "scripted/n" }] },
      models: { providers: { scripted: { type: "scripted", models: { n: { rules: [{ reply: "noted" }] } } } } },
    }`;
    gateway = await startTestGateway(config, {}, await SqliteStore.open({ path }));
    for (const key of ['1', '2'])
      await gateway.sendAs('agent:a:main', { agentId: 'b', message: 'hi', timeoutSeconds: 0, idempotencyKey: key });
    await stopTestGateway(gateway);
    gateway = await startTestGateway(config, {}, await SqliteStore.open({ path }));
    await expect(
      gateway.sendAs('agent:b:main', { agentId: 'a', message: 'back', timeoutSeconds: 0, idempotencyKey: '3' }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    // A repeat of an accepted send is answered (accepted, or with the reply if b has answered by now), not refused.
    const repeat = (await gateway.sendAs('agent:a:main', { agentId: 'b', message: 'hi', timeoutSeconds: 0, idempotencyKey: '1' })) as {
      status: string;
    };
    expect(['accepted', 'ok']).toContain(repeat.status);
  });
});
