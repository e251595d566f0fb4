/**
 * Interop with a peer on the v0.3 SDK itself (@a2a-js/sdk 0.3.14, installed as `a2a-sdk-v03`), not the v1 SDK's
 * compat client: it fetches the card without an A2A-Version header and reads only the v0.3 shape (its `url`). With
 * `a2a.server.defaultCardVersion: "0.3"` it finds the gateway by its card and works; with the default, 1.0, it cannot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient, ClientFactory } from 'a2a-sdk-v03/client';
import type { Task } from 'a2a-sdk-v03';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const config = (cardVersion?: string) =>
  tempConfig(`{
    a2a: { server: { enabled: true, requireAuth: false${cardVersion ? `, defaultCardVersion: "${cardVersion}"` : ''} } },
    agents: { list: [{ id: "echo", model: "scripted/echo" }] },
    models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
  }`).configPath;

let v03: GatewayProcess;
let v1: GatewayProcess;
beforeAll(async () => {
  [v03, v1] = await Promise.all([startGatewayProcess(config('0.3')), startGatewayProcess(config())]);
});
afterAll(async () => {
  await Promise.all([stopGatewayProcess(v03), stopGatewayProcess(v1)]);
});

const message = (text: string) => ({
  message: { kind: 'message' as const, messageId: `v03-${Math.random()}`, role: 'user' as const, parts: [{ kind: 'text' as const, text }] },
});
const answerOf = (task: Task) =>
  task.artifacts?.flatMap((artifact) => artifact.parts.map((part) => (part.kind === 'text' ? part.text : ''))).join('');

describe('A2A server: a peer on the v0.3 SDK', () => {
  it('with defaultCardVersion 0.3 it finds the agent by its card, sends, reads the task and its push config back', async () => {
    const client = await A2AClient.fromCardUrl(`${v03.url}/a2a/echo/.well-known/agent-card.json`);
    const sent = await client.sendMessage(message('from an old peer'));
    if ('error' in sent) throw new Error(`sendMessage failed: ${JSON.stringify(sent.error)}`);
    const task = sent.result as Task;
    expect({ kind: task.kind, state: task.status.state, answer: answerOf(task) }).toEqual({
      kind: 'task',
      state: 'completed',
      answer: 'echo: from an old peer',
    });
    const read = await client.getTask({ id: task.id });
    if ('error' in read) throw new Error(`getTask failed: ${JSON.stringify(read.error)}`);
    expect((read.result as Task).status.state).toBe('completed');

    // A push config set without an id is read back without one, as the v0.3 SDK's own server does it.
    const hook = { url: 'https://hook.example.invalid/a2a', token: 'v03-token' };
    const set = await client.setTaskPushNotificationConfig({ taskId: task.id, pushNotificationConfig: hook });
    if ('error' in set) throw new Error(`setTaskPushNotificationConfig failed: ${JSON.stringify(set.error)}`);
    const got = await client.getTaskPushNotificationConfig({ id: task.id });
    if ('error' in got) throw new Error(`getTaskPushNotificationConfig failed: ${JSON.stringify(got.error)}`);
    expect(got.result).toMatchObject({ taskId: task.id, pushNotificationConfig: hook });

    // The gateway's own card too, through the v0.3 SDK's client factory.
    const viaFactory = await new ClientFactory().createFromUrl(v03.url);
    const again = (await viaFactory.sendMessage(message('through the factory'))) as Task;
    expect(answerOf(again)).toBe('echo: through the factory');

    // A v1.0 client that says so still gets the v1.0 card.
    const card = await (await fetch(`${v03.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json();
    expect(card).toHaveProperty('supportedInterfaces');
    expect(card).not.toHaveProperty('url');
  });

  it('with the default (1.0) the v0.3 SDK cannot read the card: the option is what lets such a peer in', async () => {
    await expect(A2AClient.fromCardUrl(`${v1.url}/a2a/echo/.well-known/agent-card.json`)).rejects.toThrow(
      "Provided Agent Card does not contain a valid 'url' for the service endpoint.",
    );
    await expect(new ClientFactory().createFromUrl(v1.url)).rejects.toThrow('No compatible transport found');
  });
});
