/**
 * The console's channels page (docs/console.md "Channels", docs/channels.md) in headless Chromium against a real gateway
 * process with a webhook account under pairing: a signed message from an unknown sender shows as a refusal on the
 * account's row and as a sender waiting with its pairing code; "Let in" pairs it (the API then lists the sender as
 * allowed), and a code used already shows the API's error; the page fits a phone's width. The empty state and an
 * account in error are drawn from answers the test gives the page.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, signature, TIMESTAMP_HEADER } from '../../src/channels/webhook/webhook-account.js';
import type { ChatSenderRecord } from '../../src/ports/channels.js';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { CHROMIUM, launch, loginLink, SHOTS } from './console-helpers.js';

const SECRET = 's3cret';

let gateway: GatewayProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const missing = !existsSync(CHROMIUM) && !process.env.CI;
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (missing) return;
  const { configPath } = tempConfig(`{
    channels: { webhook: { access: { direct: "pairing" }, accounts: { ops: { secret: "${SECRET}" } } } },
    agents: { list: [{ id: "echo", model: "scripted/echo" }] },
    models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
  }`);
  gateway = await startGatewayProcess(configPath);
  browser = await launch();
  // A context of its own: the phone-width tab opens in it, with the same login.
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  await page.goto(await loginLink(configPath));
  await page.waitForURL(`${gateway.url}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (gateway) await stopGatewayProcess(gateway);
});

/** A message to the webhook account `ops`, signed with its secret as a sender's system would sign it. */
async function say(id: string, sender: { id: string; name: string }, text: string): Promise<number> {
  const body = JSON.stringify({ id, conversation: `c-${sender.id}`, sender, text });
  const at = String(Math.floor(Date.now() / 1000));
  const response = await fetch(`${gateway.url}/channels/webhook/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [TIMESTAMP_HEADER]: at, [SIGNATURE_HEADER]: signature(SECRET, at, body) },
    body,
  });
  return response.status;
}

async function senders(status: 'pending' | 'allowed'): Promise<ChatSenderRecord[]> {
  return (await gateway.request<{ senders: ChatSenderRecord[] }>('GET', `/v1/channels/senders?status=${status}`)).body.senders;
}

const cell = (testId: string) => page.getByTestId('channel-account').getByTestId(testId).textContent();

describe.skipIf(missing)("the console's channels page", () => {
  it('shows an unknown sender refused and waiting with its code, and "Let in" pairs it', async () => {
    await page.getByRole('link', { name: 'Channels' }).click();
    await page.waitForURL(`${gateway.url}/#/channels`);
    await expect.poll(() => page.getByTestId('channel-account').count()).toBe(1);
    expect(await cell('account-channel')).toBe('webhook');
    expect(await cell('account-name')).toBe('ops');
    expect(await cell('account-state')).toBe('● connected');
    expect(await cell('account-last')).toBe('none yet');
    expect(await page.getByTestId('no-senders').count()).toBe(1);

    expect(await say('m1', { id: 'bob', name: 'Bob' }, 'hi')).toBe(200);
    const [waiting] = await senders('pending');
    expect(waiting).toMatchObject({ channel: 'webhook', account: 'ops', senderId: 'bob', name: 'Bob', status: 'pending' });
    expect(waiting.code).toMatch(/\S/);

    // The page reads again on its own, every few seconds.
    await expect.poll(() => cell('account-refused'), { timeout: 10_000 }).toBe('1');
    expect(await cell('account-received')).toBe('0');
    expect(await cell('account-last')).toMatch(/ ago from Bob$/);
    const row = page.getByTestId('pending-sender');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.getByTestId('sender-name').textContent()).toBe('Bob (bob)');
    expect(await row.getByTestId('sender-code').textContent()).toBe(waiting.code);
    // The pairing code is sent as a notice, and the account has no url to send it to: the send's error is shown, the
    // account stays connected (it still takes messages).
    await expect.poll(() => cell('account-error'), { timeout: 10_000 }).toContain('webhook account "ops" has no url to send replies to');
    expect(await cell('account-state')).toBe('● connected');
    await shot('channels');

    await row.getByRole('button', { name: 'Let in' }).click();
    await expect
      .poll(() => page.getByTestId('pair-outcome').textContent())
      .toBe('Let in Bob (bob) on webhook / ops: what they send from now on reaches the agents.');
    await expect.poll(() => row.count()).toBe(0);
    expect(await page.getByTestId('no-senders').count()).toBe(1);
    expect(await senders('pending')).toEqual([]);
    expect((await senders('allowed')).map((sender) => sender.senderId)).toEqual(['bob']);

    // Let in, Bob's next message is an input.
    expect(await say('m2', { id: 'bob', name: 'Bob' }, 'hi again')).toBe(200);
    await expect.poll(() => cell('account-received'), { timeout: 10_000 }).toBe('1');
    expect(await cell('account-refused')).toBe('1');
  });

  it("shows the API's error when the code was used already (paired elsewhere before the page read again)", async () => {
    expect(await say('m3', { id: 'carol', name: 'Carol' }, 'hello')).toBe(200);
    const row = page.getByTestId('pending-sender');
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    // The page reads the list no more (its reads fail), so Carol's row stays after she is paired from the CLI's route.
    await page.route('**/v1/channels/senders**', (route) => route.abort());
    try {
      const [carol] = await senders('pending');
      expect((await gateway.request('POST', '/v1/channels/webhook/pair', { code: carol.code })).status).toBe(200);
      await row.getByRole('button', { name: 'Let in' }).click();
      await expect
        .poll(() => page.getByTestId('pair-outcome').textContent())
        .toBe(
          `no webhook sender waits with pairing code "${carol.code}" (switchboard channels senders --status pending lists the codes; a code is used once)`,
        );
      expect(await page.getByTestId('pair-outcome').getAttribute('class')).toBe('error');
    } finally {
      await page.unroute('**/v1/channels/senders**');
    }
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0);
    expect((await senders('allowed')).map((sender) => sender.senderId).sort()).toEqual(['bob', 'carol']);
  });

  it('fits the accounts and a waiting sender in a phone-width screen', async () => {
    expect(await say('m4', { id: 'dave', name: 'Dave' }, 'hey')).toBe(200);
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 375, height: 740 });
    try {
      await phone.goto(`${gateway.url}/#/channels`);
      await expect.poll(() => phone.getByTestId('pending-sender').count(), { timeout: 10_000 }).toBe(1);
      expect(await phone.getByTestId('channel-account').count()).toBe(1);
      await phone.screenshot({ path: join(SHOTS, 'phone-channels.png'), fullPage: true });
      const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      expect(widths[0]).toBe(widths[1]);
    } finally {
      await phone.close();
    }
  });

  it('says how to add an account when none is configured, and marks an account in error', async () => {
    await page.route('**/v1/channels', (route) => route.fulfill({ json: { accounts: [] } }));
    await page.reload();
    const empty = page.getByTestId('no-channels');
    await expect.poll(() => empty.count()).toBe(1);
    expect(await empty.textContent()).toContain('channels.<telegram|slack|discord|webhook>.accounts');
    await page.unroute('**/v1/channels');

    const failed = {
      channel: 'telegram',
      account: 'main',
      state: 'error',
      error: '401 Unauthorized: the bot token was refused',
      errorAt: Date.now() - 5000,
      connectedAt: null,
      lastMessageAt: null,
      lastMessageFrom: null,
      received: 0,
      refused: 0,
      sent: 0,
    };
    await page.route('**/v1/channels', (route) => route.fulfill({ json: { accounts: [failed] } }));
    await page.reload();
    const account = page.getByTestId('channel-account');
    await expect.poll(() => account.count()).toBe(1);
    expect(await account.getAttribute('class')).toBe('account-error');
    expect(await cell('account-state')).toBe('⚠ error');
    expect(await cell('account-error')).toMatch(/^401 Unauthorized: the bot token was refused \(\d+\.\d s ago\)$/);
    await shot('channels-error');
    await page.unroute('**/v1/channels');
  });
});
