/**
 * Walking a workspace folder for list_files and search_files. Symlinks are never followed out of the root:
 * a link is listed as one, and searched only when it leads to a file inside. Folders every tree has and no
 * one means to search (`.git`, `node_modules`) are skipped; results are capped, and the cap is said.
 */
import { open, readdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { isInside } from '../kit/paths.js';
import { shownPath } from './workspace-fs.js';

const SKIPPED = new Set(['.git', 'node_modules']);
const MAX_ENTRIES = 1000;
/** A matching line is shown up to this many characters. */
const LINE_CHARS = 300;

export async function listTree(root: string, folder: string, recursive: boolean): Promise<{ entries: string[]; truncated: boolean }> {
  const entries: string[] = [];
  const pending = [folder];
  while (pending.length > 0) {
    const current = pending.shift()!;
    const children = (await readdir(current, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const child of children) {
      if (entries.length >= MAX_ENTRIES) return { entries, truncated: true };
      const path = join(current, child.name);
      const shown = shownPath(root, path);
      if (child.isDirectory()) {
        entries.push(`${shown}/`);
        if (recursive && !SKIPPED.has(child.name)) pending.push(path);
      } else entries.push(child.isSymbolicLink() ? `${shown}@` : shown);
    }
  }
  return { entries, truncated: false };
}

/** The files below `folder` to search, in name order, links only when they lead to a file inside. */
async function* filesUnder(root: string, folder: string, signal: AbortSignal): AsyncGenerator<string> {
  const children = (await readdir(folder, { withFileTypes: true }).catch(() => [])).sort((a, b) => a.name.localeCompare(b.name));
  for (const child of children) {
    if (signal.aborted) return;
    const path = join(folder, child.name);
    if (child.isDirectory()) {
      if (!SKIPPED.has(child.name)) yield* filesUnder(root, path, signal);
    } else if (child.isFile()) yield path;
    else if (child.isSymbolicLink()) {
      const real = await realpath(path).catch(() => undefined);
      if (real && isInside(root, real)) yield path;
    }
  }
}

/** A file's text, or undefined when it is too large or binary (a NUL byte in its first 8 KiB). */
async function textOf(path: string, maxBytes: number): Promise<string | undefined> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return undefined;
  try {
    const { size, isFile } = await handle.stat().then((info) => ({ size: info.size, isFile: info.isFile() }));
    if (!isFile || size > maxBytes) return undefined;
    const bytes = await handle.readFile();
    return bytes.subarray(0, 8192).includes(0) ? undefined : bytes.toString('utf8');
  } finally {
    await handle.close();
  }
}

export async function searchTree(
  root: string,
  start: string,
  pattern: RegExp,
  maxResults: number,
  maxFileBytes: number,
  signal: AbortSignal,
): Promise<{ matches: { path: string; line: number; text: string }[]; filesSearched: number; truncated: boolean }> {
  const matches: { path: string; line: number; text: string }[] = [];
  let filesSearched = 0;
  const files = (await textOf(start, maxFileBytes)) !== undefined ? single(start) : filesUnder(root, start, signal);
  for await (const file of files) {
    const content = await textOf(file, maxFileBytes);
    if (content === undefined) continue;
    filesSearched += 1;
    const lines = content.split('\n');
    for (let index = 0; index < lines.length; index += 1) {
      if (!pattern.test(lines[index])) continue;
      if (matches.length >= maxResults) return { matches, filesSearched, truncated: true };
      matches.push({ path: shownPath(root, file), line: index + 1, text: lines[index].slice(0, LINE_CHARS) });
    }
  }
  return { matches, filesSearched, truncated: false };
}

async function* single(path: string): AsyncGenerator<string> {
  yield path;
}
