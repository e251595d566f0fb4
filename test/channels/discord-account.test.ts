import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDiscordAccount } from '../../src/channels/discord/discord-account.js';
import type { DiscordAccountConfig } from '../../src/config/schema-channels.js';
import { PermanentDeliveryError, RetryLaterError } from '../../src/kit/retry.js';
import type { ChatAccount } from '../../src/ports/channels.js';
import { FAKE_BOT, FAKE_DM_CHANNEL, FAKE_GUILD, FAKE_TEXT_CHANNEL, FAKE_THREAD, FakeDiscord } from '../helpers/fake-discord.js';
import { RecordingChatSink } from '../helpers/recording-chat-sink.js';

const quiet = () => {};
const ann = { id: '600000000000000001', username: 'ann', discriminator: '0', global_name: 'Ann', avatar: null };
const botUser = { id: '600000000000000002', username: 'otherbot', discriminator: '0', global_name: null, avatar: null, bot: true };

function buttonPress(id: string) {
  return {
    id,
    application_id: '400000000000000001',
    type: 3,
    token: 'interaction-token',
    version: 1,
    channel_id: FAKE_TEXT_CHANNEL,
    channel: { id: FAKE_TEXT_CHANNEL, type: 0, guild_id: FAKE_GUILD, name: 'general' },
    guild_id: FAKE_GUILD,
    member: { user: ann, roles: [], permissions: '0', joined_at: '2026-12-01T00:00:00.000000+00:00', deaf: false, mute: false, flags: 0 },
    app_permissions: '0',
    locale: 'en-US',
    guild_locale: 'en-US',
    entitlements: [],
    authorizing_integration_owners: {},
    context: 0,
    data: { custom_id: 'deny:ap-1', component_type: 2 },
    message: FakeDiscord.message({
      id: '700000000000000031',
      channel_id: FAKE_TEXT_CHANNEL,
      author: FAKE_BOT,
      content: 'Approve?',
      guild_id: FAKE_GUILD,
    }),
  };
}

let fake: FakeDiscord;
let account: ChatAccount | undefined;

beforeEach(async () => {
  fake = await FakeDiscord.start();
});

afterEach(async () => {
  await account?.stop();
  account = undefined;
  await fake.close();
});

function config(overrides: Partial<DiscordAccountConfig> = {}): DiscordAccountConfig {
  return { token: 'good-token', apiUrl: fake.apiUrl, ...overrides };
}

async function started(overrides: Partial<DiscordAccountConfig> = {}) {
  const sink = new RecordingChatSink();
  account = createDiscordAccount('main', config(overrides), { log: quiet });
  await account.start(sink);
  return { account, sink };
}

describe('Discord account, receiving', () => {
  it('start: identifies with the token and the four intents, and reports connected', async () => {
    const { sink } = await started();
    expect(fake.requestsTo('GET', '/gateway/bot').map((request) => request.authorization)).toEqual(['Bot good-token']);
    const identify = fake.gatewayReceived.find((payload) => payload.op === 2)?.d as { token: string; intents: number };
    // Guilds (1) + GuildMessages (512) + DirectMessages (4096) + MessageContent (32768).
    expect({ token: identify.token, intents: identify.intents }).toEqual({ token: 'good-token', intents: 1 + 512 + 4096 + 32768 });
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'connected' }]);
  });

  it('a direct message becomes a direct, addressed ChatMessage whose conversation is the DM channel', async () => {
    const { sink } = await started();
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000001', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: 'hello bot' }),
    );
    await vi.waitFor(() => expect(sink.messages).toHaveLength(1));
    expect(sink.messages).toEqual([
      {
        id: '700000000000000001',
        place: { conversation: FAKE_DM_CHANNEL, kind: 'direct' },
        sender: { id: ann.id, name: 'ann', handle: '@ann' },
        text: 'hello bot',
        attachments: [],
        addressed: true,
      },
    ]);
  });

  it('server channel messages are groups: addressed when they mention the bot or reply to it, and a thread is its own conversation', async () => {
    const { sink } = await started();
    const inGuild = {
      guild_id: FAKE_GUILD,
      member: { roles: [], joined_at: '2026-12-01T00:00:00.000000+00:00', deaf: false, mute: false, flags: 0 },
    };
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({
        id: '700000000000000011',
        channel_id: FAKE_TEXT_CHANNEL,
        channel_type: 0,
        author: ann,
        content: 'just chatting',
        ...inGuild,
      }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({
        id: '700000000000000012',
        channel_id: FAKE_TEXT_CHANNEL,
        channel_type: 0,
        author: ann,
        content: `<@${FAKE_BOT.id}> help`,
        mentions: [FAKE_BOT],
        ...inGuild,
      }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({
        id: '700000000000000013',
        type: 19,
        channel_id: FAKE_TEXT_CHANNEL,
        channel_type: 0,
        author: ann,
        content: 'thanks',
        message_reference: { message_id: '700000000000000010', channel_id: FAKE_TEXT_CHANNEL, guild_id: FAKE_GUILD },
        referenced_message: FakeDiscord.message({
          id: '700000000000000010',
          channel_id: FAKE_TEXT_CHANNEL,
          author: FAKE_BOT,
          content: 'an answer',
          guild_id: FAKE_GUILD,
        }),
        ...inGuild,
      }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({
        id: '700000000000000014',
        channel_id: FAKE_THREAD,
        channel_type: 11,
        author: ann,
        content: 'in the thread',
        ...inGuild,
      }),
    );
    await vi.waitFor(() => expect(sink.messages).toHaveLength(4));
    const group = { conversation: FAKE_TEXT_CHANNEL, kind: 'group' };
    const sender = { id: ann.id, name: 'ann', handle: '@ann' };
    expect(sink.messages).toEqual([
      { id: '700000000000000011', place: group, sender, text: 'just chatting', attachments: [], addressed: false },
      { id: '700000000000000012', place: group, sender, text: `<@${FAKE_BOT.id}> help`, attachments: [], addressed: true },
      { id: '700000000000000013', place: group, sender, text: 'thanks', attachments: [], addressed: true },
      {
        id: '700000000000000014',
        place: { conversation: FAKE_THREAD, kind: 'group' },
        sender,
        text: 'in the thread',
        attachments: [],
        addressed: false,
      },
    ]);
  });

  it('messages reach the sink one at a time, in the gateway order', async () => {
    const { sink } = await started();
    sink.hold();
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000041', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: 'one' }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000042', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: 'two' }),
    );
    // A button press dispatched after both is handled beside the messages: once it reached the sink, the gateway has
    // emitted both messages, and the second still waits for the first.
    fake.dispatch('INTERACTION_CREATE', buttonPress('910000000000000041'));
    await vi.waitFor(() => expect(sink.actions).toHaveLength(1));
    expect(sink.messages.map((message) => message.text)).toEqual(['one']);
    sink.release();
    await vi.waitFor(() => expect(sink.messages.map((message) => message.text)).toEqual(['one', 'two']));
  });

  it('a message the sink failed to take is handed to it again (the gateway sends it once), then taken once', async () => {
    const { sink } = await started();
    sink.failNext = 2;
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000041', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: 'retry me' }),
    );
    await vi.waitFor(() => expect(sink.messages).toHaveLength(1), { timeout: 10_000 });
    expect(sink.calls).toBe(3);
    expect(sink.messages[0]).toMatchObject({ id: '700000000000000041', text: 'retry me' });
  });

  it('messages from bots (the bot itself included) and system messages are ignored', async () => {
    const { sink } = await started();
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000021', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: botUser, content: 'beep' }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000022', channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: FAKE_BOT, content: 'my own' }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({ id: '700000000000000023', type: 6, channel_id: FAKE_DM_CHANNEL, channel_type: 1, author: ann, content: '' }),
    );
    fake.dispatch(
      'MESSAGE_CREATE',
      FakeDiscord.message({
        id: '700000000000000024',
        channel_id: FAKE_DM_CHANNEL,
        channel_type: 1,
        author: ann,
        content: 'with a file',
        attachments: [
          {
            id: '800000000000000001',
            filename: 'notes.txt',
            size: 12,
            content_type: 'text/plain',
            url: `${fake.origin}/files/notes.txt`,
            proxy_url: `${fake.origin}/files/notes.txt`,
          },
        ],
      }),
    );
    await vi.waitFor(() => expect(sink.messages).toHaveLength(1));
    expect(
      sink.messages.map((message) => [
        message.id,
        message.attachments.map((file) => ({ name: file.name, size: file.size, mimeType: file.mimeType })),
      ]),
    ).toEqual([['700000000000000024', [{ name: 'notes.txt', size: 12, mimeType: 'text/plain' }]]]);
  });

  it('a button press reaches sink.action and is answered with an ephemeral reply carrying the answer', async () => {
    const { sink } = await started();
    sink.answer = 'Denied: deploy';
    fake.dispatch('INTERACTION_CREATE', buttonPress('910000000000000001'));
    const edit = '/webhooks/400000000000000001/interaction-token/messages/@original';
    await vi.waitFor(() => expect(fake.requestsTo('PATCH', edit)).toHaveLength(1));
    expect(sink.actions).toEqual([
      {
        id: '910000000000000001',
        place: { conversation: FAKE_TEXT_CHANNEL, kind: 'group' },
        sender: { id: ann.id, name: 'ann', handle: '@ann' },
        data: 'deny:ap-1',
      },
    ]);
    // First a deferred ephemeral answer (type 5, flags 64 = ephemeral), then the answer's text in its place.
    expect(fake.requestsTo('POST', '/interactions/910000000000000001/interaction-token/callback').map((request) => request.body)).toEqual([
      { type: 5, data: { flags: 64 } },
    ]);
    expect(fake.requestsTo('PATCH', edit)[0]?.body).toMatchObject({ content: 'Denied: deploy' });
  });

  it('a refused token: start rejects, and the state says the token was refused and which key', async () => {
    fake.token = 'another-token';
    const sink = new RecordingChatSink();
    account = createDiscordAccount('main', config(), { log: quiet });
    const expected =
      'channels.discord.accounts.main: Discord refused the token (GET /gateway/bot answered 401 Unauthorized); check channels.discord.accounts.main.token';
    await expect(account.start(sink)).rejects.toThrow(expected);
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'error', error: expected }]);
  });

  it('a Message Content intent not enabled (close 4014): start rejects saying where to enable it', async () => {
    fake.identifyCloseCode = 4014;
    const sink = new RecordingChatSink();
    account = createDiscordAccount('main', config(), { log: quiet });
    const expected =
      'channels.discord.accounts.main: Discord refused the Message Content intent (close code 4014); enable it for the bot under Bot, Privileged Gateway Intents, in the Developer Portal';
    await expect(account.start(sink)).rejects.toThrow(expected);
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'error', error: expected }]);
  });

  it('gatewayUrl is used instead of the gateway GET /gateway/bot names', async () => {
    fake.advertisedGatewayUrl = 'ws://127.0.0.1:9/not-here';
    const { sink } = await started({ gatewayUrl: fake.gatewayUrl });
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'connected' }]);
  });

  it('stop reports stopped, not a lost connection', async () => {
    const { account, sink } = await started();
    await account.stop();
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'connected' }, { state: 'stopped' }]);
  });
});

describe('Discord account, sending', () => {
  it('send posts the content with its nonce enforced, the reply reference and the buttons, and returns the message id', async () => {
    const { account } = await started();
    const sent = await account.send({
      place: { conversation: FAKE_TEXT_CHANNEL, kind: 'group' },
      text: 'Approve the deploy?',
      replyTo: '700000000000000012',
      buttons: [
        [
          { label: 'Approve', data: 'approve:ap-1' },
          { label: 'Deny', data: 'deny:ap-1' },
        ],
      ],
      nonce: 'out-1:0',
    });
    const posts = fake.requestsTo('POST', `/channels/${FAKE_TEXT_CHANNEL}/messages`);
    expect(posts.map((post) => post.body)).toEqual([
      {
        content: 'Approve the deploy?',
        nonce: 'out-1:0',
        enforce_nonce: true,
        allowed_mentions: { parse: ['users'] },
        message_reference: { message_id: '700000000000000012', fail_if_not_exists: false },
        components: [
          {
            type: 1,
            components: [
              { type: 2, style: 1, label: 'Approve', custom_id: 'approve:ap-1' },
              { type: 2, style: 1, label: 'Deny', custom_id: 'deny:ap-1' },
            ],
          },
        ],
      },
    ]);
    expect(posts[0]?.authorization).toBe('Bot good-token');
    expect(sent).toEqual({ id: '900000000000000001' });
  });

  it('a plain send carries no reference and no components', async () => {
    const { account } = await started();
    await account.send({ place: { conversation: FAKE_DM_CHANNEL, kind: 'direct' }, text: 'hi', nonce: 'out-2:0' });
    expect(fake.requestsTo('POST', `/channels/${FAKE_DM_CHANNEL}/messages`).map((post) => post.body)).toEqual([
      { content: 'hi', nonce: 'out-2:0', enforce_nonce: true, allowed_mentions: { parse: ['users'] } },
    ]);
  });

  it('a 429 with retry-after throws RetryLaterError with that delay, without waiting it out in discord.js', async () => {
    const { account } = await started();
    fake.rateLimitSeconds = 3;
    const error = await account
      .send({ place: { conversation: FAKE_TEXT_CHANNEL, kind: 'group' }, text: 'hi', nonce: 'out-3:0' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryLaterError);
    expect(error).toMatchObject({ retryAfterMs: 3000 });
    expect((error as Error).message).toBe(
      'channels.discord.accounts.main: Discord rate-limited POST /channels/:id/messages (retry after 3000 ms)',
    );
    expect(fake.requestsTo('POST', `/channels/${FAKE_TEXT_CHANNEL}/messages`)).toHaveLength(1);
  });

  it('a nonce longer than Discord takes (25) is sent as 25 characters of its hash, the same on every retry', async () => {
    const { account } = await started();
    const nonce = 'a1b2c3d4-e5f6-4711-8899-aabbccddeeff:3';
    await account.send({ place: { conversation: FAKE_DM_CHANNEL, kind: 'direct' }, text: 'hi', nonce });
    await account.send({ place: { conversation: FAKE_DM_CHANNEL, kind: 'direct' }, text: 'hi', nonce });
    await account.send({ place: { conversation: FAKE_DM_CHANNEL, kind: 'direct' }, text: 'hi', nonce: nonce.replace(/3$/, '4') });
    const sent = fake.requestsTo('POST', `/channels/${FAKE_DM_CHANNEL}/messages`).map((post) => (post.body as { nonce: string }).nonce);
    expect(sent[0]).toBe(createHash('sha256').update(nonce).digest('base64url').slice(0, 25));
    expect(sent[1]).toBe(sent[0]);
    expect(sent[2]).not.toBe(sent[0]);
  });

  it('an unknown channel is a PermanentDeliveryError', async () => {
    const { account } = await started();
    fake.unknownChannels.add('300000000000000099');
    const error = await account
      .send({ place: { conversation: '300000000000000099', kind: 'group' }, text: 'hi', nonce: 'n' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentDeliveryError);
    expect((error as Error).message).toBe('channels.discord.accounts.main: Discord refused the message: Unknown Channel');
  });

  it('typing posts to the channel typing route', async () => {
    const { account } = await started();
    await account.typing({ conversation: FAKE_TEXT_CHANNEL, kind: 'group' });
    expect(fake.requestsTo('POST', `/channels/${FAKE_TEXT_CHANNEL}/typing`)).toHaveLength(1);
    expect(account.maxLength).toBe(2000);
  });
});
