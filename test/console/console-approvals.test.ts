/**
 * The console's approvals and budgets pages (docs/console.md, docs/gates.md), in headless Chromium against a real
 * gateway process: an exec call under an `ask` policy shows as a pending count in the navigation and as a request
 * with its command, and Approve on its page lets the run finish; an edit's diff is shown line by line and escaped, and
 * an answer that comes after another one shows the API's error; the budgets page shows an agent's daily cap with what
 * the runs spent.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../src/ports/gates.js';
import type { BudgetView } from '../../src/ports/gateway.js';
import type { RunRecord } from '../../src/ports/runs.js';
import { type GatewayProcess, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { CHROMIUM, launch, loginLink, SHOTS } from './console-helpers.js';

const NOTES = 'first line\nsecond line\nthird line\n';

let gateway: GatewayProcess;
let workspace: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const missing = !existsSync(CHROMIUM) && !process.env.CI;
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (missing) return;
  const { dir, configPath } = tempConfig('{}');
  workspace = realpathSync(dir);
  writeFileSync(join(workspace, 'notes.md'), NOTES);
  // coder's exec and edit_file calls need a person's approval; its model calls draw on a daily cap.
  writeFileSync(
    configPath,
    `{
      budgets: { agents: { coder: { tokens: 20000, cost: 2 } } },
      agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)},
        exec: { enabled: true }, tools: { ask: ["exec", "edit_file"] } }] },
      models: { providers: { scripted: { type: "scripted", models: { coder: { rules: [
        { match: "^log (\\\\w+)", steps: [
          { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> log.txt"] } }] },
          { text: "exec said {{tool.exec.status}}" },
        ] },
        { match: "^edit notes", steps: [
          { toolCalls: [{ tool: "edit_file", args: { path: "notes.md", old: "second line", new: "<script>alert(1)</script> & more" } }] },
          { text: "edit said {{tool.edit_file}}" },
        ] },
      ] } } } } },
    }`,
  );
  gateway = await startGatewayProcess(configPath);
  browser = await launch();
  // A context of its own: a second tab of the same login opens in it.
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  await page.goto(await loginLink(configPath));
  await page.waitForURL(`${gateway.url}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (gateway) await stopGatewayProcess(gateway);
});

async function pendingApproval(): Promise<ApprovalRecord> {
  return waitUntil(
    'a pending approval request',
    async () => (await gateway.request<{ approvals: ApprovalRecord[] }>('GET', '/v1/approvals')).body.approvals[0],
    20_000,
    20,
  );
}

async function ended(runId: string): Promise<RunRecord> {
  return waitUntil(
    'the run ended',
    async () => {
      const { run } = (await gateway.request<{ run: RunRecord }>('GET', `/v1/runs/${runId}`)).body;
      return ['succeeded', 'failed', 'interrupted'].includes(run.status) && run;
    },
    20_000,
    20,
  );
}

describe.skipIf(missing)("the console's approvals and budgets", () => {
  it('counts a pending exec request in the navigation, shows its command, and Approve lets the run finish', async () => {
    // Reloaded, and on only once the count's event stream is open, so that the request's event comes through it.
    const listening = page.waitForResponse(
      (response) => response.url().includes('/v1/events') && response.url().includes('type=approval.'),
    );
    await page.reload();
    await listening;
    expect(await page.getByTestId('pending-count').count()).toBe(0);

    expect((await gateway.request('POST', '/v1/send', { target: 'coder', message: 'log hello' })).status).toBe(200);
    const asked = await pendingApproval();
    await expect.poll(() => page.getByTestId('pending-count').textContent(), { timeout: 15_000 }).toBe('1');

    await page.getByRole('link', { name: /^Approvals/ }).click();
    const row = page.getByTestId('approval');
    await expect.poll(() => row.count()).toBe(1);
    const line = await row.textContent();
    for (const text of ['coder', asked.sessionKey, `run ${asked.runId.slice(0, 8)}`, 'exec', 'sh -c echo hello >> log.txt'])
      expect(line).toContain(text);
    expect(line).toContain('agents.list[coder].tools.ask has "exec"');
    await shot('approvals');

    await row.getByTestId('approval-open').click();
    await page.waitForURL(`${gateway.url}/#/approvals/${encodeURIComponent(asked.id)}`);
    await expect.poll(() => page.getByTestId('approval-status').textContent()).toBe('pending');
    const details = await page.getByTestId('details').textContent();
    expect(details).toContain('sh -c echo hello >> log.txt');
    expect(details).toContain(workspace);
    expect(JSON.parse((await page.getByTestId('approval-args').textContent())!)).toEqual({
      command: 'sh',
      args: ['-c', 'echo hello >> log.txt'],
    });
    // Nothing ran while it waited.
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
    await shot('approval-exec');

    await page.getByLabel('reason').fill('looks fine');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect.poll(() => page.getByTestId('approval-status').textContent()).toMatch(/^approved by console .*: looks fine$/);

    const run = await ended(asked.runId);
    expect(run.status).toBe('succeeded');
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('hello\n');
    const { approval } = (await gateway.request<{ approval: ApprovalRecord }>('GET', `/v1/approvals/${asked.id}`)).body;
    expect(approval).toMatchObject({ status: 'approved', decidedBy: 'console', note: 'looks fine', editedArgs: null });
    // The count follows the decision's event: nothing is pending any more.
    await expect.poll(() => page.getByTestId('pending-count').count(), { timeout: 15_000 }).toBe(0);
  });

  it("shows an edit's diff escaped, line by line, and the API's error when another answer came first", async () => {
    expect((await gateway.request('POST', '/v1/send', { target: 'coder', message: 'edit notes' })).status).toBe(200);
    const asked = await pendingApproval();
    expect(asked.subject).toBe('edit_file');
    // A tab that hears no events: it still offers the buttons after the request is answered elsewhere.
    const quiet = await context.newPage();
    try {
      await quiet.route('**/v1/events**', (route) => route.abort());
      await quiet.goto(`${gateway.url}/#/approvals/${encodeURIComponent(asked.id)}`);
      const diff = quiet.getByTestId('diff');
      await expect.poll(() => diff.count()).toBe(1);
      expect(await diff.locator('.del').allTextContents()).toEqual(['-second line\n']);
      expect(await diff.locator('.add').allTextContents()).toEqual(['+<script>alert(1)</script> & more\n']);
      expect(await diff.locator('.hunk').count()).toBe(1);
      // The file's text is shown as text, not parsed as markup.
      expect(await quiet.locator('main script').count()).toBe(0);
      await quiet.getByText('approve with edited arguments').click();
      expect(JSON.parse(await quiet.getByLabel('edited arguments').inputValue())).toEqual(asked.args);
      await quiet.screenshot({ path: join(SHOTS, 'approval-diff.png'), fullPage: true });

      const denied = await gateway.request('POST', `/v1/approvals/${asked.id}/deny`, { by: 'cli:ann', note: 'not today' });
      expect(denied.status).toBe(200);
      await quiet.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect
        .poll(() => quiet.getByTestId('answer-error').textContent())
        .toBe(`approval request ${asked.id} is denied already (by cli:ann): the first answer stands`);
      await expect.poll(() => quiet.getByTestId('approval-status').textContent()).toMatch(/^denied by cli:ann .*: not today$/);
    } finally {
      await quiet.close();
    }
    expect((await ended(asked.runId)).status).toBe('succeeded');
    expect(readFileSync(join(workspace, 'notes.md'), 'utf8')).toBe(NOTES);

    // Answered requests are listed only with the switch.
    await page.goto(`${gateway.url}/#/approvals`);
    await expect.poll(() => page.getByTestId('no-approvals').count()).toBe(1);
    await page.getByLabel('show answered ones').check();
    const rows = page.getByTestId('approval');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).textContent()).toContain('denied by cli:ann');
    expect(await rows.nth(1).textContent()).toContain('approved by console');
  });

  it("shows the agent's daily cap with the tokens its runs spent against the limit", async () => {
    const { budgets } = (await gateway.request<{ budgets: BudgetView[] }>('GET', '/v1/budgets')).body;
    const day = new Date().toISOString().slice(0, 10);
    expect(budgets.map((budget) => [budget.key, budget.source])).toEqual([[`agent:coder:${day}`, 'budgets.agents.coder']]);
    const [cap] = budgets;
    expect(cap.spent.tokens).toBeGreaterThan(0);
    expect(cap.reserved.tokens).toBe(0);

    await page.goto(`${gateway.url}/#/budgets`);
    const row = page.getByTestId('budget');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td').first().textContent()).toBe(`agent:coder:${day}`);
    const share = Math.floor((cap.spent.tokens / 20_000) * 100);
    expect(await row.getByTestId('budget-tokens').textContent()).toBe(`${cap.spent.tokens.toLocaleString('en-US')} / 20,000 (${share}%)`);
    // The scripted model has no price: no cost, against a two-dollar cap.
    expect(await row.getByTestId('budget-cost').textContent()).toBe('$0.0000 / $2.0000 (0%)');
    expect(await row.locator('svg.bar').count()).toBe(2);
    await shot('budgets');
  });

  it('fits the approvals list, a request with its diff, and the budgets in a phone-width screen', async () => {
    const edit = (await gateway.request<{ approvals: ApprovalRecord[] }>('GET', '/v1/approvals?status=all')).body.approvals.find(
      (approval) => approval.subject === 'edit_file',
    )!;
    const phone = await context.newPage();
    try {
      await phone.setViewportSize({ width: 375, height: 740 });
      for (const [name, hash] of [
        ['approvals', '#/approvals'],
        ['approval', `#/approvals/${encodeURIComponent(edit.id)}`],
        ['budgets', '#/budgets'],
      ]) {
        await phone.goto(`${gateway.url}/${hash}`);
        await expect.poll(() => phone.locator('main h1').count()).toBe(1);
        if (name === 'approvals') {
          await phone.getByLabel('show answered ones').check();
          await expect.poll(() => phone.getByTestId('approval').count()).toBe(2);
        }
        await phone.screenshot({ path: join(SHOTS, `phone-${name}.png`), fullPage: true });
        const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
        expect({ page: name, widths }).toEqual({ page: name, widths: [widths[1], widths[1]] });
      }
    } finally {
      await phone.close();
    }
  });
});
