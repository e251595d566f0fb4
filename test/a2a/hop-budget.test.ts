/**
 * The hop budget across A2A between Switchboard gateways: a2a_send carries its run's conversation one hop further in
 * the message's metadata, the receiving gateway's inputs carry it on, and a message past
 * session.agentToAgent.maxHops is rejected with the reason journalled (`loop.stopped`).
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { TaskState, taskStateToJSON, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { serveA2AFront, userMessage, type A2AFront } from '../helpers/a2a-front.js';
import { waitUntil } from '../helpers/wait.js';

const MAX_HOPS = 3;

let served: A2AFront | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/** A port free a moment ago, so that the gateway's agents can name their own A2A front as a remote. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Two agents that send every message they get on to the other over A2A, without waiting. */
function config(url: string): string {
  return `{
    a2a: {
      server: { enabled: true, requireAuth: false },
      remoteAgents: [
        { id: "to-ping", url: "${url}/a2a/ping/" },
        { id: "to-pong", url: "${url}/a2a/pong/" },
        { id: "to-echo", url: "${url}/a2a/echo/" },
      ],
    },
    tools: { agentToAgent: { enabled: true } },
    session: { agentToAgent: { maxHops: ${MAX_HOPS} } },
    agents: { list: [{ id: "ping", model: "scripted/ping" }, { id: "pong", model: "scripted/pong" }, { id: "echo", model: "scripted/echo" }] },
    models: { providers: { scripted: { type: "scripted", models: {
      echo: { rules: [{ reply: "echo: {{input}}", delayMs: 1000 }] },
      ping: { rules: [
        { match: "the result of your a2a_send", reply: "noted" },
        { match: "^ask echo", steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "to-echo", message: "hello", timeoutSeconds: 0 } }] }, { text: "asked" }] },
        { steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "to-pong", message: "ball", timeoutSeconds: 0 } }] }, { text: "sent {{tool.a2a_send.code}}" }] },
      ] },
      pong: { rules: [
        { match: "the result of your a2a_send", reply: "noted" },
        { steps: [{ toolCalls: [{ tool: "a2a_send", args: { agentId: "to-ping", message: "ball", timeoutSeconds: 0 } }] }, { text: "sent {{tool.a2a_send.code}}" }] },
      ] },
    } } } },
  }`;
}

async function serveOnFreePort(): Promise<A2AFront> {
  // The agents' remotes name the front's own URL, so the config is written for a port found free a moment before.
  const port = await freePort();
  return serveA2AFront(config(`http://127.0.0.1:${port}`), undefined, undefined, port);
}

describe('hop budget across A2A', () => {
  it('two agents passing a message back and forth over A2A stop at maxHops, and the last send says why', async () => {
    served = await serveOnFreePort();
    const { gateway } = served;
    const sent = await gateway.send({ target: 'ping', message: 'start' });
    await gateway.waitForInput(sent.input.id, 15_000);
    // ping (no conversation) sends hop 1 to pong, pong hop 2 to ping, ping hop 3 to pong; pong's hop 4 is refused.
    const refused = await waitUntil(
      'the send past the budget refused',
      async () =>
        (await gateway.store.runs.list({ limit: 100 })).find(
          (run) => run.status === 'succeeded' && /HOP_LIMIT_EXCEEDED/.test(run.finalText ?? ''),
        ),
      20_000,
    );
    expect(refused.sessionKey).toMatch(/^agent:pong:a2a:/);
    const sessions = new Set((await gateway.store.runs.list({ limit: 100 })).map((run) => run.sessionKey));
    const a2aInputs = (await Promise.all([...sessions].map((sessionKey) => gateway.store.inputs.list({ sessionKey, limit: 100 }))))
      .flat()
      .filter((input) => input.provenance.kind === 'a2a');
    // One message per hop, each carrying the conversation the first send started.
    expect(a2aInputs.map((input) => input.provenance.hop).sort()).toEqual([1, 2, 3]);
    expect(new Set(a2aInputs.map((input) => input.provenance.conversationId)).size).toBe(1);
  });

  it('a result that arrives after a2a_send stopped waiting stays at the hop its send carried', async () => {
    served = await serveOnFreePort();
    const { gateway } = served;
    const sent = await gateway.send({ target: 'ping', message: 'ask echo' });
    await gateway.waitForInput(sent.input.id, 15_000);
    // echo answers a second after it is asked (its delayMs), so the result always comes after a2a_send returned: when
    // echo answered within the send, the result came back with the tool's answer and no late result was left to test.
    const result = await waitUntil(
      "the late result in ping's session",
      async () =>
        (await gateway.store.inputs.list({ sessionKey: 'agent:ping:main', limit: 10 })).find((input) =>
          input.text.startsWith('[the result of your a2a_send'),
        ),
      20_000,
    );
    const sessions = new Set((await gateway.store.runs.list({ limit: 100 })).map((run) => run.sessionKey));
    const [asked] = (await Promise.all([...sessions].map((sessionKey) => gateway.store.inputs.list({ sessionKey, limit: 10 }))))
      .flat()
      .filter((input) => input.sessionKey.startsWith('agent:echo:a2a:'));
    expect(asked.provenance).toMatchObject({ hop: 1, conversationId: expect.any(String) });
    // Answering the result would be hop 2 of the same conversation, not hop 1 of a new one.
    expect(result.provenance).toMatchObject({ hop: 1, conversationId: asked.provenance.conversationId });
  });

  it('a message past the budget from another gateway is rejected with the reason, and loop.stopped is journalled', async () => {
    served = await serveOnFreePort();
    const a2a = await new ClientFactory({ transports: [new JsonRpcTransportFactory({})] }).createFromUrl(`${served.url}/a2a/ping/`);
    const message = userMessage('ball', { metadata: { switchboard: { conversation: 'c-1', hop: MAX_HOPS + 1 } } });
    const task = (await a2a.sendMessage({ message } as never)) as Task;
    const settled = await waitUntil('the task ended', async () => {
      const current = (await a2a.getTask({ id: task.id } as never)) as Task;
      return current.status?.state === TaskState.TASK_STATE_REJECTED ? current : undefined;
    });
    expect(taskStateToJSON(settled.status!.state)).toBe(taskStateToJSON(TaskState.TASK_STATE_REJECTED));
    const events = await served.gateway.store.events.list({ limit: 1000 });
    const stopped = events.find((event) => event.type === 'loop.stopped');
    expect(stopped?.payload).toMatchObject({ channel: 'a2a', conversationId: 'c-1', hop: MAX_HOPS + 1, maxHops: MAX_HOPS });
    expect(await served.gateway.store.runs.list({ limit: 10 })).toEqual([]);
  });
});
