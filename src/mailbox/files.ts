/**
 * The mailbox's file operations, safe against what else writes the shared directory: a file arrives whole or not at
 * all (a temporary name beside it, fsync, rename, fsync of the folder), a symlink is never followed (not at the file,
 * not at a folder below the mailbox's root), a file past the size limit is refused before it is read, and nothing
 * that is not a regular file is opened in a way that could block.
 */
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  type Stats,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import { join, relative, sep } from 'node:path';
import { writeTemp } from '../files.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Why `path` cannot be used as a folder of the mailbox, or undefined when it can: every folder from below `root` down to
 * `path` must be a real folder (one missing is made, one at a time, so that a link is never made through). `root`
 * itself is the configured folder, which may be a link. Checked before each use, not only at start: anyone who can
 * write the shared folder can put a link where a folder was.
 */
export function realDirProblem(root: string, path: string, access = constants.W_OK | constants.X_OK): string | undefined {
  const below = relative(root, path);
  if (below.startsWith('..')) return `${path} is outside the mailbox folder ${root}`;
  try {
    mkdirSync(root, { recursive: true });
  } catch (error) {
    return `${root} cannot be made (${errorCode(error)}): make it, for the gateway's user`;
  }
  let at = root;
  try {
    for (const part of below ? below.split(sep) : []) {
      at = join(at, part);
      let stat = lstatOrUndefined(at);
      if (!stat) {
        try {
          mkdirSync(at);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        stat = lstatOrUndefined(at);
      }
      if (!stat) return `${at} disappeared while it was made`;
      if (stat.isSymbolicLink())
        return `${at} is a symlink, and the mailbox opens nothing through a link: remove it (the gateway makes a real folder in its place)`;
      if (!stat.isDirectory()) return `${at} is ${kindOf(stat)}, not a folder: remove it (the gateway makes a real folder in its place)`;
    }
    accessSync(path, access);
  } catch (error) {
    return `${at} cannot be used (${errorCode(error)}): give the gateway's user access to it`;
  }
  return undefined;
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function errorCode(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ?? message;
}

/** What a directory entry is, in words. */
export function kindOf(stat: Stats): string {
  if (stat.isFile()) return 'a regular file';
  if (stat.isDirectory()) return 'a folder';
  if (stat.isSymbolicLink()) return 'a symlink';
  if (stat.isSocket()) return 'a socket';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** A folder made if missing; refused when the name is a symlink or a file (someone else's link must not redirect writes). */
export function ensureRealDir(path: string): void {
  mkdirSync(path, { recursive: true });
  const stat = lstatSync(path);
  if (!stat.isDirectory())
    throw new Error(`${path} is ${stat.isSymbolicLink() ? 'a symlink' : 'not a folder'}; the mailbox writes only into real folders`);
}

function syncDir(path: string): void {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `text` as `dir/name`, whole (every folder below `root` checked to be a real one, when it is given): readers that list `*.json` never see a part of it, and a crash leaves no file or all of
 * it. Without `sync`, the file may be lost in a crash (a rejection's reason), but never seen half-written.
 */
export function writeWhole(dir: string, name: string, text: string, sync = true, root?: string): void {
  if (root === undefined) ensureRealDir(dir);
  else {
    const problem = realDirProblem(root, dir);
    if (problem) throw new Error(problem);
  }
  // Created with O_EXCL: a symlink planted at the temporary name is refused, never followed.
  const temp = writeTemp(join(dir, name), text, 0o644, sync);
  try {
    renameSync(temp, join(dir, name));
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  if (sync) syncDir(dir);
}

/** What writeTemp (src/files.ts) names a temporary: `.<target>.<uuid>.tmp`; no one else's temporaries look like it. */
const OUR_TEMPORARY = /^\..+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/** How old a temporary of ours must be to count as left by a write that was cut short (a write takes well under a second). */
export const STALE_TEMPORARY_MS = 10 * 60_000;

/**
 * Removes from `dir` (a folder checked to be a real one) the temporaries of our writes that a kill cut short between
 * the write and the rename: regular files named as writeTemp names them, unchanged for `olderThanMs`. Anything else,
 * and a temporary being written now, is left alone. Answers the names removed.
 */
export function removeStaleTemporaries(dir: string, olderThanMs: number, now: number): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!OUR_TEMPORARY.test(name)) continue;
    try {
      const stat = lstatSync(join(dir, name));
      if (!stat.isFile() || now - stat.mtimeMs < olderThanMs) continue;
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      // Renamed or removed meanwhile (by its writer, or another gateway's sweep): not ours to remove any more.
    }
  }
  return removed;
}

export type ReadOutcome = { kind: 'text'; text: string; modifiedAt: number } | { kind: 'gone' } | { kind: 'refused'; error: string };

const SYMLINK_REFUSED = 'the file is a symlink; the mailbox reads only regular files';

/**
 * A message file's text, unless it is gone, not a regular file (a symlink, a folder, a socket, a FIFO, a device), cannot
 * be opened, or is larger than `maxBytes`. Never blocks (a FIFO or a socket is refused before it is opened, and the
 * open does not wait), and never throws for what the file is: the caller sets it aside with the reason.
 */
export function readMessageFile(path: string, maxBytes: number): ReadOutcome {
  let fd: number;
  try {
    const seen = lstatSync(path);
    if (seen.isSymbolicLink()) return { kind: 'refused', error: SYMLINK_REFUSED };
    if (!seen.isFile()) return { kind: 'refused', error: `the file is ${kindOf(seen)}; the mailbox reads only regular files` };
    fd = openSync(path, READ_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'gone' };
    if (code === 'ELOOP') return { kind: 'refused', error: SYMLINK_REFUSED };
    return {
      kind: 'refused',
      error: `the file cannot be opened (${errorCode(error)}); the mailbox reads only regular files that the gateway's user may read`,
    };
  }
  try {
    const stat = fstatSync(fd);
    // Replaced between the lstat and the open.
    if (!stat.isFile()) return { kind: 'refused', error: `the file is ${kindOf(stat)}; the mailbox reads only regular files` };
    if (stat.size > maxBytes)
      return { kind: 'refused', error: `the file is ${stat.size} bytes; the limit is ${maxBytes} (mailbox.maxFileBytes)` };
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, buffer, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return { kind: 'text', text: buffer.subarray(0, read).toString('utf8'), modifiedAt: stat.mtimeMs };
  } catch (error) {
    return { kind: 'refused', error: `the file cannot be read (${errorCode(error)})` };
  } finally {
    closeSync(fd);
  }
}

/**
 * Moves the file at `from` to `to`, the claim: `claimed`; `gone` when another reader claimed it first; `busy` when a
 * file of that name is at `to` still (being ingested, or waiting to be tried again), which a rename would replace: it
 * is claimed once that one is gone.
 */
export function claimFile(from: string, to: string): 'claimed' | 'gone' | 'busy' {
  if (existsSync(to)) return 'busy';
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
  return 'claimed';
}
