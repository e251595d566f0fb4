/**
 * Claude Code's team files (docs/teams.md): `<file>.lock` held while a file is rewritten (made with mkdir; a file of
 * that name counts too), inboxes as one JSON array each, and the task list's numbered files. Everything here is
 * written whole (temporary file, fsync, rename) and only under the lock, after reading what is there: nothing another
 * writer put in the file is lost.
 *
 * Anyone on the machine may write these folders, so nothing here is opened through a link: every folder below
 * `claudeDir` is a real one (checked part by part), a file is read with O_NOFOLLOW, and a name read from a file becomes
 * a path only if it is a mailbox name (the pi mailbox's rule, layout.ts).
 */
import type { CarriedHop } from '../core/hops.js';
import { lstatSync, mkdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SwitchboardError } from '../core/errors.js';
import type { Clock } from '../ports/index.js';
import { ensureRealDir, readMessageFile, realDirProblem, writeWhole } from './files.js';
import { isMailboxName } from './layout.js';

/** A lock older than this was left by a process that died holding it. */
const STALE_MS = 10_000;
/** An inbox of thousands of messages is a few MB; a file past this is refused unread. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/**
 * Why a name read from a file (an inbox entry's `from`, a member of config.json, a task's owner) cannot become a file
 * name in the team's folders; undefined when it can. The rule is the pi mailbox's, so `../x` or `a/b` is never a path.
 */
export function nameRefusal(name: unknown): string | undefined {
  if (isMailboxName(name)) return undefined;
  return `${JSON.stringify(name) ?? String(name)} is not a name Switchboard makes a path of (1-50 characters [A-Za-z0-9_-], not starting with "-")`;
}

/**
 * `base/parts...`, each part a real folder (made when missing), never a symlink or a file: a link planted in the shared
 * tree cannot redirect a read or a write. `base` is the folder the configuration names, and may itself be a link.
 */
export function realDirUnder(base: string, ...parts: string[]): string {
  const path = join(base, ...parts);
  const problem = realDirProblem(base, path);
  if (problem) throw new Error(problem);
  return path;
}

/** Whether something (a file, a folder, a link, even a dangling one) has this name. */
export function nameTaken(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

/**
 * Runs `work` holding `<path>.lock`; waits for another holder, and takes over a lock left stale. A lock's age is the
 * clock's time less the lock's mtime, so the clock must be the wall clock the filesystem stamps by.
 */
export async function withLock<T>(path: string, clock: Clock, work: () => T | Promise<T>, options: LockOptions = {}): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = clock.now() + (options.timeoutMs ?? 5000);
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        ensureRealDir(dirname(lock));
        continue;
      }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const age = lockAge(lock, clock.now());
    if (age !== undefined && age > (options.staleMs ?? STALE_MS)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (clock.now() > deadline)
      throw new SwitchboardError('GATEWAY_LOCKED', `${lock} is held by another process; tried for ${options.timeoutMs ?? 5000} ms`);
    await sleep(wait);
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockAge(lock: string, now: number): number | undefined {
  try {
    return now - lstatSync(lock).mtimeMs;
  } catch {
    return undefined;
  }
}

/** A file's text, or undefined when it does not exist; a symlink, a folder or a fifo is an error (never followed or read). */
export function readTextFile(path: string): string | undefined {
  const outcome = readMessageFile(path, MAX_FILE_BYTES);
  if (outcome.kind === 'gone') return undefined;
  if (outcome.kind === 'refused') throw new Error(`${path}: ${outcome.error}; it is left as it is`);
  return outcome.text;
}

/** A JSON file's value, or `fallback` when it does not exist. A file that does not parse is an error: it is not ours to replace. */
export function readJsonFile<T>(path: string, fallback: T): T {
  const text = readTextFile(path);
  if (text === undefined) return fallback;
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
export async function appendToInbox(path: string, clock: Clock, entry: ClaudeInboxEntry): Promise<void> {
  await withLock(path, clock, () => {
    const entries = readInbox(path);
    if (entries.some((existing) => isInboxEntry(existing) && sameEntry(existing, entry))) return;
    writeJsonFile(path, [...entries, entry]);
  });
}
