/**
 * The trace view and the charts in headless Chromium against a real gateway process on the demo agents (support priced,
 * expert not): support asking expert, opened from the message's path, is one waterfall where expert's run lies inside
 * support's sessions_send call, which says it waited on expert, with tokens and cost on the bars; a caller's
 * traceparent shows as a remote parent; the charts draw tokens per agent and, sampled while the page is open, lane use.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { CHROMIUM, demoConfig, launch, loginLink, SHOTS } from './console-helpers.js';

let gateway: GatewayProcess;
let configPath: string;
let browser: Browser;
let page: Page;

const missing = !existsSync(CHROMIUM) && !process.env.CI;
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (missing) return;
  ({ configPath } = demoConfig({}, (demo) => {
    demo.models.prices = { 'scripted/support': { input: 3, output: 15 } };
  }));
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

/** A row of the waterfall by its span's kind and agent, or its name. */
const row = (filter: { kind?: string; agent?: string; name?: string }): Locator => {
  let rows = page.getByTestId('span');
  if (filter.kind) rows = rows.and(page.locator(`[data-kind="${filter.kind}"]`));
  if (filter.agent) rows = rows.and(page.locator(`[data-agent="${filter.agent}"]`));
  if (filter.name) rows = rows.filter({ has: page.locator('.wf-label b', { hasText: filter.name }) });
  return rows;
};

/** Where a row's bar is drawn, in pixels. */
async function barOf(rowLocator: Locator): Promise<{ left: number; right: number }> {
  const box = (await rowLocator.getByTestId('bar').boundingBox())!;
  return { left: box.x, right: box.x + box.width };
}

describe.skipIf(missing)('the trace view and the charts', () => {
  it("opens support asking expert from the message's path as one waterfall: expert's run inside the call that waited on it", async () => {
    const asked = await gateway.request<{ status: string; inputId: string }>('POST', '/v1/send', {
      target: 'support',
      message: 'the app shows an error on login',
      wait: true,
    });
    expect(asked.body.status).toBe('ok');
    await page.goto(`${gateway.url}/#/path/${asked.body.inputId}`);
    await page.getByTestId('trace-link').click();
    await page.waitForURL(`${gateway.url}/#/trace?input=${asked.body.inputId}`);
    await expect.poll(() => page.getByTestId('trace-summary').textContent()).toContain('2 runs');

    const support = row({ kind: 'invoke_agent', agent: 'support' });
    const expert = row({ kind: 'invoke_agent', agent: 'expert' });
    const send = row({ name: 'execute_tool sessions_send' });
    expect(await support.count()).toBe(1);
    expect(await expert.count()).toBe(1);
    expect(await support.locator('.wf-label b').textContent()).toBe('invoke_agent support');
    // Each run is labelled with its session, its time, its tokens and its cost (expert's model has no price).
    expect(await support.locator('.wf-label a').textContent()).toBe('agent:support:main');
    expect(await support.getByTestId('figures').textContent()).toMatch(/^[\d.]+ (ms|s) · \d+\+\d+ tokens · \$\d+\.\d{4}$/);
    expect(await expert.getByTestId('figures').textContent()).toMatch(/^[\d.]+ (ms|s) · \d+\+\d+ tokens · unpriced$/);
    // The call support waited in says whom it waited on, and expert's run is indented under it and drawn inside it.
    expect(await send.getAttribute('class')).toContain('waited');
    expect(await send.getByTestId('figures').textContent()).toContain('waited on expert');
    const indent = async (locator: Locator) =>
      Number.parseFloat(await locator.locator('.wf-label').evaluate((label) => getComputedStyle(label).paddingLeft));
    expect(await indent(expert)).toBeGreaterThan(await indent(send));
    expect(await indent(send)).toBeGreaterThan(await indent(support));
    const [supportBar, sendBar, expertBar] = [await barOf(support), await barOf(send), await barOf(expert)];
    expect(sendBar.left).toBeGreaterThanOrEqual(supportBar.left - 0.5);
    expect(expertBar.left).toBeGreaterThanOrEqual(sendBar.left - 0.5);
    expect(expertBar.right).toBeLessThanOrEqual(sendBar.right + 0.5);
    expect(sendBar.right).toBeLessThanOrEqual(supportBar.right + 0.5);
    // Support's bar spans the whole trace; its model's work is drawn on it, darker, twice (before and after the wait).
    expect(await support.getByTestId('bar').getAttribute('x')).toBe('0%');
    expect(await support.locator('.wf-work').count()).toBe(2);
    // The message's own run is the one marked.
    expect(await support.getAttribute('class')).toContain('focus');
    await shot('trace');
  });

  it("marks a caller's span, which this gateway has not, as the remote parent of the run it started", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const response = await fetch(`${gateway.url}/v1/send`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gateway.token}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
      body: JSON.stringify({ target: 'support', message: 'hello', wait: true }),
    });
    expect(response.status).toBe(200);
    await page.goto(`${gateway.url}/#/trace/${traceId}`);
    await expect.poll(() => page.getByTestId('trace-id').textContent()).toBe(traceId);
    expect(await row({ kind: 'remote' }).getByTestId('remote').textContent()).toContain('span 00f067aa0ba902b7');
    const run = row({ kind: 'invoke_agent', agent: 'support' });
    const indent = async (locator: Locator) =>
      Number.parseFloat(await locator.locator('.wf-label').evaluate((label) => getComputedStyle(label).paddingLeft));
    expect(await indent(run)).toBeGreaterThan(await indent(row({ kind: 'remote' })));
    // An id that names no trace here says so.
    await page.goto(`${gateway.url}/#/trace/${'e'.repeat(32)}`);
    await expect.poll(() => page.getByTestId('trace-error').textContent()).toContain(`no run in trace "${'e'.repeat(32)}"`);
  });

  it('draws tokens per agent over time, and lane use sampled while the page is open', async () => {
    await page.goto(`${gateway.url}/#/charts`);
    await page.getByRole('button', { name: 'last hour' }).click();
    const tokens = page.getByTestId('chart').first();
    await expect.poll(() => tokens.getByTestId('bar').count()).toBeGreaterThan(0);
    expect(await page.locator('.chart-legend').first().textContent()).toContain('support');
    expect(await page.locator('.chart-legend').first().textContent()).toContain('expert');
    // Lane use is drawn from the first sample on: a line for the main lane's active runs.
    await expect.poll(() => page.getByTestId('line-main-active').count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => page.getByTestId('queue-now').textContent()).toBe('No input waits.');
    await shot('charts');
  });
});
