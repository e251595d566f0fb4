import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSlackAccount } from '../../src/channels/slack/slack-account.js';
import type { SlackAccountConfig } from '../../src/config/schema-channels.js';
import { PermanentDeliveryError, RetryLaterError } from '../../src/kit/retry.js';
import type { ChatAccount, ChatWebhookRequest } from '../../src/ports/channels.js';
import { FAKE_BOT_USER, FakeSlack, slackSignature } from '../helpers/fake-slack.js';
import { RecordingChatSink } from '../helpers/recording-chat-sink.js';

const SECRET = 'signing-secret';
const quiet = () => {};

let fake: FakeSlack;
let account: ChatAccount | undefined;

beforeEach(async () => {
  fake = await FakeSlack.start();
});

afterEach(async () => {
  await account?.stop();
  account = undefined;
  await fake.close();
});

function config(overrides: Partial<SlackAccountConfig> = {}): SlackAccountConfig {
  return { botToken: 'xoxb-good', mode: 'socket', appToken: 'xapp-good', apiUrl: fake.apiUrl, ...overrides };
}

async function started(overrides: Partial<SlackAccountConfig> = {}) {
  const sink = new RecordingChatSink();
  account = createSlackAccount('work', config(overrides), { log: quiet });
  await account.start(sink);
  return { account, sink };
}

function signed(body: string, options: { timestamp?: number; secret?: string; form?: boolean } = {}): ChatWebhookRequest {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    headers: {
      'content-type': options.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(options.secret ?? SECRET, timestamp, body),
    },
    body: Buffer.from(body),
  };
}

const dm = { type: 'message', channel: 'D100', channel_type: 'im', user: 'U1', text: 'hello there', ts: '1700000000.000100' };

describe('Slack account, Socket Mode', () => {
  it('start: signs in with the bot token, opens the socket with the app token, and reports connected', async () => {
    const { sink } = await started();
    expect(fake.callsOf('auth.test').map((call) => call.token)).toEqual(['xoxb-good']);
    expect(fake.callsOf('apps.connections.open').map((call) => call.token)).toEqual(['xapp-good']);
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'connected' }]);
    // A Socket Mode account does not receive by webhook.
    expect(account?.webhook).toBeUndefined();
  });

  it('a direct message becomes a direct, addressed ChatMessage, acked only after the sink resolved', async () => {
    const { sink } = await started();
    sink.hold();
    const { envelopeId, acked } = fake.sendEnvelope('events_api', FakeSlack.eventCallback(dm));
    await vi.waitFor(() => expect(sink.messages).toHaveLength(1));
    expect(fake.acks).toEqual([]);
    sink.release();
    expect(await acked).toEqual({ envelope_id: envelopeId, payload: {} });
    expect(sink.messages).toEqual([
      {
        id: '1700000000.000100',
        place: { conversation: 'D100', kind: 'direct' },
        sender: { id: 'U1' },
        text: 'hello there',
        attachments: [],
        addressed: true,
      },
    ]);
  });

  it('channel messages: a mention or a reply in the bot thread is addressed, a thread is the place thread, others are not addressed', async () => {
    const { sink } = await started();
    const events = [
      { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text: 'just chatting', ts: '1.1' },
      { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U2', text: `<@${FAKE_BOT_USER}> help`, ts: '1.2' },
      {
        type: 'message',
        channel: 'C1',
        channel_type: 'channel',
        user: 'U1',
        text: 'in thread',
        ts: '1.3',
        thread_ts: '1.0',
        parent_user_id: FAKE_BOT_USER,
      },
      {
        type: 'message',
        channel: 'C1',
        channel_type: 'channel',
        user: 'U1',
        text: 'other thread',
        ts: '1.4',
        thread_ts: '0.9',
        parent_user_id: 'U9',
      },
    ];
    for (const event of events) await fake.sendEnvelope('events_api', FakeSlack.eventCallback(event)).acked;
    expect(sink.messages).toEqual([
      {
        id: '1.1',
        place: { conversation: 'C1', kind: 'group' },
        sender: { id: 'U1' },
        text: 'just chatting',
        attachments: [],
        addressed: false,
      },
      {
        id: '1.2',
        place: { conversation: 'C1', kind: 'group' },
        sender: { id: 'U2' },
        text: `<@${FAKE_BOT_USER}> help`,
        attachments: [],
        addressed: true,
      },
      {
        id: '1.3',
        place: { conversation: 'C1', kind: 'group', thread: '1.0' },
        sender: { id: 'U1' },
        text: 'in thread',
        attachments: [],
        addressed: true,
      },
      {
        id: '1.4',
        place: { conversation: 'C1', kind: 'group', thread: '0.9' },
        sender: { id: 'U1' },
        text: 'other thread',
        attachments: [],
        addressed: false,
      },
    ]);
  });

  it('an app_mention is the same message id, addressed, in a group', async () => {
    const { sink } = await started();
    const event = { type: 'app_mention', channel: 'C1', user: 'U2', text: `<@${FAKE_BOT_USER}> hi`, ts: '2.1', thread_ts: '2.0' };
    await fake.sendEnvelope('events_api', FakeSlack.eventCallback(event)).acked;
    expect(sink.messages).toEqual([
      {
        id: '2.1',
        place: { conversation: 'C1', kind: 'group', thread: '2.0' },
        sender: { id: 'U2' },
        text: `<@${FAKE_BOT_USER}> hi`,
        attachments: [],
        addressed: true,
      },
    ]);
  });

  it('bot messages, the bot own messages and edits are acked and ignored', async () => {
    const { sink } = await started();
    const ignored = [
      { ...dm, ts: '3.1', bot_id: 'B2', subtype: 'bot_message', user: undefined },
      { ...dm, ts: '3.2', bot_id: 'B2' },
      { ...dm, ts: '3.3', user: FAKE_BOT_USER },
      { ...dm, ts: '3.4', subtype: 'message_changed' },
      { ...dm, ts: '3.5', subtype: 'channel_join' },
    ];
    for (const event of ignored) await fake.sendEnvelope('events_api', FakeSlack.eventCallback(event)).acked;
    await fake.sendEnvelope(
      'events_api',
      FakeSlack.eventCallback({
        ...dm,
        ts: '3.6',
        subtype: 'file_share',
        files: [{ name: 'a.txt', size: 3, mimetype: 'text/plain', url_private_download: `${fake.origin}/files/a.txt` }],
      }),
    ).acked;
    expect(
      sink.messages.map((message) => [
        message.id,
        message.attachments.map((file) => ({ name: file.name, size: file.size, mimeType: file.mimeType })),
      ]),
    ).toEqual([['3.6', [{ name: 'a.txt', size: 3, mimeType: 'text/plain' }]]]);
  });

  it('a button press reaches sink.action and its answer is shown to the presser, ephemeral, in the thread', async () => {
    const { sink } = await started();
    sink.answer = 'Approved: deploy';
    const press = {
      type: 'block_actions',
      trigger_id: 'trig-1',
      user: { id: 'U1', username: 'ann' },
      channel: { id: 'C1' },
      container: { type: 'message', channel_id: 'C1', message_ts: '5.1', thread_ts: '5.0' },
      message: { ts: '5.1', thread_ts: '5.0' },
      actions: [{ type: 'button', action_id: 'switchboard-0-0', value: 'approve:ap-1', action_ts: '5.2' }],
    };
    await fake.sendEnvelope('interactive', press).acked;
    expect(sink.actions).toEqual([
      {
        id: 'trig-1',
        place: { conversation: 'C1', kind: 'group', thread: '5.0' },
        sender: { id: 'U1', name: 'ann' },
        data: 'approve:ap-1',
      },
    ]);
    expect(fake.callsOf('chat.postEphemeral').map((call) => call.args)).toEqual([
      { channel: 'C1', user: 'U1', text: 'Approved: deploy', thread_ts: '5.0' },
    ]);
  });

  it('a refused bot token: start rejects, and the state says the token was refused and which key', async () => {
    fake.botToken = 'xoxb-other';
    const sink = new RecordingChatSink();
    account = createSlackAccount('work', config(), { log: quiet });
    const expected =
      'channels.slack.accounts.work: Slack refused the botToken (auth.test said invalid_auth); check channels.slack.accounts.work.botToken';
    await expect(account.start(sink)).rejects.toThrow(expected);
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'error', error: expected }]);
  });

  it('a refused app token: start rejects naming appToken', async () => {
    fake.appToken = 'xapp-other';
    const sink = new RecordingChatSink();
    account = createSlackAccount('work', config(), { log: quiet });
    const expected =
      'channels.slack.accounts.work: Slack refused the appToken (apps.connections.open said invalid_auth); check channels.slack.accounts.work.appToken';
    await expect(account.start(sink)).rejects.toThrow(expected);
    expect(sink.states.at(-1)).toEqual({ state: 'error', error: expected });
  });

  it('socket mode without an appToken: start rejects saying which key is missing', async () => {
    const sink = new RecordingChatSink();
    account = createSlackAccount('work', config({ appToken: undefined }), { log: quiet });
    await expect(account.start(sink)).rejects.toThrow(
      "channels.slack.accounts.work.appToken is required with mode 'socket' (an app-level token, xapp-..., with connections:write)",
    );
  });
});

describe('Slack account, sending', () => {
  it('send posts to the thread with the text and button blocks, and returns the ts', async () => {
    const { account } = await started();
    const sent = await account.send({
      place: { conversation: 'C1', kind: 'group', thread: '9.0' },
      text: 'Approve the deploy?',
      buttons: [
        [
          { label: 'Approve', data: 'approve:ap-1' },
          { label: 'Deny', data: 'deny:ap-1' },
        ],
      ],
      nonce: 'n-1',
    });
    const [call] = fake.callsOf('chat.postMessage');
    expect(call?.token).toBe('xoxb-good');
    expect(call?.args).toEqual({
      channel: 'C1',
      text: 'Approve the deploy?',
      thread_ts: '9.0',
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: 'Approve the deploy?' } },
        {
          type: 'actions',
          elements: [
            { type: 'button', action_id: 'switchboard-0-0', text: { type: 'plain_text', text: 'Approve' }, value: 'approve:ap-1' },
            { type: 'button', action_id: 'switchboard-0-1', text: { type: 'plain_text', text: 'Deny' }, value: 'deny:ap-1' },
          ],
        },
      ],
    });
    expect(sent).toEqual({ id: '1700000000.000101' });
  });

  it('a plain send outside a thread posts only channel and text', async () => {
    const { account } = await started();
    await account.send({ place: { conversation: 'D100', kind: 'direct' }, text: 'hi', nonce: 'n-2' });
    expect(fake.callsOf('chat.postMessage').map((call) => call.args)).toEqual([{ channel: 'D100', text: 'hi' }]);
  });

  it('a text longer than a section block holds is carried in several sections above the buttons', async () => {
    const { account } = await started();
    const text = `${'a'.repeat(3000)}${'b'.repeat(500)}`;
    await account.send({ place: { conversation: 'C1', kind: 'group' }, text, buttons: [[{ label: 'OK', data: 'ok' }]], nonce: 'n-4' });
    const blocks = fake.callsOf('chat.postMessage')[0]?.args.blocks as { type: string; text?: { text: string } }[];
    expect(blocks.map((block) => [block.type, block.text?.text.length])).toEqual([
      ['section', 3000],
      ['section', 500],
      ['actions', undefined],
    ]);
  });

  it('an unknown channel is a PermanentDeliveryError', async () => {
    const { account } = await started();
    fake.unknownChannels.add('C404');
    const error = await account.send({ place: { conversation: 'C404', kind: 'group' }, text: 'hi', nonce: 'n-5' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentDeliveryError);
    expect((error as Error).message).toBe('channels.slack.accounts.work: Slack refused chat.postMessage: channel_not_found');
  });

  it('a 429 with Retry-After throws RetryLaterError with that delay, without retrying inside the client', async () => {
    const { account } = await started();
    fake.rateLimitSeconds = 7;
    const error = await account.send({ place: { conversation: 'C1', kind: 'group' }, text: 'hi', nonce: 'n-3' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryLaterError);
    expect(error).toMatchObject({
      retryAfterMs: 7000,
      message: 'channels.slack.accounts.work: Slack rate-limited chat.postMessage (retry after 7 s)',
    });
    expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('typing is a no-op: Slack has no bot typing indicator on the Web API', async () => {
    const { account } = await started();
    const before = fake.calls.length;
    await account.typing({ conversation: 'C1', kind: 'group' });
    expect(fake.calls.length).toBe(before);
    expect(account.maxLength).toBe(4000);
  });
});

describe('Slack account, Events API', () => {
  const eventsConfig = { mode: 'events' as const, appToken: undefined, signingSecret: SECRET };

  it('start checks the bot token, opens no socket, and reports connected', async () => {
    const { sink } = await started(eventsConfig);
    expect(fake.callsOf('apps.connections.open')).toEqual([]);
    expect(sink.states).toEqual([{ state: 'connecting' }, { state: 'connected' }]);
  });

  it('a bad signature is 401 and nothing reaches the sink', async () => {
    const { account, sink } = await started(eventsConfig);
    const body = JSON.stringify(FakeSlack.eventCallback(dm));
    const answer = await account.webhook?.(signed(body, { secret: 'wrong' }));
    expect(answer).toEqual({ status: 401, body: { error: 'Failed to verify authenticity: signature mismatch' } });
    expect(sink.messages).toEqual([]);
  });

  it('a stale timestamp (over five minutes) is refused with 401', async () => {
    const { account, sink } = await started(eventsConfig);
    const body = JSON.stringify(FakeSlack.eventCallback(dm));
    const answer = await account.webhook?.(signed(body, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 }));
    expect(answer).toEqual({
      status: 401,
      body: {
        error:
          'Failed to verify authenticity: x-slack-request-timestamp must differ from system time by no more than 5 minutes or request is stale',
      },
    });
    expect(sink.messages).toEqual([]);
  });

  it('url_verification is answered with its challenge', async () => {
    const { account } = await started(eventsConfig);
    const answer = await account.webhook?.(signed(JSON.stringify({ type: 'url_verification', token: 't', challenge: 'c-123' })));
    expect(answer).toEqual({ status: 200, body: { challenge: 'c-123' } });
  });

  it('an event is answered 200 only after sink.message resolved', async () => {
    const { account, sink } = await started(eventsConfig);
    sink.hold();
    let answered = false;
    const answer = account.webhook?.(signed(JSON.stringify(FakeSlack.eventCallback(dm))));
    void answer?.then(() => {
      answered = true;
    });
    await vi.waitFor(() => expect(sink.messages).toHaveLength(1));
    // The sink has the message but has not resolved: the webhook has not answered.
    await Promise.resolve();
    expect(answered).toBe(false);
    sink.release();
    expect(await answer).toEqual({ status: 200 });
    expect(sink.messages[0]).toEqual({
      id: '1700000000.000100',
      place: { conversation: 'D100', kind: 'direct' },
      sender: { id: 'U1' },
      text: 'hello there',
      attachments: [],
      addressed: true,
    });
  });

  it('a failing sink is a 500, so that Slack retries', async () => {
    const { account, sink } = await started(eventsConfig);
    sink.message = async () => {
      throw new Error('the store is down');
    };
    expect(await account.webhook?.(signed(JSON.stringify(FakeSlack.eventCallback(dm))))).toEqual({
      status: 500,
      body: { error: 'the store is down' },
    });
  });

  it('a button press posted as a form reaches sink.action, and the presser sees the answer', async () => {
    const { account, sink } = await started(eventsConfig);
    const press = {
      type: 'block_actions',
      trigger_id: 'trig-2',
      user: { id: 'U1', username: 'ann' },
      channel: { id: 'D100' },
      container: { type: 'message', channel_id: 'D100', message_ts: '6.1' },
      message: { ts: '6.1' },
      actions: [{ type: 'button', action_id: 'switchboard-0-1', value: 'deny:ap-2', action_ts: '6.2' }],
    };
    const body = `payload=${encodeURIComponent(JSON.stringify(press))}`;
    expect(await account.webhook?.(signed(body, { form: true }))).toEqual({ status: 200 });
    expect(sink.actions).toEqual([
      { id: 'trig-2', place: { conversation: 'D100', kind: 'direct' }, sender: { id: 'U1', name: 'ann' }, data: 'deny:ap-2' },
    ]);
    expect(fake.callsOf('chat.postEphemeral').map((call) => call.args)).toEqual([{ channel: 'D100', user: 'U1', text: 'Approved.' }]);
  });

  it('events mode without a signingSecret: start rejects saying which key is missing', async () => {
    const sink = new RecordingChatSink();
    account = createSlackAccount('work', config({ mode: 'events', signingSecret: undefined }), { log: quiet });
    await expect(account.start(sink)).rejects.toThrow(
      "channels.slack.accounts.work.signingSecret is required with mode 'events' (the app's Signing Secret, under Basic Information)",
    );
  });
});
