/** What every `switchboard` command shares: the program and its global options, the client, argument parsers and output. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { resolveConfigPath } from '../config/load.js';
import { SwitchboardError } from '../core/errors.js';
import type { RunRecord } from '../ports/index.js';
import { ControlClient, resolveClientTarget } from './client.js';
import { ago } from './format.js';

/** Exit codes: 0 done, 1 an error (or a run that failed), 124 a wait that timed out (as GNU timeout), 130 a wait stopped with Ctrl-C. */
export const EXIT_TIMEOUT = 124;
export const EXIT_INTERRUPTED = 130;

export interface GlobalOptions {
  config?: string;
  url?: string;
  json?: boolean;
}

/** This package's version (package.json sits two folders above both src/cli and dist/cli). */
export const VERSION = (
  JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string }
).version;

export const program = new Command();
program
  .name('switchboard')
  .description('A durable gateway for multi-agent collaboration')
  .version(VERSION, '-V, --version', 'print the version')
  .option('-c, --config <file>', 'config file (default: $SWITCHBOARD_CONFIG or ./switchboard.json5)')
  .option('--url <url>', 'control API URL (default: the running gateway from the data directory)')
  .option('--json', 'print JSON instead of text')
  .showHelpAfterError('(add --help for usage)')
  // --json, --config and --url work on every command, so every command's help shows them.
  .configureHelp({ showGlobalOptions: true });

export const globals = (): GlobalOptions => program.opts<GlobalOptions>();
export const configPath = () => resolveConfigPath(globals().config);
export const client = () => new ControlClient(resolveClientTarget(configPath(), globals().url));

/**
 * The running gateway's answer, or undefined when no gateway runs for this config: none has started yet (no token in
 * its data directory) or the connection was refused (the request was not sent). A token the gateway refuses, and any
 * other failure, is thrown: a gateway may be running.
 */
export async function requestIfRunning<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T | undefined> {
  let running: ControlClient;
  try {
    running = client();
  } catch (error) {
    if (SwitchboardError.isInstance(error) && error.code === 'UNAUTHORIZED') return undefined;
    throw error;
  }
  try {
    return await running.request<T>(method, path, body);
  } catch (error) {
    if (SwitchboardError.isInstance(error) && error.code === 'GATEWAY_UNREACHABLE' && error.details?.maybeDelivered === false)
      return undefined;
    throw error;
  }
}

/** `--limit` values: a whole number of at least 1, or the command stops with the reason. */
export function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got "${value}"`);
  return limit;
}

export function parseSeq(value: string): number {
  const seq = Number(value);
  if (!Number.isInteger(seq) || seq < 0) throw new InvalidArgumentError(`expected an event sequence number (0 or more), got "${value}"`);
  return seq;
}

export function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new InvalidArgumentError(`expected a positive number of seconds, got "${value}"`);
  return seconds;
}

export function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidArgumentError(`expected a port from 0 to 65535, got "${value}"`);
  return port;
}

export function withQuery(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

export function print(json: unknown, human: () => string): void {
  process.stdout.write(`${globals().json ? JSON.stringify(json, null, 2) : human()}\n`);
}

export function runRow(run: RunRecord) {
  return {
    id: run.id,
    session: run.sessionKey,
    status: run.status,
    started: ago(run.startedAt),
    ms: run.endedAt ? run.endedAt - run.startedAt : null,
    calls: run.usage.modelCalls,
    text: run.finalText ?? run.errorMessage,
  };
}
