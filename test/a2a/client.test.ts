/**
 * Our A2A client (the a2a_* tools) against reference servers built in this test from the SDK's own
 * DefaultRequestHandler and InMemoryTaskStore, on 127.0.0.1: one streaming, one not (polled).
 */
import type { Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { InMemoryPushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';
import { ReferenceExecutor, referenceServer } from '../helpers/a2a-reference.js';
import type { A2AClientService } from '../../src/a2a/client.js';
import { ControlApi } from '../../src/http/control-api.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const streamingExecutor = new ReferenceExecutor();
const polledExecutor = new ReferenceExecutor();
const pushyExecutor = new ReferenceExecutor();
const pushyConfigs = new InMemoryPushNotificationStore();
let streamingRef: { server: Server; url: string };
let polledRef: { server: Server; url: string };
let pushyRef: { server: Server; url: string };
let gateway: Gateway;

beforeAll(async () => {
  streamingRef = await referenceServer(true, streamingExecutor);
  polledRef = await referenceServer(false, polledExecutor);
  pushyRef = await referenceServer(false, pushyExecutor, pushyConfigs);
});
afterAll(() => {
  streamingRef.server.closeAllConnections();
  streamingRef.server.close();
  polledRef.server.closeAllConnections();
  polledRef.server.close();
  pushyRef.server.closeAllConnections();
  pushyRef.server.close();
});
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const config = (client = '') => `{
  tools: { agentToAgent: { enabled: true, allow: ["caller", "brief", "ref", "polled", "pushy"] } },
  a2a: {
    remoteAgents: [
      { id: "ref", url: "${streamingRef.url}", token: "ref-token" },
      { id: "polled", url: "${polledRef.url}/${AGENT_CARD_PATH}" },
      { id: "blocked", url: "${streamingRef.url}" },
      { id: "pushy", url: "${pushyRef.url}" },
    ],
    client: { maxPollSeconds: 1 ${client} },
  },
  agents: { list: [{ id: "caller", model: "scripted/c" }, { id: "brief", model: "scripted/c", timeoutSeconds: 1 }] },
  models: { providers: { scripted: { type: "scripted", models: { c: { rules: [
    { match: "the result of your a2a_send", reply: "got late: {{input}}" },
    { match: "^discover", steps: [{ toolCalls: [{ tool: "a2a_discover", args: { agentId: "ref" } }] }, { text: "{{tool.a2a_discover}}" }] },
    { match: "^send (\\\\S+) (.*)", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "{{match.1}}", message: "{{match.2}}", timeoutSeconds: 10 } }] }, { text: "{{tool.a2a_send}}" }] },
    { match: "^push later", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "pushy", message: "slow pushed job", timeoutSeconds: 0 } }] }, { text: "{{tool.a2a_send.taskId}}" }] },
    { match: "^two then fail", steps: [
      { toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "quick first" } }] },
      { toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "slow second", timeoutSeconds: 30 } }] },
      { text: "never" },
    ] },
    { match: "^park", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "hold forever", timeoutSeconds: 0 } }] }, { text: "parked {{tool.a2a_send.state}}" }] },
    { match: "^later", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "slow job", timeoutSeconds: 0.2 } }] }, { text: "{{tool.a2a_send.state}}" }] },
    { match: "^hold and cancel", steps: [
      { toolCalls: [{ tool: "a2a_send", args: { agentId: "ref", message: "hold on", timeoutSeconds: 0 } }] },
      { toolCalls: [{ tool: "a2a_cancel", args: { agentId: "ref", taskId: "{{tool.a2a_send.taskId}}" } }] },
      { text: "{{tool.a2a_cancel.state}}" },
    ] },
  ] } } } } },
}`;

async function ask(message: string): Promise<string> {
  const sent = await gateway.send({ target: 'caller', message });
  const result = await gateway.waitForInput(sent.input.id, 15_000);
  if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
  return result.reply ?? '';
}

describe('A2A client: the a2a_* tools against SDK reference servers', () => {
  it('a2a_discover summarises the card; a2a_send streams to completion with the configured token', async () => {
    gateway = await startTestGateway(config());
    expect(JSON.parse(await ask('discover'))).toMatchObject({
      remote: 'ref',
      name: 'Reference',
      streaming: true,
      skills: [{ id: 'echo', name: 'Echo', description: 'says it back' }],
    });
    const result = JSON.parse(await ask('send ref quick one'));
    expect(result).toMatchObject({ state: 'completed', text: 'ref: quick one' });
    expect(streamingExecutor.authorizations.at(-1)).toBe('Bearer ref-token');
  });

  it('a stream that drops mid-task falls back to polling GetTask until the task finishes', async () => {
    gateway = await startTestGateway(config());
    streamingExecutor.dropStreams = true;
    const before = streamingExecutor.authorizations.length;
    try {
      expect(JSON.parse(await ask('send ref slow after a drop'))).toMatchObject({ state: 'completed', text: 'ref: slow after a drop' });
    } finally {
      streamingExecutor.dropStreams = false;
    }
    // The stream, then at least one GetTask poll.
    expect(streamingExecutor.authorizations.length - before).toBeGreaterThanOrEqual(2);
  });

  it('a remote that does not stream is polled until it finishes', async () => {
    gateway = await startTestGateway(config());
    expect(JSON.parse(await ask('send polled slow but sure'))).toMatchObject({ state: 'completed', text: 'ref: slow but sure' });
  });

  it('an input-required answer comes back with the question; the caller can continue the task', async () => {
    gateway = await startTestGateway(config());
    expect(JSON.parse(await ask('send ref ask me'))).toMatchObject({ state: 'input-required', text: 'which colour?' });
  });

  it('a result that comes after the wait arrives in the session as a message, once, and starts a run', async () => {
    gateway = await startTestGateway(config());
    expect(await ask('later')).toBe('timeout');
    const delivered = await waitUntil(
      'the late result arrived',
      async () => {
        const inputs = (await gateway.store.inputs.list({ sessionKey: 'agent:caller:main' })).filter(
          (input) => input.provenance.sourceTool === 'a2a_send',
        );
        return inputs.length > 0 && inputs.every((input) => input.status === 'consumed') && inputs;
      },
      10_000,
    );
    expect(delivered).toHaveLength(1);
    expect(delivered[0].text).toMatch(/^\[the result of your a2a_send to ref: task \S+ is completed\]\nref: slow job$/);
    expect(delivered[0].provenance).toMatchObject({ kind: 'a2a', sourceAgent: 'ref' });
    const run = await gateway.getRun(delivered[0].runId!);
    expect(run.run.finalText).toMatch(/^got late: /);
  });

  it("a followed task on a remote that supports push registers our callback; the callback takes only the task's secret", async () => {
    let a2a!: A2AClientService;
    gateway = await startTestGateway(config(), {}, undefined, { onClient: (client) => (a2a = client) });
    const api = new ControlApi(gateway, {
      host: '127.0.0.1',
      port: 0,
      token: 'control-token-for-the-test',
      a2aCallback: (taskId, token) => a2a.receivePush(taskId, token),
    });
    const url = await api.listen();
    try {
      // Followed before the callback base is known (as after a restart); registered once it is.
      const taskId = await ask('push later');
      a2a.setCallbackBase(url);
      const registered = await waitUntil(
        'our callback is registered at the remote',
        async () => (await pushyConfigs.load(taskId, new ServerCallContext()))[0],
      );
      expect(registered.url).toBe(`${url}/a2a-callback/${taskId}`);
      const wrong = await fetch(registered.url, { method: 'POST', headers: { 'X-A2A-Notification-Token': 'not-it' }, body: '{}' });
      expect(wrong.status).toBe(401);
      const right = await fetch(registered.url, { method: 'POST', headers: { 'X-A2A-Notification-Token': registered.token }, body: '{}' });
      expect(right.status).toBe(200);
      const delivered = await waitUntil(
        'the result arrived',
        async () => {
          const inputs = (await gateway.store.inputs.list({ sessionKey: 'agent:caller:main' })).filter(
            (input) => input.provenance.sourceAgent === 'pushy',
          );
          return inputs.length > 0 && inputs;
        },
        10_000,
      );
      expect(delivered[0].text).toMatch(/is completed\]\nref: slow pushed job$/);
    } finally {
      await api.close();
    }
  });

  it('results taken by a run that then fails are delivered again as messages, once each', async () => {
    gateway = await startTestGateway(config());
    const sent = await gateway.send({ target: 'brief', message: 'two then fail' });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed', run: { status: 'timed_out' } });
    const delivered = await waitUntil(
      'both results arrived as messages',
      async () => {
        const inputs = (await gateway.store.inputs.list({ sessionKey: 'agent:brief:main' })).filter(
          (input) => input.provenance.sourceTool === 'a2a_send',
        );
        return inputs.length === 2 && inputs;
      },
      10_000,
    );
    expect(delivered.map((input) => input.text.split('\n')[1]).sort()).toEqual(['ref: quick first', 'ref: slow second']);
  });

  it('a2a_cancel cancels the remote task', async () => {
    gateway = await startTestGateway(config());
    expect(await ask('hold and cancel')).toBe('canceled');
  });

  it("a2a_send sends the call's ledger key as the A2A messageId, so a rerun's resend can be deduped by the remote", async () => {
    gateway = await startTestGateway(config());
    const before = streamingExecutor.messageIds.length;
    await ask('send ref quick keyed');
    const [call] = (await gateway.store.toolCalls.list({ sessionKey: 'agent:caller:main' })).filter((row) => row.tool === 'a2a_send');
    expect(streamingExecutor.messageIds.slice(before)).toEqual([call.key]);
  });

  it('a followed task that never settles is given up after a2a.client.followTimeoutSeconds, and the session is told', async () => {
    gateway = await startTestGateway(config(', followTimeoutSeconds: 1'));
    expect(await ask('park it')).toBe('parked timeout');
    const told = await waitUntil(
      'the session was told',
      async () =>
        (await gateway.store.inputs.list({ sessionKey: 'agent:caller:main' })).find((input) => input.text.includes('stopped following')),
      10_000,
    );
    expect(told.text).toMatch(
      /^\[the result of your a2a_send to ref: task \S+ is working\]\nstopped following the task after 1s \(a2a.client.followTimeoutSeconds\) without a final result; ask for it with a2a_get_task$/,
    );
  });

  it('a remote agent outside tools.agentToAgent.allow is refused by the policy', async () => {
    gateway = await startTestGateway(config());
    expect(JSON.parse(await ask('send blocked hi'))).toEqual({
      status: 'forbidden',
      layer: 'agentToAgent',
      error:
        'cannot call remote agent "blocked": tools.agentToAgent.allow (["caller","brief","ref","polled","pushy"]) must match both "caller" and "blocked"',
    });
  });
  it('a remote called by URL is reached at a private address only with a2a.client.allowPrivateTargets', async () => {
    const byUrl = (extra: string) => `{
      tools: { agentToAgent: { enabled: true, allow: ["*"] } },
      a2a: { client: { allowUrls: true, maxPollSeconds: 1 ${extra} } },
      agents: { list: [{ id: "caller", model: "scripted/c" }] },
      models: { providers: { scripted: { type: "scripted", models: { c: { rules: [
        { match: "^url (\\\\S+) (.*)", steps: [{ toolCalls: [{ tool: "a2a_send", args: { url: "{{match.1}}", message: "{{match.2}}", timeoutSeconds: 10 } }] }, { text: "{{tool.a2a_send}}" }] },
      ] } } } } },
    }`;
    const before = streamingExecutor.messageIds.length;
    gateway = await startTestGateway(byUrl(''));
    const refused = JSON.parse(await ask(`url ${streamingRef.url} quick private`));
    expect(refused.status).toBe('error');
    expect(refused.error).toContain(
      'a private, loopback or link-local address; only public targets are allowed unless a2a.client.allowPrivateTargets is set',
    );
    expect(streamingExecutor.messageIds.length).toBe(before);
    await stopTestGateway(gateway);
    gateway = await startTestGateway(byUrl(', allowPrivateTargets: true'));
    expect(JSON.parse(await ask(`url ${streamingRef.url} quick allowed`))).toMatchObject({
      state: 'completed',
      text: 'ref: quick allowed',
    });
  });
});
