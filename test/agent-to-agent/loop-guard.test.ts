/** The loop guard: a cycle A -> B -> C -> A stops at the hop budget; a storm between two sessions is rate limited. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

// Each agent relays a request to the next one and does not wait; replies coming back are only noted.
const relay = (next: string) => `{ rules: [
  { match: "^relay (.*)", steps: [
    { toolCalls: [{ tool: "sessions_send", args: { agentId: "${next}", message: "relay {{match.1}}", timeoutSeconds: 0 } }] },
    { text: "{{tool.sessions_send.status}}|{{tool.sessions_send.code}}|{{tool.sessions_send.error}}" },
  ] },
  { reply: "noted" },
] }`;

describe('loop guard', () => {
  it('a cycle a -> b -> c -> a ... is stopped by session.agentToAgent.maxHops with a clear tool error', async () => {
    gateway = await startTestGateway(`{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxPingPongTurns: 5, maxHops: 8 } },
      agents: { list: [{ id: "a", model: "scripted/a" }, { id: "b", model: "scripted/b" }, { id: "c", model: "scripted/c" }] },
      models: { providers: { scripted: { type: "scripted", models: { a: ${relay('b')}, b: ${relay('c')}, c: ${relay('a')} } } } },
    }`);
    await gateway.send({ target: 'a', message: 'relay ping' });
    const stopped = await waitUntil(
      'the hop budget stopped the chain',
      async () => (await gateway.listRuns({ limit: 200 })).find((run) => run.finalText?.startsWith('error|HOP_LIMIT_EXCEEDED')),
      10_000,
    );
    const exchanges = await gateway.store.exchanges.list();
    expect(exchanges.map((exchange) => [exchange.hop, exchange.requesterAgent, exchange.targetAgent])).toEqual([
      [1, 'a', 'b'],
      [2, 'b', 'c'],
      [3, 'c', 'a'],
      [4, 'a', 'b'],
      [5, 'b', 'c'],
      [6, 'c', 'a'],
      [7, 'a', 'b'],
      [8, 'b', 'c'],
    ]);
    expect(new Set(exchanges.map((exchange) => exchange.conversationId)).size).toBe(1);
    expect(stopped.agentId).toBe('c');
    expect(stopped.finalText).toBe(
      `error|HOP_LIMIT_EXCEEDED|this message would be hop 9 of conversation ${exchanges[0].conversationId}, past session.agentToAgent.maxHops (8): the agents are passing it around in a chain or a cycle; answer instead of forwarding it again`,
    );
    // Nothing starts after the refusal: every run ends and no ninth message exists.
    await waitUntil(
      'all runs settled',
      async () =>
        (await gateway.listRuns({ limit: 200 })).every((run) => run.status !== 'running') && gateway.status().activeRuns.length === 0,
    );
    expect(await gateway.store.exchanges.list()).toHaveLength(8);
  });

  it('a storm between two sessions is cut off by session.agentToAgent.maxSendsPerMinute', async () => {
    gateway = await startTestGateway(`{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxSendsPerMinute: 3 } },
      agents: { list: [{ id: "a", model: "scripted/n" }, { id: "b", model: "scripted/n" }] },
      models: { providers: { scripted: { type: "scripted", models: { n: { rules: [{ reply: "noted" }] } } } } },
    }`);
    const send = (key: string) => gateway.sendAs('agent:a:main', { agentId: 'b', message: 'spam', timeoutSeconds: 0, idempotencyKey: key });
    for (const key of ['1', '2', '3']) expect(await send(key)).toMatchObject({ status: 'accepted' });
    await expect(send('4')).rejects.toThrow(
      '3 messages between agent:a:main and agent:b:main in the last minute reach session.agentToAgent.maxSendsPerMinute (3); wait before sending again',
    );
    // The other direction shares the budget of the pair.
    await expect(
      gateway.sendAs('agent:b:main', { agentId: 'a', message: 'spam back', timeoutSeconds: 0, idempotencyKey: '5' }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });
});
