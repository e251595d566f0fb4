/**
 * Slack (Socket Mode) and Discord through a whole gateway, against their fakes: a direct message is one input however
 * often the platform sends it, and the agent's reply is posted once in the conversation, split to Discord's 2000.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FAKE_DM_CHANNEL, FakeDiscord } from '../helpers/fake-discord.js';
import { FakeSlack } from '../helpers/fake-slack.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
let slack: FakeSlack | undefined;
let discord: FakeDiscord | undefined;
afterEach(async () => {
  await gateway?.stop();
  await gateway?.store.close();
  await slack?.close();
  await discord?.close();
  gateway = slack = discord = undefined;
});

const ann = { id: '600000000000000001', username: 'ann', discriminator: '0', global_name: 'Ann', avatar: null };

async function start(channels: string): Promise<Gateway> {
  const { config } = parseConfigText(
    `{
      channels: ${channels},
      outbox: { baseDelayMs: 10, maxDelayMs: 50 },
      agents: { list: [{ id: "echo", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
    }`,
    '/test/switchboard.json5',
    {},
  );
  gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' });
  return gateway;
}

describe('Slack through the gateway', () => {
  it('answers a direct message once in its conversation, however often Slack sends it', async () => {
    slack = await FakeSlack.start();
    const gw = await start(
      `{ slack: { access: { users: ["U1"] }, accounts: { work: { botToken: "xoxb-good", appToken: "xapp-good", apiUrl: "${slack.apiUrl}" } } } }`,
    );
    await waitUntil('the socket is open', () => slack?.connected === 1, 10_000);
    const dm = { type: 'message', channel: 'D100', channel_type: 'im', user: 'U1', text: 'hello there', ts: '1700000000.000100' };
    await slack.sendEnvelope('events_api', FakeSlack.eventCallback(dm)).acked;
    // Slack sends an event again when it thinks the ack was lost.
    await slack.sendEnvelope('events_api', FakeSlack.eventCallback(dm)).acked;
    await waitUntil('the reply is posted', () => slack?.callsOf('chat.postMessage').length === 1, 10_000);
    expect(slack.callsOf('chat.postMessage')[0].args).toMatchObject({ channel: 'D100', text: 'echo hello there' });
    await gw.durable();
    expect((await gw.store.inputs.list({ sessionKey: 'agent:echo:slack:direct:U1' })).map((input) => input.text)).toEqual(['hello there']);
  });
});

describe('Discord through the gateway', () => {
  it('answers a direct message in its DM channel, split to 2000 characters, each part with its own nonce', async () => {
    discord = await FakeDiscord.start();
    const gw = await start(
      `{ discord: { access: { users: ["${ann.id}"] }, accounts: { main: { token: "good-token", apiUrl: "${discord.apiUrl}", gatewayUrl: "${discord.gatewayUrl}" } } } }`,
    );
    const words = Array.from({ length: 600 }, (_, i) => `w${i}`).join(' ');
    const posts = () => discord?.requestsTo('POST', `/channels/${FAKE_DM_CHANNEL}/messages`) ?? [];
    await waitUntil('the gateway connection is ready', () => discord?.gatewayReceived.some((payload) => payload.op === 2), 10_000);
    discord.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000001', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: words }),
    );
    await waitUntil('the reply is posted', () => posts().length >= 2, 10_000);
    const bodies = posts().map((post) => post.body as { content: string; nonce: string; enforce_nonce: boolean });
    for (const body of bodies) {
      expect(body.content.length).toBeLessThanOrEqual(2000);
      expect(body.enforce_nonce).toBe(true);
    }
    expect(bodies.map((body) => body.content).join(' ')).toBe(`echo ${words}`);
    expect(new Set(bodies.map((body) => body.nonce)).size).toBe(bodies.length);
    expect((await gw.store.inputs.list({ sessionKey: `agent:echo:discord:direct:${ann.id}` })).map((input) => input.text)).toEqual([words]);
  });
});
