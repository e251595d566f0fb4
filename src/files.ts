/** Files written whole or not at all: a crash leaves the old content or the new one, never a part of it. */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, realpathSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * A new file beside `target` holding `text`, synced unless `sync` is false; its caller moves or links it into place.
 * Its name starts with a dot and ends in `.tmp`, so that no reader of `*.json` (or of `target`'s name) takes it.
 */
export function writeTemp(target: string, text: string, mode: number, sync = true): string {
  const temp = join(dirname(target), `.${basename(target)}.${randomUUID()}.tmp`);
  const fd = openSync(temp, 'wx', mode);
  try {
    writeSync(fd, text);
    if (sync) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  return temp;
}

/**
 * Replaces the file at `path` with `text` in one step. Through a symlink, the file it points to is replaced and
 * the link kept. The file keeps its permissions unless `mode` is given.
 */
export function writeFileAtomic(path: string, text: string, mode?: number): void {
  const target = existsSync(path) ? realpathSync(path) : path;
  const temp = writeTemp(target, text, mode ?? (existsSync(target) ? statSync(target).mode & 0o777 : 0o644));
  try {
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Creates the file at `path` with `text` in one step, unless it exists: then nothing is written and the answer is false. */
export function createFileAtomic(path: string, text: string, mode: number): boolean {
  const temp = writeTemp(path, text, mode);
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temp, { force: true });
  }
}
