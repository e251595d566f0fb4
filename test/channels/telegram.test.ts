/**
 * The Telegram channel on grammY against a fake Bot API (test/helpers/fake-telegram.ts), in one gateway: a message is
 * one input however often Telegram sends it, the reply goes back once (split to 4096 characters, after a 429's
 * retry-after), and a stranger is told once and gets no run.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import type { ChannelFront } from '../../src/channels/front.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
let telegram: FakeTelegram | undefined;
afterEach(async () => {
  await gateway?.stop();
  await gateway?.store.close();
  await telegram?.close();
  gateway = telegram = undefined;
});

const ALICE = 1001;
const STRANGER = 2002;

async function start(
  access = `{ users: ["${ALICE}"], groups: ["-500"] }`,
): Promise<{ gateway: Gateway; telegram: FakeTelegram; channels: ChannelFront }> {
  telegram = await new FakeTelegram().start();
  const { config } = parseConfigText(
    `{
      channels: { telegram: { access: ${access}, accounts: { main: { token: "${telegram.token}", apiRoot: "${telegram.url}" } } } },
      outbox: { baseDelayMs: 10, maxDelayMs: 50 },
      agents: { list: [{ id: "echo", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
    }`,
    '/test/switchboard.json5',
    {},
  );
  let channels!: ChannelFront;
  gateway = await startGateway(
    { config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' },
    { onChannels: (made) => (channels = made) },
  );
  return { gateway, telegram, channels };
}

const inputsOf = async (gw: Gateway, sessionKey: string) => gw.store.inputs.list({ sessionKey });

describe('the Telegram channel', () => {
  it('makes a direct message one input, answers it once in the chat, quoting it, and shows typing', async () => {
    const { gateway, telegram, channels } = await start();
    telegram.message({ from: ALICE, text: 'hello', messageId: 77 });
    await waitUntil('telegram.sent.length === 1', () => telegram.sent.length === 1, 10_000);
    expect(telegram.sent[0]).toMatchObject({ chat_id: String(ALICE), text: 'echo hello', reply_parameters: { message_id: 77 } });
    const inputs = await inputsOf(gateway, `agent:echo:telegram:direct:${ALICE}`);
    expect(inputs.map((input) => [input.text, input.provenance])).toEqual([
      ['hello', { kind: 'user', channel: 'telegram', account: 'main', peer: String(ALICE), sender: String(ALICE), messageId: '77' }],
    ]);
    expect(telegram.calls.some((call) => call.method === 'sendChatAction' && call.body.chat_id === String(ALICE))).toBe(true);
    // The fake records the send before the gateway hears its answer and counts it.
    await waitUntil('the send is counted', () => telegram.confirmedUpTo >= 1 && channels.status()[0].sent === 1, 10_000);
    expect(channels.status()).toEqual([
      expect.objectContaining({ channel: 'telegram', account: 'main', state: 'connected', received: 1, refused: 0, sent: 1, error: null }),
    ]);
  });

  it('takes a message Telegram sends twice (a redelivery) as one input with one reply', async () => {
    const { gateway, telegram } = await start();
    telegram.message({ from: ALICE, text: 'once', messageId: 88 });
    telegram.message({ from: ALICE, text: 'once', messageId: 88 });
    telegram.message({ from: ALICE, text: 'after', messageId: 89 });
    await waitUntil(
      "telegram.sent.some((sent) => sent.text === 'echo after')",
      () => telegram.sent.some((sent) => sent.text === 'echo after'),
      10_000,
    );
    await gateway.durable();
    expect((await inputsOf(gateway, `agent:echo:telegram:direct:${ALICE}`)).map((input) => input.text)).toEqual(['once', 'after']);
    expect(telegram.sent.filter((sent) => sent.text === 'echo once')).toHaveLength(1);
  });

  it('tells a stranger once how to pair, runs nothing for them, and lets them in once the operator pairs the code', async () => {
    const { gateway, telegram, channels } = await start(`{ direct: "pairing", users: ["${ALICE}"] }`);
    telegram.message({ from: STRANGER, text: 'hi', username: 'eve' });
    await waitUntil('the pairing code is sent', () => telegram.sent.length === 1, 10_000);
    const code = /channels pair telegram ([A-Z0-9]{8})/.exec(telegram.sent[0].text)?.[1];
    expect(code).toBeDefined();
    telegram.message({ from: STRANGER, text: 'hi again' });
    telegram.message({ from: ALICE, text: 'me too' });
    await waitUntil('Alice is answered', () => telegram.sent.some((sent) => sent.text === 'echo me too'), 10_000);
    expect(telegram.sent.filter((sent) => sent.chat_id === String(STRANGER))).toHaveLength(1);
    expect(channels.status()[0].refused).toBe(2);
    expect(await inputsOf(gateway, `agent:echo:telegram:direct:${STRANGER}`)).toEqual([]);
    expect(await channels.senders({ status: 'pending' })).toEqual([
      expect.objectContaining({ channel: 'telegram', account: 'main', senderId: String(STRANGER), name: '@eve', code }),
    ]);
    await expect(channels.pair('telegram', 'WRONGCODE')).rejects.toThrow(
      'no telegram sender waits with pairing code "WRONGCODE" (switchboard channels senders --status pending lists the codes; a code is used once)',
    );
    expect(await channels.pair('telegram', code ?? '')).toMatchObject({ senderId: String(STRANGER), status: 'allowed' });
    telegram.message({ from: STRANGER, text: 'paired now' });
    await waitUntil('the paired sender is answered', () => telegram?.sent.some((sent) => sent.text === 'echo paired now'), 10_000);
    // An operator shuts them out again: no run, and no second message.
    expect(await channels.setSender('telegram', 'main', String(STRANGER), 'revoked')).toMatchObject({ status: 'revoked' });
    telegram.message({ from: STRANGER, text: 'after revoke' });
    telegram.message({ from: ALICE, text: 'marker' });
    await waitUntil('Alice is answered', () => telegram?.sent.some((sent) => sent.text === 'echo marker'), 10_000);
    expect(telegram.sent.filter((sent) => sent.chat_id === String(STRANGER)).map((sent) => sent.text)).toEqual([
      expect.stringContaining('switchboard channels pair telegram'),
      'echo paired now',
    ]);
  });

  it('refuses a sender outside the allowlist with one polite message and no run', async () => {
    const { gateway, telegram } = await start(`{ direct: "allowlist", users: ["${ALICE}"] }`);
    telegram.message({ from: STRANGER, text: 'let me in' });
    telegram.message({ from: STRANGER, text: 'please' });
    telegram.message({ from: ALICE, text: 'marker' });
    await waitUntil(
      "telegram.sent.some((sent) => sent.text === 'echo marker')",
      () => telegram.sent.some((sent) => sent.text === 'echo marker'),
      10_000,
    );
    const toStranger = telegram.sent.filter((sent) => sent.chat_id === String(STRANGER));
    expect(toStranger.map((sent) => sent.text)).toEqual(['Sorry, this assistant only talks to people its operator has let in.']);
    expect(await inputsOf(gateway, `agent:echo:telegram:direct:${STRANGER}`)).toEqual([]);
  });

  it('splits a reply longer than 4096 characters into parts, in order, each within the limit', async () => {
    const { telegram } = await start();
    const words = Array.from({ length: 1500 }, (_, i) => `w${i}`).join(' ');
    telegram.message({ from: ALICE, text: words });
    await waitUntil(
      "telegram.sent.length >= 2 && telegram.sent.map((sent) => sent.text).join(' ').endsWith('w1499')",
      () =>
        telegram.sent.length >= 2 &&
        telegram.sent
          .map((sent) => sent.text)
          .join(' ')
          .endsWith('w1499'),
      10_000,
    );
    for (const part of telegram.sent) expect(part.text.length).toBeLessThanOrEqual(4096);
    expect(telegram.sent.map((sent) => sent.text).join(' ')).toBe(`echo ${words}`);
    // Only the first part quotes the message.
    expect(telegram.sent.filter((sent) => sent.reply_parameters)).toHaveLength(1);
  });

  it("waits a 429's retry_after before sending again, and sends the reply once", async () => {
    const { gateway, telegram } = await start();
    telegram.sendFailures.push({
      status: 429,
      body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 3', parameters: { retry_after: 3 } },
    });
    const before = Date.now();
    telegram.message({ from: ALICE, text: 'slow down' });
    await waitUntil(
      "(await gateway.listOutbox({ status: 'pending' })).some((row) => row.attempts === 1)",
      async () => (await gateway.listOutbox({ status: 'pending' })).some((row) => row.attempts === 1),
      10_000,
    );
    const [row] = (await gateway.listOutbox({ status: 'pending' })).filter((one) => one.kind === 'reply:telegram');
    expect(row.lastError).toBe(`Telegram refused sendMessage to chat ${ALICE} (account "main"): 429 Too Many Requests: retry after 3`);
    // The outbox's own backoff here is at most 50 ms: the next attempt is the platform's 3 s away.
    const attempted = telegram.calls.filter((call) => call.method === 'sendMessage').length;
    expect(attempted).toBe(1);
    expect(row.nextAttemptAt).toBeGreaterThanOrEqual(before + 3000);
    await waitUntil('telegram.sent.length === 1', () => telegram.sent.length === 1, 10_000);
    expect(telegram.sent[0].text).toBe('echo slow down');
  });

  it('answers in a listed group only when addressed, keeping the rest as context without a run', async () => {
    const { gateway, telegram } = await start();
    telegram.message({ from: ALICE, chat: -500, chatType: 'group', text: 'just chatting' });
    telegram.message({ from: ALICE, chat: -500, chatType: 'group', text: 'hey @switchboard_test_bot ping' });
    await waitUntil('telegram.sent.length === 1', () => telegram.sent.length === 1, 10_000);
    expect(telegram.sent[0]).toMatchObject({ chat_id: '-500', text: 'echo user1001: hey @switchboard_test_bot ping' });
    const inputs = await inputsOf(gateway, 'agent:echo:telegram:group:-500');
    expect(inputs.map((input) => [input.text, input.mode])).toEqual([
      ['user1001: just chatting', 'notify'],
      ['user1001: hey @switchboard_test_bot ping', 'followup'],
    ]);
  });

  it('reports a refused token with the key to fix, and the gateway runs on', async () => {
    telegram = await new FakeTelegram().start();
    const { config } = parseConfigText(
      `{
        channels: { telegram: { accounts: { main: { token: "1:WRONG", apiRoot: "${telegram.url}" } } } },
        agents: { list: [{ id: "echo", model: "scripted/echo" }] },
        models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    let channels!: ChannelFront;
    gateway = await startGateway(
      { config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' },
      { onChannels: (made) => (channels = made) },
    );
    await waitUntil('the account reports its error', () => channels.status()[0].state === 'error', 10_000);
    expect(channels.status()).toEqual([
      expect.objectContaining({
        state: 'error',
        error: 'Telegram refused the token of account "main" (Unauthorized): check channels.telegram.accounts.main.token',
      }),
    ]);
    const sent = await gateway.send({ target: 'echo', message: 'still here' });
    expect((await gateway.waitForInput(sent.input.id, 10_000)).status).toBe('completed');
  });
});

describe('approvals from Telegram', () => {
  it('asks with Approve and Deny buttons in the chat, and a press by a listed user answers the request', async () => {
    telegram = await new FakeTelegram().start();
    const { dir } = tempConfig('{}');
    const workspace = realpathSync(dir);
    const { config } = parseConfigText(
      `{
        channels: { telegram: { access: { users: ["${ALICE}"] }, accounts: { main: { token: "${telegram.token}", apiRoot: "${telegram.url}" } } } },
        outbox: { baseDelayMs: 10, maxDelayMs: 50 },
        agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)}, exec: { enabled: true }, tools: { ask: ["exec"] } }] },
        models: { providers: { scripted: { type: "scripted", models: { coder: { rules: [
          { match: "^log (\\\\w+)", steps: [
            { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> log.txt"] } }] },
            { text: "done: {{tool.exec.status}}" },
          ] },
        ] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' });
    telegram.message({ from: ALICE, text: 'log once' });
    const prompt = await waitUntil('the approval prompt', () => telegram?.sent.find((sent) => sent.reply_markup), 10_000);
    expect(prompt.text).toMatch(/^Approval needed: coder wants to run exec /);
    const [approve, deny] = prompt.reply_markup?.inline_keyboard[0] ?? [];
    expect([approve.text, deny.text]).toEqual(['Approve', 'Deny']);
    // A press in another chat (a group Alice is in) does not answer a request asked in her direct chat.
    telegram.push({
      callback_query: {
        id: 'q0',
        from: { id: ALICE, is_bot: false, first_name: 'alice', username: 'alice' },
        message: { message_id: 1, date: 0, chat: { id: -500, type: 'group', title: 'g' } },
        data: approve.callback_data,
        chat_instance: 'c',
      },
    });
    // A stranger's press changes nothing.
    telegram.push({
      callback_query: {
        id: 'q1',
        from: { id: STRANGER, is_bot: false, first_name: 'eve' },
        data: approve.callback_data,
        chat_instance: 'c',
      },
    });
    telegram.push({
      callback_query: {
        id: 'q2',
        from: { id: ALICE, is_bot: false, first_name: 'alice', username: 'alice' },
        data: approve.callback_data,
        chat_instance: 'c',
      },
    });
    await waitUntil('the run answers', () => telegram?.sent.some((sent) => sent.text === 'done: ok'), 10_000);
    const toasts = telegram.calls
      .filter((call) => call.method === 'answerCallbackQuery')
      .map((call) => [call.body.callback_query_id, call.body.text]);
    expect(toasts).toEqual([
      ['q0', 'This approval was not asked here.'],
      ['q1', 'Only people let in to talk to the agents may answer approvals.'],
      ['q2', 'Approved.'],
    ]);
    const [approval] = await gateway.listApprovals({});
    expect(approval).toMatchObject({ status: 'approved', decidedBy: `telegram:${ALICE} (@alice)` });
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('once\n');
  });
});

describe('Telegram files and webhooks', () => {
  it("saves a file in the agent's workspace and names it in the input; refuses one over the limit with the reason", async () => {
    telegram = await new FakeTelegram().start();
    const workspace = realpathSync(tempConfig('{}').dir);
    telegram.files.set('doc-1', Buffer.from('quarterly numbers'));
    telegram.files.set('doc-2', Buffer.alloc(64, 1));
    const { config } = parseConfigText(
      `{
        channels: { telegram: { access: { users: ["${ALICE}"] }, maxAttachmentBytes: 32, accounts: { main: { token: "${telegram.token}", apiRoot: "${telegram.url}" } } } },
        outbox: { baseDelayMs: 10, maxDelayMs: 50 },
        agents: { list: [{ id: "echo", model: "scripted/echo", workspace: ${JSON.stringify(workspace)} }] },
        models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "got it" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' });
    const document = (id: string, name: string, size: number) => ({
      document: { file_id: id, file_unique_id: id, file_name: name, file_size: size },
    });
    telegram.message({ from: ALICE, text: '', messageId: 61, extra: { caption: 'see attached', ...document('doc-1', 'report.txt', 17) } });
    telegram.message({ from: ALICE, text: '', messageId: 62, extra: document('doc-2', 'big.bin', 64) });
    await waitUntil('both are answered', () => telegram?.sent.length === 2, 10_000);
    const inputs = await inputsOf(gateway, `agent:echo:telegram:direct:${ALICE}`);
    expect(inputs.map((input) => input.text)).toEqual([`see attached\n[attachment saved: inbox/telegram/main/${ALICE}/61-0-report.txt]`]);
    expect(readFileSync(join(workspace, `inbox/telegram/main/${ALICE}/61-0-report.txt`), 'utf8')).toBe('quarterly numbers');
    // A message of one refused file is answered with the reason, and starts no run.
    expect(telegram.sent.map((sent) => sent.text)).toEqual([
      'got it',
      'Your file big.bin was not taken: it is 64 bytes, over the 32 the channel takes (maxAttachmentBytes).',
    ]);
  });

  it('takes updates by webhook only with the secret token, answering 200 once the message is an input', async () => {
    telegram = await new FakeTelegram().start();
    const { config } = parseConfigText(
      `{
        channels: { telegram: { access: { users: ["${ALICE}"] }, accounts: { hook: { token: "${telegram.token}", apiRoot: "${telegram.url}", mode: "webhook", webhookSecret: "s3cret" } } } },
        agents: { list: [{ id: "echo", model: "scripted/echo" }] },
        models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    let channels!: ChannelFront;
    gateway = await startGateway(
      { config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' },
      { onChannels: (made) => (channels = made) },
    );
    const update = {
      update_id: 7,
      message: {
        message_id: 70,
        date: 0,
        chat: { id: ALICE, type: 'private' },
        from: { id: ALICE, is_bot: false, first_name: 'a' },
        text: 'by hook',
      },
    };
    const body = Buffer.from(JSON.stringify(update));
    expect(await channels.webhook('telegram', 'hook', { headers: {}, body })).toEqual({
      status: 401,
      body: { error: 'the X-Telegram-Bot-Api-Secret-Token header does not match the account’s webhookSecret' },
    });
    const headers = { 'x-telegram-bot-api-secret-token': 's3cret' };
    expect(await channels.webhook('telegram', 'hook', { headers, body })).toEqual({ status: 200, body: { ok: true } });
    expect(await channels.webhook('telegram', 'hook', { headers, body })).toEqual({ status: 200, body: { ok: true } });
    expect(await channels.webhook('telegram', 'nope', { headers, body })).toEqual({
      status: 404,
      body: { error: 'no telegram account "nope" takes webhooks here (channels.telegram.accounts)' },
    });
    await waitUntil('the reply is sent', () => telegram?.sent.length === 1, 10_000);
    expect((await inputsOf(gateway, `agent:echo:telegram:direct:${ALICE}`)).map((input) => input.text)).toEqual(['by hook']);
    // A webhook account never polls.
    expect(telegram.calls.filter((call) => call.method === 'getUpdates')).toEqual([]);
  });
});

describe('a message Telegram would send forever', () => {
  it('is told once why it was not taken, and the messages after it are answered', async () => {
    telegram = await new FakeTelegram().start();
    const { config } = parseConfigText(
      `{
        gateway: { maxMessageChars: 40 },
        channels: { telegram: { access: { users: ["${ALICE}"], groups: ["-500"] }, accounts: { main: { token: "${telegram.token}", apiRoot: "${telegram.url}" } } } },
        agents: { list: [{ id: "echo", model: "scripted/echo" }] },
        models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
      }`,
      '/test/switchboard.json5',
      {},
    );
    gateway = await startGateway({ config, store: await SqliteStore.open({ path: ':memory:' }), gatewayId: 'gw-test' });
    telegram.message({ from: ALICE, text: 'x'.repeat(100), messageId: 90 });
    telegram.message({ from: ALICE, text: 'x'.repeat(100), messageId: 90 });
    // In a group, a long message that does not speak to the bot is none of its business: logged, not answered.
    telegram.message({ from: ALICE, chat: -500, chatType: 'group', text: 'y'.repeat(100), messageId: 92 });
    telegram.message({ from: ALICE, text: 'short one', messageId: 91 });
    await waitUntil('the short one is answered', () => telegram?.sent.some((sent) => sent.text === 'echo short one'), 10_000);
    const told = telegram.sent.filter((sent) => sent.text.startsWith('Your message was not taken'));
    expect(told.map((sent) => sent.text)).toEqual([expect.stringMatching(/^Your message was not taken: .*40/)]);
  });
});
