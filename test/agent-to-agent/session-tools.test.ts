/** The reading tools and their separate switches, label lookups, announce skipping, and bad calls. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { Requester } from '../../src/gateway/messaging/messaging.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const config = (agentToAgent: string, extra = '') => `{
  tools: { agentToAgent: ${agentToAgent}, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  ${extra}
  agents: { list: [{ id: "support", model: "scripted/m" }, { id: "expert", model: "scripted/m" }] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [
    { match: "announce step", reply: "ANNOUNCE_SKIP" },
    { match: "use a tool", steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "used it" }] },
    { reply: "reply to {{input}}" },
  ] } } } } },
}`;
const support: Requester = { sessionKey: 'agent:support:main', agentId: 'support' };

async function converse() {
  await gateway.sendAs(support.sessionKey, { agentId: 'expert', message: 'use a tool', timeoutSeconds: 5, idempotencyKey: 'one' });
}

describe('session tools: reading other sessions', () => {
  it("by default an allowed agent's sessions can be listed, inspected and read, tool calls only on request", async () => {
    gateway = await startTestGateway(config('{ enabled: true, allow: ["support", "expert"] }'));
    await converse();
    const listed = await gateway.messaging.listSessions(support, {});
    expect(listed.map((s) => s.sessionKey).sort()).toEqual(['agent:expert:main', 'agent:support:main']);
    expect(await gateway.messaging.listSessions(support, { agentId: 'expert', kind: 'main' })).toHaveLength(1);
    expect(await gateway.messaging.listSessions(support, { kind: 'subagent' })).toEqual([]);
    await gateway.store.sessions.ensure({ key: 'agent:expert:chat:direct:old', agentId: 'expert' }, Date.now() - 2 * 3600_000);
    expect((await gateway.messaging.listSessions(support, { agentId: 'expert' })).map((s) => s.sessionKey)).toContain(
      'agent:expert:chat:direct:old',
    );
    expect((await gateway.messaging.listSessions(support, { agentId: 'expert', activeMinutes: 60 })).map((s) => s.sessionKey)).toEqual([
      'agent:expert:main',
    ]);
    expect(await gateway.messaging.status(support, 'agent:expert:main')).toMatchObject({
      state: 'idle',
      queuedInputs: 0,
      lastRun: { status: 'succeeded', finalText: 'used it' },
    });
    const plain = await gateway.messaging.history(support, 'agent:expert:main', {});
    expect(plain.messages.map((m) => [m.role, m.text])).toEqual([
      ['user', 'use a tool'],
      ['assistant', 'used it'],
    ]);
    expect(plain.messages[0].from).toEqual({ kind: 'inter_session', agent: 'support', session: 'agent:support:main' });
    const withTools = await gateway.messaging.history(support, 'agent:expert:main', { includeTools: true });
    expect(withTools.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(withTools.messages[1]).toMatchObject({ toolCalls: [{ tool: 'time_now', args: {} }] });
  });

  it('history: false and list: false keep another agent private while sending still works', async () => {
    gateway = await startTestGateway(config('{ enabled: true, allow: ["support", "expert"], history: false, list: false }'));
    await converse();
    await expect(gateway.messaging.history(support, 'agent:expert:main', {})).rejects.toMatchObject({
      code: 'A2A_POLICY_DENIED',
      details: { layer: 'agentToAgent' },
      message:
        'cannot read the history of agent "expert": tools.agentToAgent.history is false (sending is allowed, reading history is not)',
    });
    await expect(gateway.messaging.status(support, 'agent:expert:main')).rejects.toThrow(
      'cannot see the sessions of agent "expert": tools.agentToAgent.list is false (sending is allowed, listing is not)',
    );
    expect((await gateway.messaging.listSessions(support, {})).map((s) => s.sessionKey)).toEqual(['agent:support:main']);
    expect(gateway.messaging.listAgents(support).map((a) => a.agentId)).toEqual(['support', 'expert']);
    // The agent's own sessions are not affected by the switches.
    expect((await gateway.messaging.history(support, 'agent:support:main', {})).messages).toEqual([]);
  });

  it('agents_list shows only the agent itself when messaging other agents is disabled', async () => {
    gateway = await startTestGateway(config('{ enabled: false }'));
    expect(gateway.messaging.listAgents(support)).toEqual([{ agentId: 'support', name: null, self: true }]);
  });
});

describe('session tools: targets', () => {
  it('a label resolves to the one session in reach that has it; ambiguity and absence are clear errors', async () => {
    gateway = await startTestGateway(config('{ enabled: true }'));
    const now = Date.now();
    await gateway.store.sessions.ensure({ key: 'agent:expert:subagent:x1', agentId: 'expert', label: 'triage' }, now);
    await gateway.store.sessions.ensure({ key: 'agent:support:subagent:x2', agentId: 'support', label: 'billing' }, now);
    await gateway.store.sessions.ensure({ key: 'agent:expert:subagent:x3', agentId: 'expert', label: 'billing' }, now);
    expect(await gateway.messaging.resolveTarget(support, { label: 'triage' })).toMatchObject({ sessionKey: 'agent:expert:subagent:x1' });
    expect(await gateway.messaging.resolveTarget(support, { label: 'billing', agentId: 'expert' })).toMatchObject({
      sessionKey: 'agent:expert:subagent:x3',
    });
    await expect(gateway.messaging.resolveTarget(support, { label: 'billing' })).rejects.toThrow(
      'label "billing" names 2 sessions (agent:expert:subagent:x3, agent:support:subagent:x2); pass agentId or the sessionKey',
    );
    await expect(gateway.messaging.resolveTarget(support, { label: 'nothing' })).rejects.toThrow('no session labelled "nothing"');
  });

  it('a label lookup in an agent the sender may not reach is refused before anything is looked up', async () => {
    gateway = await startTestGateway(config('{ enabled: true, allow: ["support"] }'));
    await expect(gateway.messaging.resolveTarget(support, { label: 'does-not-matter', agentId: 'expert' })).rejects.toMatchObject({
      code: 'A2A_POLICY_DENIED',
      message:
        'cannot send to agent "expert": agent "expert" is not in tools.agentToAgent.allow (["support"]); requester and target must both match',
    });
  });

  it('a run cannot wait for a reply from its own session', async () => {
    gateway = await startTestGateway(config('{ enabled: true }'));
    await gateway.store.sessions.ensure({ key: support.sessionKey, agentId: 'support' }, Date.now());
    await expect(
      gateway.messaging.send(
        { ...support, runId: 'run-1' },
        { sessionKey: support.sessionKey, message: 'me?', timeoutSeconds: 5, idempotencyKey: 'self' },
      ),
    ).rejects.toThrow(
      'a message to this same session runs only after the current run ends, so it cannot be waited for; send it with timeoutSeconds 0',
    );
  });

  it('sessions_send names a bad target precisely', async () => {
    gateway = await startTestGateway(config('{ enabled: true }'));
    await expect(
      gateway.messaging.send(support, { sessionKey: 'expert', message: 'x', timeoutSeconds: 0, idempotencyKey: 'a' }),
    ).rejects.toThrow(
      '"expert" is not a valid session key (expected agent:<agentId>:main, agent:<agentId>:<channel>:direct:<peer>, agent:<agentId>:<channel>:group:<id>, agent:<agentId>:subagent:<id> or agent:<agentId>:a2a:<peer>:<contextId>)',
    );
    await expect(
      gateway.messaging.send(support, { agentId: 'nobody', message: 'x', timeoutSeconds: 0, idempotencyKey: 'b' }),
    ).rejects.toThrow('unknown agent "nobody" (configured agents: support, expert)');
    await expect(gateway.messaging.send(support, { message: 'x', timeoutSeconds: 0, idempotencyKey: 'c' })).rejects.toThrow(
      "name the target: sessionKey, or label (with agentId to narrow it), or agentId for that agent's main session",
    );
    await expect(
      gateway.messaging.send(support, { sessionKey: 'agent:expert:subagent:none', message: 'x', timeoutSeconds: 0, idempotencyKey: 'd' }),
    ).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
    await expect(
      gateway.messaging.send(support, { agentId: 'expert', message: '  ', timeoutSeconds: 0, idempotencyKey: 'e' }),
    ).rejects.toMatchObject({ code: 'MESSAGE_EMPTY' });
  });
});

describe('announce', () => {
  it("ANNOUNCE_SKIP posts nothing to the target's channel; the exchange ends saying so", async () => {
    gateway = await startTestGateway(config('{ enabled: true }'));
    // The expert's group session has a channel: a user spoke there first.
    const group = 'agent:expert:chat:group:team';
    const hello = await gateway.send({ target: 'expert', message: 'hello', inbound: { channel: 'chat', group: 'team' } });
    await gateway.waitForInput(hello.input.id, 5000);
    expect(
      await gateway.sendAs(support.sessionKey, { sessionKey: group, message: 'status?', timeoutSeconds: 5, idempotencyKey: 'ann' }),
    ).toMatchObject({ status: 'ok' });
    // The journal's line comes after the exchange's row changes (exchanges.ts setPhase): wait for the line.
    const done = await waitUntil('the exchange is done, in the journal', async () =>
      (await gateway.journalAfter(0)).find(
        (event) => event.type === 'exchange.updated' && (event.payload as { phase: string }).phase === 'done',
      ),
    );
    expect((await gateway.store.exchanges.list())[0]?.phase).toBe('done');
    const announceRuns = (await gateway.listRuns({ sessionKey: group })).filter((run) => run.finalText === 'ANNOUNCE_SKIP');
    expect(announceRuns).toHaveLength(1);
    const replies = (await gateway.journalAfter(0, { sessionKey: group }))
      .filter((event) => event.type === 'session.reply')
      .map((e) => (e.payload as { text: string }).text);
    expect(replies).toEqual(['reply to hello']);
    expect(done.payload).toMatchObject({ announced: false });
  });
});
