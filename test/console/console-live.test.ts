/**
 * The web console while work goes on, in headless Chromium against a real gateway process on the demo agents: a
 * conversation started with an agent that has no session yet, a message shown as soon as it is sent, the reply
 * streamed and a Stop button for the running run, a label being typed that a live refresh leaves alone, the board's
 * "move to" menu after a move, the overview's latest events when it is opened after work was done, and pages that fit
 * a phone's width.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { CHROMIUM, demoConfig, launch, loginLink, SHOTS } from './console-helpers.js';

let gateway: GatewayProcess;
let configPath: string;
let browser: Browser;
let page: Page;

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const missing = !existsSync(CHROMIUM) && !process.env.CI;
const PEER_TOKEN = 'partner-token-0123456789abcdef0123456789';

beforeAll(async () => {
  if (missing) return;
  // The slow run must stay active (its Stop button shown) rather than suspend in its wait after the default 2 s.
  const stayActive = { lanes: { suspendWaitsAfterMs: 600_000 } };
  ({ configPath } = demoConfig(
    { ...stayActive, a2a: { server: { enabled: true, peers: [{ id: 'partner', token: PEER_TOKEN }] } } },
    (demo) => {
      // support says something, then asks expert a question that takes a minute: its run is going for that long.
      demo.models.providers.scripted.models.support.rules.unshift({
        match: 'ask slowly',
        steps: [
          {
            text: 'Let me ask our expert first.',
            toolCalls: [
              { tool: 'sessions_send', args: { agentId: 'expert', message: 'Research for a customer: slow', timeoutSeconds: 90 } },
            ],
          },
          { text: 'done' },
        ],
      });
      // expert splits a question with a sub-agent of its own kind: an edge from expert to itself.
      demo.models.providers.scripted.models.expert.rules.unshift({
        match: '^split (.+)',
        steps: [
          { toolCalls: [{ tool: 'sessions_spawn', args: { agentId: 'expert', label: 'part', task: 'a part of {{match.1}}' } }] },
          { text: 'split' },
        ],
      });
    },
  ));
  gateway = await startGatewayProcess(configPath);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(await loginLink(configPath));
  await page.waitForURL(`${gateway.url}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (gateway) await stopGatewayProcess(gateway);
});

describe.skipIf(missing)('the web console while work goes on', () => {
  it('starts a conversation with an agent that has no session yet, from the sessions page', async () => {
    await page.goto(`${gateway.url}/#/sessions`);
    await page.getByLabel('talk to agent').selectOption('critic');
    await page.getByRole('button', { name: 'Message an agent' }).click();
    await page.waitForURL(/#\/session\/agent%3Acritic%3Amain$/);
    await expect.poll(() => page.getByTestId('fresh').textContent()).toContain('the first one you send starts the conversation');
    await page.getByLabel('message').fill('please review this');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.getByTestId('entry').count(), { timeout: 15_000 }).toBe(2);
    expect(await page.getByTestId('session-state').count()).toBe(1);
  });

  it('shows a sent message at once, streams the reply, and stops the running run with its Stop button', async () => {
    await page.goto(`${gateway.url}/#/session/${encodeURIComponent('agent:support:main')}`);
    await expect.poll(() => page.getByTestId('fresh').count()).toBe(1);
    await page.getByLabel('message').fill('ask slowly about the database');
    await page.getByRole('button', { name: 'Send' }).click();
    // The run goes on for a minute: the message, the text said so far and the Stop button are shown meanwhile.
    await expect.poll(() => page.getByTestId('pending').textContent()).toContain('ask slowly about the database');
    await expect.poll(() => page.getByTestId('live').textContent(), { timeout: 15_000 }).toContain('Let me ask our expert first.');
    await expect.poll(() => page.getByTestId('working').count()).toBe(1);
    await shot('session-working');
    await page.getByTestId('working').getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => page.getByTestId('working').count(), { timeout: 15_000 }).toBe(0);
    await expect.poll(() => page.getByTestId('run').last().textContent()).toContain('cancelled');
    await expect.poll(() => page.getByTestId('live').count()).toBe(0);
    // The message is in the transcript now, with what was said before the stop.
    await expect.poll(() => page.getByTestId('pending').count()).toBe(0);
    expect(await page.getByTestId('transcript').textContent()).toContain('ask slowly about the database');
    // The question support had sent on goes on in expert's session: stopped too, so that expert is free again.
    const asked = await gateway.request<any>('GET', `/v1/runs?sessionKey=${encodeURIComponent('agent:expert:main')}&limit=10`);
    for (const run of asked.body.runs.filter((item: any) => item.status === 'running'))
      await gateway.request('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('opens a session at its newest messages', async () => {
    const key = 'agent:critic:web:direct:long';
    for (let i = 0; i < 12; i += 1)
      expect((await gateway.request('POST', '/v1/send', { target: key, message: `hello ${i}`, wait: true })).body).toMatchObject({
        status: 'ok',
      });
    await page.goto(`${gateway.url}/#/session/${encodeURIComponent(key)}`);
    await expect.poll(() => page.getByTestId('entry').count()).toBe(24);
    await expect.poll(() => page.getByLabel('message').isVisible()).toBe(true);
    await expect.poll(() => page.evaluate(() => innerHeight + scrollY >= document.documentElement.scrollHeight - 2)).toBe(true);
  });

  it('keeps a label being typed when the page refreshes itself', async () => {
    const key = 'agent:critic:web:direct:labelled';
    expect((await gateway.request('POST', '/v1/send', { target: key, message: 'hello', wait: true })).body).toMatchObject({ status: 'ok' });
    await page.goto(`${gateway.url}/#/session/${encodeURIComponent(key)}`);
    await expect.poll(() => page.getByTestId('entry').count()).toBe(2);
    await page.getByLabel('label').fill('half-typ');
    await gateway.request('POST', '/v1/send', { target: key, message: 'hello again', wait: true });
    await expect.poll(() => page.getByTestId('entry').count()).toBe(4);
    expect(await page.getByLabel('label').inputValue()).toBe('half-typ');
  });

  it("resets the board's move menu after a move, the new state shown as the task's state", async () => {
    const created = await gateway.request<{ task: { id: string } }>('POST', '/v1/board/tasks', {
      title: 'a task to move',
      assignee: 'nobody',
    });
    await page.goto(`${gateway.url}/#/board/${created.body.task.id}`);
    await expect.poll(() => page.getByTestId('task-state').textContent()).toBe('ready');
    await page.getByLabel('move to').selectOption('todo');
    await expect.poll(() => page.getByTestId('task-state').textContent()).toBe('todo');
    expect(await page.getByLabel('move to').inputValue()).toBe('');
    expect(await page.getByLabel('move to').locator('option').allTextContents()).not.toContain('todo');
  });

  it('lists the latest events on an overview opened after the work was done', async () => {
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await fresh.context().addCookies(await page.context().cookies());
    await fresh.goto(`${gateway.url}/#/`);
    await expect.poll(() => fresh.getByTestId('events').locator('li').count()).toBeGreaterThan(5);
    expect(await fresh.getByTestId('events').locator('b').allTextContents()).toContain('run.completed');
    await fresh.close();
  });

  it("draws the map's spawn and exchange between the same two agents apart, and a sub-agent of an agent's own kind", async () => {
    const asks = ['research caching', 'the app shows an error on login'];
    for (const message of asks)
      expect((await gateway.request('POST', '/v1/send', { target: 'support', message, wait: true })).body).toMatchObject({ status: 'ok' });
    expect((await gateway.request('POST', '/v1/send', { target: 'expert', message: 'split the work', wait: true })).body).toMatchObject({
      status: 'ok',
    });
    await page.goto(`${gateway.url}/#/map`);
    const label = async (testId: string) => {
      const circle = page.getByTestId(testId).locator('circle');
      return { x: Number(await circle.getAttribute('cx')), y: Number(await circle.getAttribute('cy')) };
    };
    await expect.poll(() => page.getByTestId('edge-spawn-expert-expert').count(), { timeout: 15_000 }).toBe(1);
    const spawn = await label('edge-spawn-support-expert');
    const exchange = await label('edge-exchange-support-expert');
    // Each count's circle (radius 11) is clear of the other.
    expect(Math.hypot(spawn.x - exchange.x, spawn.y - exchange.y)).toBeGreaterThan(22);
    const loop = await page.getByTestId('edge-spawn-expert-expert').locator('path').boundingBox();
    expect(loop!.width).toBeGreaterThan(20);
    expect(loop!.height).toBeGreaterThan(20);
    // The map takes the width it is given (not a fixed box).
    const box = await page.getByTestId('map').boundingBox();
    expect(box!.width).toBeGreaterThan(600);
    await shot('map-pairs');
  });

  it('keeps a long title inside its board card, and a card whose dependency is done waits for nothing', async () => {
    const run = async (title: string, dependsOn: string[] = []) => {
      const created = await gateway.request<any>('POST', '/v1/board/tasks', { title, assignee: 'shell', dependsOn });
      const claimed = await gateway.request<any>('POST', '/v1/board/claim', { worker: 'w', assignee: 'shell' });
      expect(claimed.body.claim.taskId).toBe(created.body.task.id);
      const done = await gateway.request('POST', `/v1/board/tasks/${created.body.task.id}/complete`, {
        token: claimed.body.claim.token,
        result: 'ok',
      });
      expect(done.status).toBe(200);
      return created.body.task.id as string;
    };
    const first = await run('x'.repeat(160));
    await run('the second step', [first]);
    await page.goto(`${gateway.url}/#/board`);
    const cards = page.getByTestId('column-done').getByTestId('task');
    await expect.poll(() => cards.count()).toBe(2);
    for (const card of await cards.all()) {
      expect(await card.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
      expect(await card.textContent()).not.toContain('waits for');
    }
    await shot('board-done');
  });

  it("spaces a path's steps: the time, then what happened", async () => {
    const sent = await gateway.request<any>('POST', '/v1/send', { target: 'critic', message: 'a path', wait: true });
    await page.goto(`${gateway.url}/#/path/${sent.body.inputId}`);
    await expect.poll(() => page.getByTestId('step').count()).toBeGreaterThanOrEqual(2);
    expect(await page.getByTestId('step').first().textContent()).toMatch(/^\s*\+\d+ ms accepted /);
  });

  it("shows an A2A task's events in words, not as JSON", async () => {
    const answer = await fetch(`${gateway.url}/a2a/critic/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', authorization: `Bearer ${PEER_TOKEN}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'm-console-1', role: 'ROLE_USER', parts: [{ text: 'a plan from a partner' }] },
          configuration: { blocking: true },
        },
      }),
    });
    const task = (await answer.json()).result.task;
    await page.goto(`${gateway.url}/#/a2a/${task.id}`);
    await expect.poll(() => page.getByTestId('a2a-event').count()).toBeGreaterThanOrEqual(2);
    const lines = await page.getByTestId('a2a-event').allTextContents();
    expect(lines.join('\n')).not.toMatch(/\{"[A-Za-z]+":/);
    expect(lines).toEqual(
      expect.arrayContaining([expect.stringContaining('text a plan from a partner'), expect.stringContaining('state completed')]),
    );
    await shot('a2a-task');
  });

  it('fits every page in a phone-width screen, with no sideways scrolling', async () => {
    const phone = await browser.newPage({ viewport: { width: 375, height: 740 } });
    await phone.context().addCookies(await page.context().cookies());
    for (const [name, hash] of [
      ['overview', '#/'],
      ['sessions', '#/sessions'],
      ['session', `#/session/${encodeURIComponent('agent:support:main')}`],
      ['map', '#/map'],
      ['subagents', '#/subagents'],
      ['board', '#/board'],
      ['a2a', '#/a2a'],
    ]) {
      await phone.goto(`${gateway.url}/${hash}`);
      await expect.poll(() => phone.locator('main h1').count()).toBe(1);
      await phone.screenshot({ path: join(SHOTS, `phone-${name}.png`), fullPage: true });
      const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      expect({ page: name, widths }).toEqual({ page: name, widths: [widths[1], widths[1]] });
    }
    await phone.close();
  });
});
