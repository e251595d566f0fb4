import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const config = `{
  agents: { list: [
    { id: "echo", model: "scripted/echo" },
    { id: "clock", model: "scripted/clock" },
    { id: "broken", model: "scripted/broken" },
    { id: "slow", model: "scripted/slow", timeoutSeconds: 1 },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    echo: { rules: [{ match: "^say (.*)$", reply: "you said {{match.1}}" }, { reply: "echo: {{input}}" }] },
    clock: { rules: [{ steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "The time is {{tool.time_now.iso}}" }] }] },
    broken: { rules: [{ error: "model overloaded" }] },
    slow: { rules: [{ delayMs: 5000, reply: "too late" }] },
  } } } },
}`;

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

async function sendAndWait(target: string, message: string) {
  const sent = await gateway.send({ target, message, inbound: { channel: 'cli' } });
  return { sent, result: await gateway.waitForInput(sent.input.id, 10_000) };
}

describe('gateway runs', () => {
  it('run: a scripted reply completes, and transcript, run row and reply route are recorded', async () => {
    gateway = await startTestGateway(config);
    const { sent, result } = await sendAndWait('echo', 'say hello');
    expect(sent.sessionKey).toBe('agent:echo:main');
    expect(result).toMatchObject({
      status: 'completed',
      reply: 'you said hello',
      run: { status: 'succeeded', usage: { modelCalls: 1, steps: 1 } },
    });
    const history = await gateway.history('agent:echo:main');
    expect(history.map((entry) => entry.role)).toEqual(['user', 'assistant']);
    expect(history[0]).toMatchObject({ content: 'say hello', inputId: sent.input.id, provenance: { kind: 'user', channel: 'cli' } });
    expect((await gateway.getSession('agent:echo:main')).route).toEqual({ channel: 'cli' });
    // The session's next user message, from another channel, moves the route there.
    await gateway.send({ target: 'agent:echo:main', message: 'again', inbound: { channel: 'email', peer: 'ann@example.com' } });
    expect((await gateway.getSession('agent:echo:main')).route).toEqual({ channel: 'email', peer: 'ann@example.com' });
    if (result.status !== 'completed') throw new Error('unreachable');
    expect(result.run.preambleChars).toBeGreaterThan(50);
    expect(result.run.preambleChars).toBeLessThan(2000);
    // Unstreamed (nobody watches), the call's request is still measured: the prompt and the tools it was given.
    expect(result.run.request.toolBytes).toBeGreaterThan(100);
    expect(result.run.request.bytes).toBeGreaterThan(result.run.request.toolBytes + result.run.request.systemBytes);
  });

  it('run: the real tool loop runs a tool call and feeds its result to the next step', async () => {
    gateway = await startTestGateway(config);
    const { result } = await sendAndWait('clock', 'what time is it?');
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expect(result.reply).toMatch(/^The time is \d{4}-\d\d-\d\dT/);
    expect(result.run.usage).toMatchObject({ modelCalls: 2, steps: 2 });
    const roles = (await gateway.history('agent:clock:main')).map((entry) => entry.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('run: a provider error records the run failed with the provider message and keeps the input', async () => {
    gateway = await startTestGateway(config);
    const { sent, result } = await sendAndWait('broken', 'hello?');
    expect(result).toMatchObject({
      status: 'completed',
      run: { status: 'failed', errorCode: 'MODEL_PROVIDER_ERROR', errorMessage: 'model overloaded (HTTP 500 from scripted://broken)' },
    });
    const history = await gateway.history('agent:broken:main');
    expect(history[0]).toMatchObject({ role: 'user', content: 'hello?', inputId: sent.input.id });
    expect(history[1]).toMatchObject({ role: 'note', content: 'run failed: model overloaded (HTTP 500 from scripted://broken)' });
    // The failed call's request is measured like any other.
    if (result.status === 'completed') expect(result.run.request.toolBytes).toBeGreaterThan(100);
  });

  it('run: a run past its hard timeout is aborted and recorded timed_out', async () => {
    gateway = await startTestGateway(config);
    const { result } = await sendAndWait('slow', 'hello');
    expect(result).toMatchObject({ status: 'completed', run: { status: 'timed_out', errorCode: 'TIMED_OUT' } });
    if (result.status === 'completed') expect(result.run.endedAt! - result.run.startedAt).toBeLessThan(3000);
  });

  it("run: a run cut off after a finished step keeps that step's text, streamed or not", async () => {
    const twoSteps = config
      .replace(
        '{ id: "slow", model: "scripted/slow", timeoutSeconds: 1 },',
        '{ id: "slow", model: "scripted/slow", timeoutSeconds: 1 }, { id: "halfway", model: "scripted/halfway", timeoutSeconds: 1 },',
      )
      .replace(
        'slow: { rules',
        'halfway: { rules: [{ delayMs: 700, steps: [{ text: "first part", toolCalls: [{ tool: "time_now" }] }, { text: "never" }] }] }, slow: { rules',
      );
    gateway = await startTestGateway(twoSteps);
    const unwatched = (await sendAndWait('halfway', 'go')).result;
    gateway.watchDeltas('agent:halfway:main');
    const watched = (await sendAndWait('halfway', 'go again')).result;
    for (const result of [unwatched, watched]) {
      expect(result).toMatchObject({ status: 'completed', reply: 'first part', run: { status: 'timed_out', usage: { steps: 1 } } });
    }
  });

  it('send: unknown agent, bad session key, empty and oversized messages are refused with exact errors', async () => {
    gateway = await startTestGateway(config.replace('agents: {', 'gateway: { maxMessageChars: 10 }, agents: {'));
    await expect(gateway.send({ target: 'nobody', message: 'x' })).rejects.toMatchObject({
      code: 'AGENT_NOT_FOUND',
      message: 'unknown agent "nobody" (configured agents: echo, clock, broken, slow)',
    });
    await expect(gateway.send({ target: 'agent:echo:subagent:abc', message: 'x' })).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
    await expect(gateway.send({ target: 'agent:echo', message: 'x' })).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
    await expect(gateway.send({ target: 'echo', message: '   ' })).rejects.toMatchObject({
      code: 'MESSAGE_EMPTY',
      message: 'message is empty; send some text',
    });
    await expect(gateway.send({ target: 'echo', message: 'x'.repeat(11) })).rejects.toMatchObject({
      code: 'MESSAGE_TOO_LARGE',
      message: 'message is 11 characters; the limit is 10 (gateway.maxMessageChars)',
    });
    expect(await gateway.store.inputs.list({})).toHaveLength(0);
  });

  it('send: the same idempotency key creates one input and one run', async () => {
    gateway = await startTestGateway(config);
    const a = await gateway.send({ target: 'echo', message: 'once', idempotencyKey: 'k1' });
    const b = await gateway.send({ target: 'echo', message: 'once', idempotencyKey: 'k1' });
    expect(b).toMatchObject({ created: false, input: { id: a.input.id } });
    await gateway.waitForInput(a.input.id, 5000);
    expect(await gateway.listRuns({ sessionKey: 'agent:echo:main' })).toHaveLength(1);
  });
});

describe('routing and cancellation', () => {
  it('bindings: a message without a target goes to the most specific binding of its channel, else the default agent', async () => {
    gateway = await startTestGateway(
      config.replace(
        'agents: {',
        `bindings: [{ agentId: "clock", match: { channel: "slack" } }, { agentId: "echo", match: { channel: "slack", peer: "U1" } }], agents: {`,
      ),
    );
    const byPeer = await gateway.send({ message: 'hi', inbound: { channel: 'slack', peer: 'U1' } });
    const byChannel = await gateway.send({ message: 'hi', inbound: { channel: 'slack', peer: 'U2' } });
    const unbound = await gateway.send({ message: 'hi', inbound: { channel: 'email' } });
    expect([byPeer.sessionKey, byChannel.sessionKey, unbound.sessionKey]).toEqual([
      'agent:echo:slack:direct:U1',
      'agent:clock:slack:direct:U2',
      'agent:echo:main',
    ]);
    expect((await gateway.getSession('agent:echo:slack:direct:U1')).route).toEqual({ channel: 'slack', peer: 'U1' });
  });

  it('cancel: cancelling an active run records it cancelled and the lane moves on', async () => {
    gateway = await startTestGateway(config.replace('timeoutSeconds: 1', 'timeoutSeconds: 30'));
    const sent = await gateway.send({ target: 'slow', message: 'take your time' });
    const runId = await waitUntil('the run is active', () => gateway.status().activeRuns[0]?.runId);
    expect(await gateway.cancelRun(runId)).toBe(true);
    expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({
      status: 'completed',
      run: { status: 'cancelled', errorMessage: 'run was cancelled' },
    });
    expect(await gateway.cancelRun(runId)).toBe(false);
    await expect(gateway.cancelRun('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});

describe('streaming', () => {
  it('run: streamed text deltas are published live and add up to the final reply', async () => {
    gateway = await startTestGateway(config.replace('echo: { rules', 'echo: { chunkChars: 4, rules'));
    const deltas: string[] = [];
    gateway.subscribe((event) => {
      if (event.type === 'delta' && event.sessionKey === 'agent:echo:main') deltas.push(event.text);
    });
    gateway.watchDeltas('agent:echo:main');
    const { result } = await sendAndWait('echo', 'say a fairly long sentence');
    expect(result).toMatchObject({ reply: 'you said a fairly long sentence' });
    expect(deltas.length).toBe(Math.ceil('you said a fairly long sentence'.length / 4));
    expect(deltas.join('')).toBe('you said a fairly long sentence');
  });

  it('scripted: with no matching rule the model says so instead of failing', async () => {
    gateway = await startTestGateway(config.replace('{ reply: "echo: {{input}}" }', '{ match: "^never$", reply: "x" }'));
    const { result } = await sendAndWait('echo', 'something else');
    expect(result).toMatchObject({ reply: '[scripted model echo: no rule matches "something else"]' });
  });
});

describe('history', () => {
  it('context: a run reads at most historyLimit transcript entries of its session', async () => {
    const server = await new FakeProviderServer().start();
    try {
      gateway = await startTestGateway(`{
        agents: { list: [{ id: "bot", model: "fake/m", historyLimit: 2 }] },
        models: { providers: { fake: { type: "openai-compatible", baseURL: "${server.url}/v1" } } },
      }`);
      server.reply({ text: 'r1' }, { text: 'r2' }, { text: 'r3' });
      for (const text of ['one', 'two', 'three']) await sendAndWait('bot', text);
      const third = server.requests[2].body.messages.map((m: { role: string; content: unknown }) => [m.role, m.content]);
      expect(third.slice(1)).toEqual([
        ['user', 'two'],
        ['assistant', 'r2'],
        ['user', 'three'],
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('failures before the model is called', () => {
  it('run: an unreadable workspace prompt file fails the run with the reason instead of leaving it running', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-ws-'));
    mkdirSync(join(workspace, 'SOUL.md'));
    gateway = await startTestGateway(
      config.replace('{ id: "echo", model: "scripted/echo" }', `{ id: "echo", model: "scripted/echo", workspace: "${workspace}" }`),
    );
    const { sent, result } = await sendAndWait('echo', 'hello');
    expect(result).toMatchObject({ status: 'completed', run: { status: 'failed', errorCode: 'INTERNAL' } });
    if (result.status === 'completed') expect(result.run.errorMessage).toMatch(/EISDIR/);
    expect(await gateway.store.inputs.get(sent.input.id)).toMatchObject({ status: 'consumed' });
  });
});
