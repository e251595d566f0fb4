/**
 * The web console's browser tests: a real gateway process on the demo agents (plus a slow research rule, so that a
 * sub-agent is still running when the test kills it), and Debian's Chromium driven by playwright-core.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import JSON5 from 'json5';
import { type Browser, chromium } from 'playwright-core';
import { BIN, ROOT, tempConfig } from '../helpers/process.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = join(ROOT, 'test-results', 'console');

/** The demo config, with absolute workspaces and a research task that takes a minute when it is about "slow" things. */
export function demoConfig(extra: Record<string, unknown> = {}, edit: (demo: any) => void = () => {}): { dir: string; configPath: string } {
  const demo = JSON5.parse(readFileSync(join(ROOT, 'examples/demo.json5'), 'utf8'));
  for (const agent of demo.agents.list) agent.workspace = join(ROOT, 'examples', agent.workspace);
  demo.gateway = { port: 0 };
  demo.messages = { queue: { mode: 'followup', debounceMs: 0 } };
  demo.models.providers.scripted.models.expert.rules.unshift({
    match: 'Research for a customer: slow',
    delayMs: 60_000,
    reply: 'too late',
  });
  edit(demo);
  return tempConfig(JSON.stringify({ ...demo, ...extra }, null, 2));
}

export async function launch(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** `switchboard console`: a one-time login link, as a user gets it. */
export async function loginLink(configPath: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [BIN, '--json', '--config', configPath, 'console'], { cwd: ROOT });
  return (JSON.parse(stdout) as { url: string }).url;
}
