/** Real gateway processes for integration and crash tests: port 0, a temp data directory. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin/switchboard.js');

export function tempConfig(text: string): { dir: string; configPath: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-it-'));
  const configPath = join(dir, 'switchboard.json5');
  writeFileSync(configPath, text);
  return { dir, configPath };
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  token: string;
  stderr: () => string;
  request<T = unknown>(method: string, path: string, body?: unknown, token?: string | null): Promise<{ status: number; body: T }>;
}

export async function startGatewayProcess(configPath: string, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, '--json', '--config', configPath, 'gateway', '--port', '0'], {
    cwd: ROOT,
    env: { ...process.env, SWITCHBOARD_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const ready = new Promise<{ url: string }>((resolvePromise, reject) => {
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      try {
        resolvePromise(JSON.parse(stdout));
      } catch {
        // Not all of it yet.
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code} before it was ready:\n${stderr}`)));
  });
  const { url } = await ready;
  const tokenRun = spawn(process.execPath, [BIN, '--config', configPath, 'token'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let token = '';
  tokenRun.stdout!.on('data', (chunk) => (token += chunk));
  await once(tokenRun, 'exit');
  token = token.trim();
  return {
    child,
    url,
    token,
    stderr: () => stderr,
    async request(method, path, body, overrideToken) {
      const headers: Record<string, string> = {};
      if (overrideToken !== null) headers.authorization = `Bearer ${overrideToken ?? token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as never };
    },
  };
}

export async function stopGatewayProcess(gateway: GatewayProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  // A process that ended already (a kill -9 ends with a signal and no exit code) has nothing more to say.
  if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return gateway.child.exitCode;
  // 'close', not 'exit': what the process wrote last to stderr may still be on its way when it exits.
  const exited = once(gateway.child, 'close');
  gateway.child.kill(signal);
  const [code] = await exited;
  return code as number | null;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with this config to completion; a non-zero exit is a result, not an exception. */
export function cliWith(configPath: string): (...args: string[]) => Promise<CliResult> {
  const run = promisify(execFile);
  return async (...args) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [BIN, '--config', configPath, ...args], { cwd: ROOT });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as CliResult;
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };
}

/**
 * One gateway process for a whole test file: started before its tests, stopped after them (and it must
 * stop cleanly, with exit code 0). `suite.gw` is the running process.
 */
export function gatewayForSuite(configPath: string, env: NodeJS.ProcessEnv = {}): { readonly gw: GatewayProcess } {
  let running: GatewayProcess | undefined;
  beforeAll(async () => {
    running = await startGatewayProcess(configPath, env);
  });
  afterAll(async () => {
    if (running) expect(await stopGatewayProcess(running)).toBe(0);
  });
  // A failed test shows what the gateway logged (warnings and errors), so a failure in CI can be read.
  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`gateway stderr:\n${running?.stderr() || '(nothing)'}`)));
  return {
    get gw() {
      if (!running) throw new Error('the suite gateway is not running (used outside a test?)');
      return running;
    },
  };
}
