/**
 * The seeds' configurations (seed 001 section 9, seed 002 section 6) on scripted models: who sends what
 * to whom, how many ping-pong turns run, what is announced, and what is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { ExchangeRecord, InputRecord } from '../../src/ports/index.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

async function exchangeDone(): Promise<ExchangeRecord> {
  return waitUntil(
    'the exchange is done',
    async () => (await gateway.store.exchanges.list()).find((exchange) => exchange.phase === 'done'),
    10_000,
  );
}

async function inputsOf(sessionKey: string): Promise<InputRecord[]> {
  return gateway.store.inputs.list({ sessionKey, limit: 100 });
}

async function replies(sessionKey: string): Promise<string[]> {
  return (await gateway.journalAfter(0, { sessionKey }))
    .filter((event) => event.type === 'session.reply')
    .map((event) => (event.payload as { text: string }).text);
}

describe('seed 001 9.1: support + expert', () => {
  const config = `{
    agents: { list: [
      { id: "support", name: "Support", model: "scripted/support" },
      { id: "expert", name: "Expert", model: "scripted/expert" },
    ] },
    bindings: [{ agentId: "support", match: { channel: "whatsapp" } }],
    tools: { agentToAgent: { enabled: true, allow: ["support", "expert"] }, sessions: { visibility: "all" } },
    session: { agentToAgent: { maxPingPongTurns: 3 } },
    models: { providers: { scripted: { type: "scripted", models: {
      support: { rules: [
        { match: "agent-to-agent turn 1 of", reply: "Does that hold for version 2?" },
        { match: "agent-to-agent turn 3 of", reply: "REPLY_SKIP" },
        { match: "technical problem: (.*)", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { sessionKey: "agent:expert:whatsapp:group:tech-group", message: "A user reports: {{match.1}}", timeoutSeconds: 30 } }] },
          { text: "Our expert says: {{tool.sessions_send.reply}}" },
        ] },
      ] },
      expert: { rules: [
        { match: "announce step", reply: "Resolved with support: clear the cache, then restart." },
        { match: "agent-to-agent turn 2 of", reply: "Yes, version 2 included." },
        { match: "A user reports", reply: "Clear the cache and restart (asked by {{from.agent}})." },
        { reply: "noted" },
      ] },
    } } } },
  }`;

  it('support asks expert, waits for the reply, three ping-pong turns run, and expert announces in its group', async () => {
    gateway = await startTestGateway(config);
    const group = 'agent:expert:whatsapp:group:tech-group';
    // The tech group has talked to expert before, so its session has a channel to announce to.
    const hello = await gateway.send({ target: 'expert', message: 'hello', inbound: { channel: 'whatsapp', group: 'tech-group' } });
    await gateway.waitForInput(hello.input.id, 5000);

    const asked = await gateway.send({ message: 'technical problem: the app crashes', inbound: { channel: 'whatsapp', peer: 'alice' } });
    expect(asked.sessionKey).toBe('agent:support:whatsapp:direct:alice');
    const answered = await gateway.waitForInput(asked.input.id, 10_000);
    expect(answered).toMatchObject({ status: 'completed', reply: 'Our expert says: Clear the cache and restart (asked by support).' });

    const exchange = await exchangeDone();
    expect(exchange).toMatchObject({
      requesterSession: asked.sessionKey,
      targetSession: group,
      hop: 1,
      turn: 3,
      replyState: 'delivered',
      replyStatus: 'succeeded',
    });

    // The request reached expert as a message from another agent, not from its user.
    const [request] = (await inputsOf(group)).filter((input) => input.provenance.exchange?.step === 'request');
    expect(request.provenance).toMatchObject({
      kind: 'inter_session',
      sourceAgent: 'support',
      sourceSession: asked.sessionKey,
      sourceTool: 'sessions_send',
      conversationId: exchange.conversationId,
      hop: 1,
    });
    expect(request.text).toBe('A user reports: the app crashes');

    // Turns alternate requester, target, requester; turn 3 answered REPLY_SKIP.
    const turns = [...(await inputsOf(asked.sessionKey)), ...(await inputsOf(group))]
      .filter((input) => input.provenance.exchange?.step === 'turn')
      .sort((a, b) => a.provenance.exchange!.turn! - b.provenance.exchange!.turn!);
    expect(turns.map((input) => [input.provenance.exchange!.turn, input.sessionKey, input.text])).toEqual([
      // Support's sessions_send already returned the reply: turn 1 refers to it instead of repeating it.
      [1, asked.sessionKey, "(expert's reply, which your sessions_send returned above)"],
      [2, group, 'Does that hold for version 2?'],
      [3, asked.sessionKey, 'Yes, version 2 included.'],
    ]);

    // Alice heard support once; the turns went to expert, not to her. The group got the announce.
    expect(await replies(asked.sessionKey)).toEqual(['Our expert says: Clear the cache and restart (asked by support).']);
    await waitUntil('the announce reached the group', async () => (await replies(group)).length === 2);
    expect(await replies(group)).toEqual(['noted', 'Resolved with support: clear the cache, then restart.']);

    // No text twice: the reply is once in support's session; the announce quotes nothing expert has seen.
    const supportHistory = JSON.stringify(await gateway.history(asked.sessionKey));
    expect(supportHistory.split('Clear the cache and restart (asked by support).').length - 1).toBe(2); // the tool result and support's own answer quoting it
    const [announce] = (await inputsOf(group)).filter((input) => input.provenance.exchange?.step === 'announce');
    expect(announce.text).toBe(
      'Agent-to-agent announce step: your conversation with agent "support" above is over.\nWrite what to post to your channel about it, or reply exactly ANNOUNCE_SKIP to post nothing.',
    );
  });
});

describe('seed 001 9.2: analyst + critic ping-pong', () => {
  const config = (criticRules: string) => `{
    agents: { list: [
      { id: "analyst", name: "Analyst", model: "scripted/analyst" },
      { id: "critic", name: "Critic", model: "scripted/critic" },
    ] },
    tools: { agentToAgent: { enabled: true, allow: ["analyst", "critic"] }, sessions: { visibility: "all" } },
    session: { agentToAgent: { maxPingPongTurns: 5 } },
    models: { providers: { scripted: { type: "scripted", models: {
      analyst: { rules: [
        { match: "agent-to-agent turn (\\\\d) of", reply: "analyst revision {{match.1}}" },
        { match: "analyse (.*)", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "critic", message: "draft analysis of {{match.1}}" } }] },
          { text: "sent for review: {{tool.sessions_send.status}}" },
        ] },
      ] },
      critic: { rules: [${criticRules}] },
    } } } },
  }`;

  async function turnsOf(exchange: ExchangeRecord) {
    const all = [...(await inputsOf(exchange.requesterSession)), ...(await inputsOf(exchange.targetSession))];
    return all
      .filter((input) => input.provenance.exchange?.id === exchange.id && input.provenance.exchange.step === 'turn')
      .sort((a, b) => a.provenance.exchange!.turn! - b.provenance.exchange!.turn!)
      .map((input) => `${input.provenance.exchange!.turn}:${input.provenance.exchange!.role}:${input.text}`);
  }

  it('analyst and critic alternate for the full five turns, each a real run', async () => {
    gateway = await startTestGateway(
      config(`
      { match: "agent-to-agent turn (\\\\d) of", reply: "critic check {{match.1}}" },
      { match: "draft analysis", reply: "critic: the sample is too small" },`),
    );
    const sent = await gateway.send({ target: 'analyst', message: 'analyse churn' });
    expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({ reply: 'sent for review: ok' });
    const exchange = await exchangeDone();
    expect(exchange.turn).toBe(5);
    expect(await turnsOf(exchange)).toEqual([
      "1:requester:(critic's reply, which your sessions_send returned above)",
      '2:target:analyst revision 1',
      '3:requester:critic check 2',
      '4:target:analyst revision 3',
      '5:requester:critic check 4',
    ]);
    // One run per turn, plus the analyst's own run and the critic's first reply; no announce (no channel).
    const runs = await gateway.listRuns({ limit: 100 });
    expect(runs.filter((run) => run.agentId === 'analyst')).toHaveLength(4);
    expect(runs.filter((run) => run.agentId === 'critic')).toHaveLength(3);
    expect(runs.every((run) => run.status === 'succeeded')).toBe(true);
  });

  it('REPLY_SKIP from the critic ends the conversation at that turn', async () => {
    gateway = await startTestGateway(
      config(`
      { match: "agent-to-agent turn 2 of", reply: "REPLY_SKIP" },
      { match: "draft analysis", reply: "critic: the sample is too small" },`),
    );
    await gateway.send({ target: 'analyst', message: 'analyse churn' });
    const exchange = await exchangeDone();
    expect(exchange.turn).toBe(2);
    expect(await turnsOf(exchange)).toEqual([
      "1:requester:(critic's reply, which your sessions_send returned above)",
      '2:target:analyst revision 1',
    ]);
    // The exchange's row moves to done before its event is journaled: wait for the event.
    const ended = await waitUntil('the exchange is journaled done', async () =>
      (await gateway.journalAfter(0)).find(
        (event) => event.type === 'exchange.updated' && (event.payload as { phase: string }).phase === 'done',
      ),
    );
    expect(ended.payload).toMatchObject({
      endedAtTurn: 2,
      skipped: true,
      announce: 'skipped: the target session has no channel to post to',
    });
  });
});

describe('seed 002 section 6: the minimal configuration', () => {
  // The seed writes `tools` twice; JSON5 would keep only the second and silently drop agentToAgent.
  const literal = `{
    tools: { agentToAgent: { enabled: true, allow: ["main", "coding", "research"] } },
    session: { agentToAgent: { maxPingPongTurns: 3 } },
    agents: { defaults: { subagents: { maxSpawnDepth: 2, maxChildrenPerAgent: 5, maxConcurrent: 8, runTimeoutSeconds: 900, archiveAfterMinutes: 60 } },
      list: [{ id: "main", model: "scripted/m" }] },
    tools: { sessions: { visibility: "tree" } },
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "x" }] } } } } },
  }`;

  it('the literal seed text is refused: its second tools section would erase the first', async () => {
    await expect(startTestGateway(literal)).rejects.toThrow(
      /tools: appears twice \(lines 2 and 6\); JSON5 would silently keep only the last/,
    );
  });

  const merged = (visibility: string) => `{
    tools: { agentToAgent: { enabled: true, allow: ["main", "coding", "research"] }, sessions: { visibility: "${visibility}" } },
    session: { agentToAgent: { maxPingPongTurns: 3 } },
    agents: {
      defaults: { subagents: { maxSpawnDepth: 2, maxChildrenPerAgent: 5, maxConcurrent: 8, runTimeoutSeconds: 900, archiveAfterMinutes: 60 } },
      list: [{ id: "main", model: "scripted/main" }, { id: "coding", model: "scripted/coding" }, { id: "research", model: "scripted/coding" }, { id: "other", model: "scripted/coding" }],
    },
    models: { providers: { scripted: { type: "scripted", models: {
      main: { rules: [
        { match: "agent-to-agent turn", reply: "thanks" },
        { match: "ask (\\\\S+)", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "{{match.1}}", message: "status please" } }] }, { text: "{{tool.sessions_send.status}}|{{tool.sessions_send.layer}}|{{tool.sessions_send.error}}" }] },
      ] },
      coding: { rules: [{ match: "agent-to-agent turn", reply: "REPLY_SKIP" }, { reply: "all green" }] },
    } } } },
  }`;

  async function ask(target: string): Promise<string> {
    const sent = await gateway.send({ target: 'main', message: `ask ${target}` });
    const result = await gateway.waitForInput(sent.input.id, 10_000);
    if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
    return result.reply ?? '';
  }

  it('with visibility "tree", the visibility layer refuses another agent even though agentToAgent allows it', async () => {
    gateway = await startTestGateway(merged('tree'));
    // With nothing it could reach (no other agent visible, no session spawned), main is not offered sessions_send;
    // a model that calls it anyway is refused with the layer and key, word for word as send --from is.
    expect(await ask('coding')).toBe(
      'forbidden|visibility|cannot send to session "agent:coding:main" of agent "coding": tools.sessions.visibility is "tree", and reaching another agent\'s sessions needs "all"',
    );
    const [run] = await gateway.listRuns({ sessionKey: 'agent:main:main' });
    expect(run.errorMessage ?? '').toBe('');
    await expect(
      gateway.sendAs('agent:main:main', { agentId: 'coding', message: 'status please', timeoutSeconds: 0, idempotencyKey: 'tree' }),
    ).rejects.toMatchObject({
      code: 'VISIBILITY_DENIED',
      message:
        'cannot send to session "agent:coding:main" of agent "coding": tools.sessions.visibility is "tree", and reaching another agent\'s sessions needs "all"',
    });
    expect(await inputsOf('agent:coding:main')).toEqual([]);
  });

  it('with visibility "all", listed agents talk (ping-pong capped at 3) and an unlisted one is refused by the policy', async () => {
    gateway = await startTestGateway(merged('all'));
    expect(await ask('coding')).toBe('ok||');
    const exchange = await exchangeDone();
    expect(exchange).toMatchObject({ maxTurns: 3, turn: 2 });
    expect(await ask('other')).toBe(
      'forbidden|agentToAgent|cannot send to agent "other": agent "other" is not in tools.agentToAgent.allow (["main","coding","research"]); requester and target must both match',
    );
  });
});

describe('seed 001 9.4: a sandboxed agent is limited to the sessions it spawned', () => {
  const config = `{
    tools: { agentToAgent: { enabled: true, allow: ["*"] }, sessions: { visibility: "all" } },
    session: { agentToAgent: { maxPingPongTurns: 0 } },
    agents: { list: [
      { id: "sandbox-agent", model: "scripted/sandboxed", sandbox: { mode: "all", scope: "agent" },
        tools: { allow: ["exec", "read", "sessions_list", "sessions_send"], deny: ["write", "edit", "browser", "cron"] } },
      { id: "helper", model: "scripted/helper" },
    ] },
    models: { providers: { scripted: { type: "scripted", models: {
      sandboxed: { rules: [
        { match: "hello child", reply: "child here" },
        { match: "list", steps: [{ toolCalls: [{ tool: "sessions_list" }] }, { text: "{{tool.sessions_list.sessions}}" }] },
        { match: "send to (\\\\S+)", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { sessionKey: "{{match.1}}", message: "hello child" } }] },
          { text: "{{tool.sessions_send.status}}|{{tool.sessions_send.layer}}|{{tool.sessions_send.error}}{{tool.sessions_send.reply}}" },
        ] },
        { match: "history", steps: [{ toolCalls: [{ tool: "sessions_history", args: { sessionKey: "agent:sandbox-agent:main" } }] }, { text: "{{tool.sessions_history}}" }] },
      ] },
      helper: { rules: [{ reply: "child here" }] },
    } } } },
  }`;
  const main = 'agent:sandbox-agent:main';
  const child = 'agent:sandbox-agent:subagent:c1';

  async function ask(message: string): Promise<string> {
    const sent = await gateway.send({ target: 'sandbox-agent', message });
    const result = await gateway.waitForInput(sent.input.id, 10_000);
    if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
    return result.reply ?? '';
  }

  it('reaches its own spawned sub-agent, but no other agent and no unrelated session of its own agent', async () => {
    gateway = await startTestGateway(config);
    await gateway.store.sessions.ensure({ key: main, agentId: 'sandbox-agent' }, Date.now());
    await gateway.store.sessions.ensure({ key: child, agentId: 'sandbox-agent', parentKey: main, depth: 1 }, Date.now());
    await gateway.store.sessions.ensure(
      { key: 'agent:sandbox-agent:subagent:other', agentId: 'sandbox-agent', parentKey: 'agent:sandbox-agent:cli:direct:bob', depth: 1 },
      Date.now(),
    );
    await gateway.store.sessions.ensure({ key: 'agent:helper:main', agentId: 'helper' }, Date.now());

    expect(await ask(`send to ${child}`)).toBe('ok||child here');
    expect(await ask('send to agent:helper:main')).toBe(
      'forbidden|visibility|cannot send to session "agent:helper:main" of agent "helper": this session is sandboxed (agents.list[sandbox-agent].sandbox.mode "all") and may only reach itself and the sessions it spawned; no other setting lifts that',
    );
    expect(await ask('send to agent:sandbox-agent:subagent:other')).toBe(
      'forbidden|visibility|cannot send to session "agent:sandbox-agent:subagent:other": this session is sandboxed (agents.list[sandbox-agent].sandbox.mode "all") and may only reach the sessions it spawned',
    );
    const listed = JSON.parse(await ask('list')) as { sessionKey: string }[];
    expect(listed.map((s) => s.sessionKey).sort()).toEqual([main, child].sort());
    // sessions_history is not in its tool allow list: the model is not offered it, and a call to it is refused with the layer and key.
    expect(JSON.parse(await ask('history'))).toEqual({
      status: 'forbidden',
      layer: 'tool',
      error:
        'agent "sandbox-agent" may not use sessions_history: the tool policy leaves it out (agents.list[sandbox-agent].tools.allow (["exec","read","sessions_list","sessions_send"]) does not include it)',
    });
  });
});
