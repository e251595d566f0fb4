/**
 * Claude Code's team files (docs/teams.md): `<file>.lock` held while a file is rewritten (made with mkdir; a file of
 * that name counts too), inboxes as one JSON array each, and the task list's numbered files. Everything here is
 * written whole (temporary file, fsync, rename) and only under the lock, after reading what is there: nothing another
 * writer put in the file is lost.
 */
import type { CarriedHop } from '../core/hops.js';
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SwitchboardError } from '../core/errors.js';
import { writeWhole } from './files.js';

/** A lock older than this was left by a process that died holding it. */
const STALE_MS = 10_000;

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

/** Runs `work` holding `<path>.lock`; waits for another holder, and takes over a lock left stale. */
export async function withLock<T>(path: string, work: () => T | Promise<T>, options: LockOptions = {}): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        mkdirSync(dirname(lock), { recursive: true });
        continue;
      }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const age = lockAge(lock);
    if (age !== undefined && age > (options.staleMs ?? STALE_MS)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new SwitchboardError('GATEWAY_LOCKED', `${lock} is held by another process; tried for ${options.timeoutMs ?? 5000} ms`);
    await sleep(wait);
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockAge(lock: string): number | undefined {
  try {
    return Date.now() - statSync(lock).mtimeMs;
  } catch {
    return undefined;
  }
}

/** A JSON file's value, or `fallback` when it does not exist. A file that does not parse is an error: it is not ours to replace. */
export function readJsonFile<T>(path: string, fallback: T): T {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw error;
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new Error(`${path} is not JSON (${(error as Error).message}); it is left as it is`);
  }
}

export function writeJsonFile(path: string, value: unknown): void {
  writeWhole(dirname(path), basename(path), `${JSON.stringify(value, null, 2)}\n`);
}

/** A message in a Claude Code inbox. */
export interface ClaudeInboxEntry {
  from: string;
  text: string;
  timestamp: string;
  read: boolean;
  color?: string;
  summary?: string;
  /** Set by a Switchboard gateway on what its agents write: the conversation and hop (the hop budget, core/hops.ts). */
  switchboard?: CarriedHop;
}

export function isInboxEntry(value: unknown): value is ClaudeInboxEntry {
  const entry = value as Partial<ClaudeInboxEntry> | null;
  return (
    !!entry &&
    typeof entry === 'object' &&
    typeof entry.from === 'string' &&
    typeof entry.text === 'string' &&
    typeof entry.timestamp === 'string'
  );
}

/** The same message: Claude Code's entries have no id, so sender, time and text say which one it is. */
export const sameEntry = (
  a: Pick<ClaudeInboxEntry, 'from' | 'timestamp' | 'text'>,
  b: Pick<ClaudeInboxEntry, 'from' | 'timestamp' | 'text'>,
) => a.from === b.from && a.timestamp === b.timestamp && a.text === b.text;

/** An inbox's array, read under its lock; an inbox that is not an array is an error (left as it is). */
export function readInbox(path: string): unknown[] {
  const value = readJsonFile<unknown>(path, []);
  if (!Array.isArray(value)) throw new Error(`${path} is not a JSON array; it is left as it is`);
  return value;
}

/** Appends an entry unless the inbox holds it already (a delivery repeated after a crash). */
export async function appendToInbox(path: string, entry: ClaudeInboxEntry): Promise<void> {
  await withLock(path, () => {
    const entries = readInbox(path);
    if (entries.some((existing) => isInboxEntry(existing) && sameEntry(existing, entry))) return;
    writeJsonFile(path, [...entries, entry]);
  });
}
