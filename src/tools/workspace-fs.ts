/**
 * The workspace tools' file system: every path is resolved inside one root (the session's workspace, or its
 * sub-agent's worktree), after symlinks, and every write is atomic. A refusal is a `WorkspaceRefusal` whose
 * message names the path and the root, for the model to read.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { isInside } from '../kit/paths.js';

export class WorkspaceRefusal extends Error {}

/** Why a file-system call failed, in words about the path the model gave. */
export function describeFsError(error: unknown, path: string): string {
  if (error instanceof WorkspaceRefusal) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return `"${path}" does not exist in the workspace`;
  if (code === 'EACCES' || code === 'EPERM') return `"${path}" cannot be used: permission denied (${code})`;
  if (code === 'ELOOP') return `"${path}" is a symlink loop`;
  if (code === 'EISDIR') return `"${path}" is a folder, not a file`;
  return `"${path}" cannot be used (${code ?? (error instanceof Error ? error.message : 'error')})`;
}

/** The root itself, with its symlinks resolved (a workspace may be reached through one). */
export async function workspaceRoot(workspace: string | undefined): Promise<string> {
  if (!workspace) throw new WorkspaceRefusal('this agent has no workspace (set agents.list[].workspace)');
  try {
    return await realpath(workspace);
  } catch (error) {
    throw new WorkspaceRefusal(`the workspace ${workspace} cannot be opened: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
}

function outside(path: string, root: string, real?: string): WorkspaceRefusal {
  const via = real ? ` (it leads to ${real})` : '';
  return new WorkspaceRefusal(`path "${path}" is outside the workspace ${root}${via}; give a path inside it`);
}

/** An existing file or folder, after symlinks; refused when it, or a symlink on the way, leads outside. */
export async function resolveExisting(root: string, path: string): Promise<string> {
  const given = resolve(root, path);
  if (!isInside(root, given)) throw outside(path, root);
  const real = await realpath(given);
  if (!isInside(root, real)) throw outside(path, root, real);
  return real;
}

/**
 * Where a write to `path` lands: the file itself when it exists (a symlink to a file inside is written
 * through), else a new name in the nearest existing folder, each checked after symlinks.
 */
export async function resolveForWrite(root: string, path: string): Promise<string> {
  const given = resolve(root, path);
  if (!isInside(root, given) || given === root) throw outside(path, root);
  const existing = await lstat(given).catch(() => undefined);
  if (existing) {
    const real = await realpath(given).catch(() => {
      throw new WorkspaceRefusal(`"${path}" is a symlink whose target does not exist; refusing to write through it`);
    });
    if (!isInside(root, real)) throw outside(path, root, real);
    if ((await stat(real)).isDirectory()) throw new WorkspaceRefusal(`"${path}" is a folder, not a file`);
    return real;
  }
  let folder = dirname(given);
  const missing: string[] = [basename(given)];
  while (!(await lstat(folder).catch(() => undefined))) {
    missing.unshift(basename(folder));
    folder = dirname(folder);
  }
  const realFolder = await realpath(folder);
  if (!isInside(root, realFolder)) throw outside(path, root, realFolder);
  return join(realFolder, ...missing);
}

/** The path as the model should see it: relative to the root, with `/`. */
export function shownPath(root: string, real: string): string {
  return relative(root, real).split('\\').join('/') || '.';
}

/**
 * Writes `content` to `target` so that a reader, or a crash, sees the old file or the new one whole: a
 * temporary file beside it (created exclusively, so never through a planted symlink), fsync, rename, fsync of
 * the folder. The file keeps its mode.
 */
export async function atomicWrite(target: string, content: string): Promise<number> {
  const folder = dirname(target);
  await mkdir(folder, { recursive: true });
  const mode = (await stat(target).catch(() => undefined))?.mode ?? 0o644;
  const temporary = join(folder, `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const bytes = Buffer.from(content, 'utf8');
  const handle = await open(temporary, 'wx', mode & 0o777);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  const dir = await open(folder, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return bytes.length;
}
