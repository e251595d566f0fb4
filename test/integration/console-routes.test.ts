/**
 * The control API routes the console reads (docs/control-api.md, "Console"), against a real gateway process: the
 * collaboration graph, tokens and cost, a message's path, labels and archive marks; the login cookie and its
 * refusals. Bad input gets its exact error.
 */
import { describe, expect, it } from 'vitest';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  tools: { agentToAgent: { enabled: true, allow: ["front", "back"] }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  messages: { queue: { debounceMs: 0 } },
  agents: { list: [{ id: "front", model: "scripted/front", subagents: { allowAgents: ["back"] } }, { id: "back", model: "scripted/back" }] },
  models: {
    prices: { "scripted/front": { input: 2, output: 10 } },
    providers: { scripted: { type: "scripted", models: {
      front: { rules: [
        { match: "^delegate (.+)", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { agentId: "back", label: "helper", task: "{{match.1}}" } }] }, { text: "spawned" }] },
        { match: "sub-agent", reply: "noted" },
        { match: "^twice", steps: [
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "back", message: "one", timeoutSeconds: 20 } }] },
          { toolCalls: [{ tool: "sessions_send", args: { agentId: "back", message: "two", timeoutSeconds: 20 } }] },
          { text: "both" },
        ] },
        { steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "back", message: "check: {{input}}", timeoutSeconds: 20 } }] }, { text: "back says {{tool.sessions_send.reply}}" }] },
      ] },
      back: { rules: [{ reply: "ok ({{input}})" }] },
    } } },
  },
}`);

const suite = gatewayForSuite(configPath);

async function ask(message: string) {
  const sent = await suite.gw.request<{ status: string; inputId: string; reply: string }>('POST', '/v1/send', {
    target: 'front',
    message,
    wait: true,
  });
  expect(sent.body).toMatchObject({ status: 'ok', reply: `back says ok (check: ${message})` });
  return sent.body;
}

describe('the console routes against a real gateway process', () => {
  it('GET /v1/graph: the exchange from front to back in the window, none outside it; a bad window is refused', async () => {
    const before = Date.now();
    await ask('graph');
    const { status, body } = await suite.gw.request<any>('GET', `/v1/graph?since=${before}`);
    expect(status).toBe(200);
    expect(body.nodes).toEqual(['back', 'front']);
    expect(body.edges).toEqual([
      expect.objectContaining({
        kind: 'exchange',
        from: 'front',
        to: 'back',
        count: 1,
        links: [expect.objectContaining({ fromSession: 'agent:front:main', toSession: 'agent:back:main', status: 'done/delivered' })],
      }),
    ]);
    expect((await suite.gw.request<any>('GET', `/v1/graph?since=0&until=${before - 1}`)).body.edges).toEqual([]);
    expect(await suite.gw.request('GET', '/v1/graph?since=yesterday')).toEqual({
      status: 400,
      body: { error: { code: 'INVALID_REQUEST', message: 'since: expected a time in milliseconds since the epoch, got "yesterday"' } },
    });
    expect(await suite.gw.request('GET', '/v1/graph?since=5&until=4')).toEqual({
      status: 400,
      body: { error: { code: 'INVALID_REQUEST', message: 'since (5) is after until (4)' } },
    });
  });

  it('GET /v1/usage: tokens per agent and model, priced from models.prices; an unpriced model has no cost', async () => {
    await ask('usage');
    const { body } = await suite.gw.request<any>('GET', '/v1/usage?since=0');
    const front = body.models.find((row: any) => row.model === 'scripted/front');
    expect(front.cost).toBeCloseTo((front.inputTokens * 2 + front.outputTokens * 10) / 1_000_000, 12);
    expect(body.models.find((row: any) => row.model === 'scripted/back').cost).toBeNull();
    expect(body.agents.find((row: any) => row.agentId === 'back')).toMatchObject({ cost: null });
    expect(body.agents.find((row: any) => row.agentId === 'front').runs).toBe(front.runs);
    // The overview's outbox backlog is counted in the status.
    expect((await suite.gw.request<any>('GET', '/v1/status')).body.outbox).toEqual({ pending: 0, dead: 0 });
  });

  it("GET /v1/inputs/<id>/path: accepted, the run, the tool call, the exchange with back's own steps, the reply", async () => {
    const sent = await ask('path');
    const { body } = await suite.gw.request<any>('GET', `/v1/inputs/${sent.inputId}/path`);
    expect(body.input).toMatchObject({ id: sent.inputId, text: 'path', sessionKey: 'agent:front:main' });
    expect(body.steps.map((step: any) => step.kind)).toEqual(['accepted', 'run.started', 'tool.call', 'exchange', 'run.ended', 'reply']);
    const exchange = body.steps.find((step: any) => step.kind === 'exchange');
    expect(exchange.children.map((step: any) => [step.kind, step.sessionKey, step.depth])).toEqual([
      ['accepted', 'agent:back:main', 1],
      ['run.started', 'agent:back:main', 1],
      ['run.ended', 'agent:back:main', 1],
      ['reply', 'agent:back:main', 1],
    ]);
    expect(body.steps.at(-1).summary).toBe('back says ok (check: path)');
    expect(await suite.gw.request('GET', '/v1/inputs/nope-nope/path')).toMatchObject({ status: 404 });
  });

  it('GET /v1/inputs/<id>/path: two calls of one tool each get the time of their own effect', async () => {
    const sent = await suite.gw.request<{ inputId: string; reply: string }>('POST', '/v1/send', {
      target: 'front',
      message: 'twice',
      wait: true,
      peer: 'twice',
    });
    expect(sent.body.reply).toBe('both');
    const { body } = await suite.gw.request<any>('GET', `/v1/inputs/${sent.body.inputId}/path`);
    const at = (kind: string) => body.steps.filter((step: any) => step.kind === kind).map((step: any) => step.at);
    expect(at('exchange')).toHaveLength(2);
    expect(at('exchange')[0]).toBeLessThan(at('exchange')[1]);
    expect(at('tool.call')).toEqual(at('exchange'));
  });

  it("GET /v1/inputs/<id>/path: a spawn, with the sub-agent's own steps", async () => {
    const sent = await suite.gw.request<{ inputId: string; reply: string }>('POST', '/v1/send', {
      target: 'front',
      message: 'delegate sums',
      // A session of its own (a peer's): the sub-agent's completion goes there, not into the other tests' session.
      peer: 'spawner',
      wait: true,
    });
    expect(sent.body.reply).toBe('spawned');
    const path = await waitUntil('the sub-agent ran', async () => {
      const { body } = await suite.gw.request<any>('GET', `/v1/inputs/${sent.body.inputId}/path`);
      const spawn = body.steps.find((step: any) => step.kind === 'spawn');
      return spawn?.children?.some((step: any) => step.kind === 'reply') ? body : undefined;
    });
    const spawn = path.steps.find((step: any) => step.kind === 'spawn');
    expect(spawn.summary).toMatch(/^spawned back sub-agent "helper" \((running|succeeded)\)$/);
    expect(spawn.ref.kind).toBe('subagent');
    expect(spawn.children.map((step: any) => step.kind)).toEqual(['accepted', 'run.started', 'run.ended', 'reply']);
    expect(spawn.children[0].sessionKey).toMatch(/^agent:back:subagent:/);
    expect(spawn.children.at(-1).summary).toBe('ok (sums)');
  });

  it('PATCH /v1/sessions/<key>: a label and an archive mark, listed by ?archived; bad input is refused', async () => {
    await ask('label');
    const labelled = await suite.gw.request<any>('PATCH', '/v1/sessions/agent:back:main', { label: 'checks', archived: true });
    expect(labelled.body.session).toMatchObject({ key: 'agent:back:main', label: 'checks', archivedAt: expect.any(Number) });
    const archived = await suite.gw.request<any>('GET', '/v1/sessions?archived=true');
    expect(archived.body.sessions.map((session: any) => session.key)).toEqual(['agent:back:main']);
    const current = await suite.gw.request<any>('GET', '/v1/sessions?archived=false');
    expect(current.body.sessions.map((session: any) => session.key)).not.toContain('agent:back:main');
    await suite.gw.request('PATCH', '/v1/sessions/agent:back:main', { label: null, archived: false });
    expect(await suite.gw.request('PATCH', '/v1/sessions/agent:back:main', {})).toEqual({
      status: 400,
      body: {
        error: {
          code: 'INVALID_REQUEST',
          message: 'invalid request body: (root): give label (a string, or null to remove it) or archived',
          details: { problems: ['(root): give label (a string, or null to remove it) or archived'] },
        },
      },
    });
    expect(await suite.gw.request('PATCH', '/v1/sessions/agent:none:main', { archived: true })).toEqual({
      status: 404,
      body: { error: { code: 'SESSION_NOT_FOUND', message: 'no session "agent:none:main" (list them with "switchboard sessions list")' } },
    });
    expect(await suite.gw.request('GET', '/v1/sessions?archived=maybe')).toEqual({
      status: 400,
      body: { error: { code: 'INVALID_REQUEST', message: 'archived: expected true or false, got "maybe"' } },
    });
  });

  it('the CLI labels and archives as the console does: sessions label, sessions archive [--undo], sessions list --current', async () => {
    await ask('cli');
    const cli = cliWith(configPath);
    expect(await cli('sessions', 'label', 'agent:back:main', 'checks')).toMatchObject({
      code: 0,
      stdout: 'agent:back:main is labelled "checks"\n',
    });
    expect(await cli('sessions', 'archive', 'agent:back:main')).toMatchObject({ code: 0, stdout: 'agent:back:main is archived\n' });
    const current = JSON.parse((await cli('--json', 'sessions', 'list', '--current')).stdout) as { sessions: { key: string }[] };
    expect(current.sessions.map((session) => session.key)).toContain('agent:front:main');
    expect(current.sessions.map((session) => session.key)).not.toContain('agent:back:main');
    expect((await cli('sessions', 'list', '--archived')).stdout).toMatch(/agent:back:main\s+back\s+checks\s+archived/);
    expect(await cli('sessions', 'archive', 'agent:back:main', '--undo')).toMatchObject({
      code: 0,
      stdout: 'agent:back:main is current\n',
    });
    expect(await cli('sessions', 'label', 'agent:back:main')).toMatchObject({ code: 0, stdout: 'agent:back:main has no label\n' });
    expect(await cli('sessions', 'list', '--archived', '--current')).toMatchObject({
      code: 1,
      stderr: 'switchboard: --archived and --current exclude each other; give one\n',
    });
  });

  it('login: a token typed in sets an HttpOnly SameSite=Strict cookie the API accepts; a forged or wrong one is refused', async () => {
    const wrong = await fetch(`${suite.gw.url}/login`, { method: 'POST', body: JSON.stringify({ token: 'nope' }) });
    expect(wrong.status).toBe(401);
    const login = await fetch(`${suite.gw.url}/login`, { method: 'POST', body: JSON.stringify({ token: suite.gw.token }) });
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(
      /^switchboard_console=v2\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/,
    );
    const value = cookie.split(';')[0];
    expect((await fetch(`${suite.gw.url}/v1/status`, { headers: { cookie: value } })).status).toBe(200);
    // Another expiry or login id with the same signature, or a signature made with another key: not a login.
    const [name, rest] = value.split('=');
    const [, expiresAt, id, signature] = rest.split('.');
    const forged = [
      `${name}=v2.${Number(expiresAt) + 1}.${id}.${signature}`,
      `${name}=v2.${expiresAt}.${'B'.repeat(22)}.${signature}`,
      `${name}=v2.${expiresAt}.${id}.${'A'.repeat(43)}`,
    ];
    for (const bad of forged) expect((await fetch(`${suite.gw.url}/v1/status`, { headers: { cookie: bad } })).status).toBe(401);
    const link = await suite.gw.request<{ path: string }>('POST', '/v1/console/links');
    const redeemed = await fetch(`${suite.gw.url}${link.body.path}`, { redirect: 'manual' });
    expect([
      redeemed.status,
      redeemed.headers.get('location'),
      redeemed.headers.get('set-cookie')?.startsWith('switchboard_console=v2.'),
    ]).toEqual([303, '/', true]);
    const reused = await fetch(`${suite.gw.url}${link.body.path}`, { redirect: 'manual' });
    expect([reused.status, reused.headers.get('location'), reused.headers.get('set-cookie')]).toEqual([303, '/#/login?link=expired', null]);
  });

  it("GET /v1/graph: a board task is on the map, read from the board's own port (a front's source beside the gateway's)", async () => {
    const before = Date.now();
    const created = await suite.gw.request<{ task: { id: string } }>('POST', '/v1/board/tasks', { title: 'on the map' });
    expect(created.status).toBe(200);
    const { body } = await suite.gw.request<any>('GET', `/v1/graph?since=${before}`);
    expect(body.edges).toContainEqual(
      expect.objectContaining({ kind: 'board', from: 'user', links: [expect.objectContaining({ id: created.body.task.id })] }),
    );
  });
});
