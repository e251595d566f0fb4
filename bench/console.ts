/**
 * Issue 33's benchmark: the web console in headless Chromium against a gateway process whose store holds 1,000
 * sessions (with sub-agent children) and 100,000 journal events. Two loads, each the median of five: the sessions
 * tree's first screen (its first page of rows shown), and a session page with 2,000 transcript entries (all shown).
 * A load is timed from the navigation to the rows being in the page.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { chromium } from 'playwright-core';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { startServer, stop } from './load.js';

const BIG = 'agent:support:main';

/** 1,000 sessions (a tenth of them sub-agents of another), 2,000 transcript entries in one, 100,000 events. */
async function prefill(path: string): Promise<void> {
  const store = await SqliteStore.open({ path, synchronous: 'OFF' });
  const now = Date.now();
  const agents = ['support', 'expert', 'critic'];
  for (let i = 0; i < 1000; i += 1) {
    const agentId = agents[i % 3];
    const parent = i % 10 === 9 ? `agent:${agents[(i - 1) % 3]}:direct:bench:${i - 1}` : null;
    const key = i === 0 ? BIG : parent ? `agent:${agentId}:subagent:${i}` : `agent:${agentId}:direct:bench:${i}`;
    await store.sessions.ensure(
      { key, agentId, parentKey: parent, depth: parent ? 1 : 0, label: i % 7 === 0 ? `label ${i}` : null },
      now - i * 1000,
    );
  }
  const entries = Array.from({ length: 2000 }, (_, i) =>
    i % 2 === 0
      ? {
          role: 'user' as const,
          content: `question ${i}: what are your opening hours?`,
          provenance: { kind: 'user' as const, channel: 'api' },
          inputId: null,
          runId: null,
        }
      : {
          role: 'assistant' as const,
          content: [{ type: 'text', text: `answer ${i}: the desk is staffed 08:00-18:00 UTC on weekdays.` }],
          provenance: null,
          inputId: null,
          runId: null,
        },
  );
  await store.transcript.append(BIG, entries, now);
  await store.close();
  const raw = new BetterSqlite3(path);
  const insert = raw.prepare('INSERT INTO events (type, session_key, run_id, payload, created_at) VALUES (?, ?, ?, ?, ?)');
  raw.transaction(() => {
    for (let i = 0; i < 100_000; i += 1)
      insert.run('input.stored', `agent:support:direct:bench:${i % 1000}`, null, '{"inputId":"x"}', now - 100_000 + i);
  })();
  raw.close();
}

export async function consoleBench(root: string, loads: number): Promise<{ treeMs: number[]; sessionMs: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-console-bench-'));
  await prefill(join(dir, '.switchboard', 'switchboard.db'));
  const configPath = join(dir, 'console.json5');
  const model = (id: string) => `{ id: "${id}", model: "scripted/echo" }`;
  writeFileSync(
    configPath,
    `{ agents: { list: [${['support', 'expert', 'critic'].map(model).join(', ')}] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }`,
  );
  const gateway = await startServer([join(root, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'], root);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const token = readFileSync(join(dir, '.switchboard', 'token'), 'utf8').trim();
    const login = await fetch(`${gateway.url}/login`, { method: 'POST', body: JSON.stringify({ token }) });
    const [name, value] = login.headers.get('set-cookie')!.split(';')[0].split('=');
    const context = await browser.newContext();
    await context.addCookies([{ name, value, url: gateway.url }]);
    const timed = async (hash: string, rows: string, count: number) => {
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${gateway.url}/${hash}`);
      await page
        .locator(rows)
        .nth(count - 1)
        .waitFor({ timeout: 60_000 });
      const ms = performance.now() - started;
      await page.close();
      return ms;
    };
    const treeMs: number[] = [];
    const sessionMs: number[] = [];
    // One load each first, not counted: the browser's first start of the app.
    await timed('#/sessions', '[data-testid="sessions-tree"] tbody tr', 50);
    for (let i = 0; i < loads; i += 1) {
      treeMs.push(await timed('#/sessions', '[data-testid="sessions-tree"] tbody tr', 50));
      sessionMs.push(await timed(`#/session/${encodeURIComponent(BIG)}`, '[data-testid="entry"]', 2000));
    }
    return { treeMs, sessionMs };
  } finally {
    await browser.close();
    await stop(gateway.child);
  }
}
