/**
 * The web console in headless Chromium against a real gateway process on the demo agents: login (a link, a wrong
 * token), a message and its reply, support asking expert and that exchange opened from the map, a research sub-agent
 * killed from the sub-agent board, a board task taken and done by an outside worker (a shell loop), and a reload that
 * resumes the live stream. Each page's screenshot is saved in test-results/console/.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { CHROMIUM, demoConfig, launch, loginLink, SHOTS } from './console-helpers.js';

let gateway: GatewayProcess;
let configPath: string;
let browser: Browser;
let page: Page;
const workers: ChildProcess[] = [];

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (missing) return;
  ({ configPath } = demoConfig());
  gateway = await startGatewayProcess(configPath);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
}, 60_000);

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await browser?.close();
  if (gateway) await stopGatewayProcess(gateway);
});

// On a machine without Chromium the browser tests are skipped, saying so; CI installs it (.ci/run) and never skips.
const missing = !existsSync(CHROMIUM) && !process.env.CI;
if (missing)
  console.warn(`the console's browser tests are skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);

describe.skipIf(missing)('the web console', () => {
  it('refuses a wrong token, and serves its pages under a strict Content-Security-Policy', async () => {
    const response = await page.goto(`${gateway.url}/`);
    expect(response!.headers()['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    await page.waitForURL(/#\/login$/);
    await page.getByLabel('control token').fill('not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe(
        'that is not this gateway\'s control token: print it with "switchboard --config <file> token", or open a link from "switchboard console"',
      );
    await shot('login');
    // Nothing opens without a login: the API answers 401 to the page's own requests.
    expect(await page.evaluate(async () => (await fetch('/v1/status')).status)).toBe(401);
  });

  it('logs in through a one-time link, which works once', async () => {
    const link = await loginLink(configPath);
    await page.goto(link);
    await page.waitForURL(`${gateway.url}/`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Overview');
    const cookies = await page.context().cookies();
    expect(cookies).toEqual([expect.objectContaining({ name: 'switchboard_console', httpOnly: true, sameSite: 'Strict' })]);
    // A change made with the cookie needs the console's header; the API refuses one without it.
    const bare = await page.evaluate(async () => {
      const answer = await fetch('/v1/send', {
        method: 'POST',
        body: JSON.stringify({ message: 'x' }),
        headers: { 'content-type': 'application/json' },
      });
      return { status: answer.status, body: await answer.json() };
    });
    expect(bare).toEqual({
      status: 403,
      body: {
        error: {
          code: 'FORBIDDEN',
          message:
            'a change made with the console\'s login must carry the header "X-Switchboard-Console: 1"; scripts use "Authorization: Bearer <token>"',
        },
      },
    });
    const again = await browser.newPage();
    await again.goto(link);
    await again.waitForURL(/#\/login\?link=expired$/);
    await expect.poll(() => again.getByRole('alert').textContent()).toContain('That login link was used already or has expired');
    await again.close();
  });

  it('sends a message from the composer and shows the reply without a reload', async () => {
    await gateway.request('POST', '/v1/send', { target: 'support', message: 'hello', wait: true });
    await page.goto(`${gateway.url}/#/session/${encodeURIComponent('agent:support:main')}`);
    await expect.poll(() => page.getByTestId('entry').count()).toBe(2);
    await page.getByLabel('message').fill('what are your opening hours?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect
      .poll(() => page.getByTestId('transcript').textContent(), { timeout: 15_000 })
      .toContain('The desk is staffed 08:00-18:00 UTC');
    // The run's tool call and its result are shown, with the run's boundary.
    await expect
      .poll(() => page.locator('details.tool summary').allTextContents(), { timeout: 15_000 })
      .toEqual([expect.stringContaining('tool call time_now'), expect.stringContaining('result of time_now')]);
    expect(await page.getByTestId('run').count()).toBe(2);
    await shot('session');
  });

  it('shows support asking expert on the map, and opens that exchange from its edge', async () => {
    const asked = await gateway.request('POST', '/v1/send', { target: 'support', message: 'the app shows an error on login', wait: true });
    expect(asked.body).toMatchObject({ status: 'ok', reply: expect.stringContaining('Ada says') });
    await page.goto(`${gateway.url}/#/map`);
    await page.getByTestId('edge-exchange-support-expert').locator('circle').click();
    await page.locator('.links button').first().click();
    await expect
      .poll(() => page.getByTestId('conversation').textContent())
      .toContain('A customer reports: the app shows an error on login');
    await expect.poll(() => page.getByTestId('conversation').textContent()).toContain('Diagnosis for');
    await shot('map');
    // From the exchange to the path its request took: accepted, run, reply.
    await page.getByTestId('conversation').getByRole('link', { name: 'path' }).first().click();
    await expect.poll(() => page.getByTestId('step').count()).toBeGreaterThanOrEqual(3);
    expect(await page.getByTestId('step').first().textContent()).toContain('accepted');
    await shot('path');
  });

  it('kills a running research sub-agent from the sub-agent board', async () => {
    await gateway.request('POST', '/v1/send', { target: 'support', message: 'research slow database queries', wait: true });
    await page.goto(`${gateway.url}/#/subagents`);
    const running = page.locator('[data-testid="subagent"][data-state="running"]');
    await expect.poll(() => running.count(), { timeout: 15_000 }).toBe(1);
    await shot('subagents');
    await running.getByRole('button', { name: 'kill' }).click();
    await expect.poll(() => page.getByTestId('note').textContent()).toBe('killed 1 sub-agent(s)');
    await expect.poll(() => page.locator('[data-testid="subagent"][data-state="cancelled"]').count()).toBe(1);
  });

  it('creates a board task that an outside worker, a shell loop, takes and completes', async () => {
    await page.goto(`${gateway.url}/#/board`);
    await page.getByLabel('title').fill('summarise the release notes');
    await page.getByLabel('assignee').fill('shell-worker');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.getByTestId('column-ready').getByTestId('task').count()).toBe(1);
    const script = `
      for i in $(seq 1 200); do
        answer=$(curl -s -X POST "$URL/v1/board/claim" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
          -d '{"worker":"sh","assignee":"shell-worker"}')
        id=$(printf '%s' "$answer" | sed -n 's/.*"claim":{"taskId":"\\([^"]*\\)".*/\\1/p')
        token=$(printf '%s' "$answer" | sed -n 's/.*"claim":{[^}]*"token":\\([0-9]*\\).*/\\1/p')
        if [ -n "$id" ]; then
          sleep 1
          curl -s -X POST "$URL/v1/board/tasks/$id/complete" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
            -d "{\\"token\\":$token,\\"result\\":\\"done by the shell loop\\"}" > /dev/null
          exit 0
        fi
        sleep 0.2
      done
      exit 1`;
    workers.push(spawn('bash', ['-c', script], { env: { ...process.env, URL: gateway.url, TOKEN: gateway.token }, stdio: 'ignore' }));
    await expect.poll(() => page.getByTestId('column-running').getByTestId('task').count(), { timeout: 15_000 }).toBe(1);
    await shot('board');
    await expect.poll(() => page.getByTestId('column-done').getByTestId('task').count(), { timeout: 15_000 }).toBe(1);
    await page.getByTestId('column-done').getByTestId('task').click();
    await expect.poll(() => page.getByTestId('task-result').textContent()).toBe('done by the shell loop');
    await shot('board-task');
  });

  it('resumes the live stream after a reload, missing nothing published meanwhile', async () => {
    await page.goto(`${gateway.url}/#/`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Overview');
    const sent = await gateway.request<{ sessionKey: string }>('POST', '/v1/send', {
      target: 'critic',
      message: 'first review',
      wait: true,
    });
    const seen = (key: string) => page.getByTestId('events').locator('li', { hasText: key }).count();
    await expect.poll(() => seen(sent.body.sessionKey)).toBeGreaterThan(0);
    // Away from the page while a message runs: its events come from the journal when the page is back.
    await page.goto('about:blank');
    const later = await gateway.request<{ sessionKey: string }>('POST', '/v1/send', { target: 'expert', message: 'hello', wait: true });
    await page.goto(`${gateway.url}/#/`);
    await expect.poll(() => seen(later.body.sessionKey)).toBeGreaterThanOrEqual(2);
    const types = await page.getByTestId('events').locator('li', { hasText: later.body.sessionKey }).locator('b').allTextContents();
    expect(types).toEqual(expect.arrayContaining(['run.started', 'run.completed']));
    await shot('overview');
    await page.reload();
    await waitUntil('the overview is back after a reload', async () =>
      (await page.locator('h1').textContent()) === 'Overview' ? true : undefined,
    );
    await page.goto(`${gateway.url}/#/sessions`);
    await expect.poll(() => page.getByTestId('sessions-tree').locator('a').count()).toBeGreaterThanOrEqual(4);
    await shot('sessions');
    await page.goto(`${gateway.url}/#/a2a`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('A2A tasks');
    await shot('a2a');
  });
});
