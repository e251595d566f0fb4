/**
 * The workspace tools (docs/tools.md): read, write, edit, list and search files inside the session's
 * workspace, or inside its sub-agent's worktree. Paths are checked after symlinks (workspace-fs.ts); writes
 * are atomic and go through the tool-call ledger, so a crashed run's retry does not write twice, and does not
 * write over a change made since.
 */
import { realpathSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { nodeHashing } from '../kit/hashing.js';
import { defineTool, unlisted } from './tool-contract.js';
import type { GatewayTool, ToolContext } from '../ports/tools.js';
import { flag, number, text } from './schema.js';
import {
  atomicWrite,
  describeFsError,
  resolveExisting,
  resolveForWrite,
  shownPath,
  workspaceRoot,
  WorkspaceRefusal,
} from './workspace-fs.js';
import { listTree, searchTree } from './workspace-walk.js';
import { unifiedDiff } from '../core/text-diff.js';

/** What one read answers at most; a longer file is read in parts (`startLine`). */
const READ_CHARS = 64 * 1024;
/** Files past this are not read, edited or searched whole. */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

const hasWorkspace = async (session: { workspace: string | undefined }) => session.workspace !== undefined;

/** Runs a file tool, turning each refusal and file-system error into a tool error the model can read. */
async function inWorkspace(context: ToolContext, path: string, work: (root: string) => Promise<unknown>): Promise<unknown> {
  try {
    return await work(await workspaceRoot(context.workspace));
  } catch (error) {
    return { status: 'error', error: describeFsError(error, path) };
  }
}

async function readText(real: string, path: string): Promise<string | undefined> {
  const info = await stat(real).catch(() => undefined);
  if (!info) return undefined;
  if (!info.isFile()) throw new WorkspaceRefusal(`"${path}" is not a file`);
  if (info.size > MAX_FILE_BYTES)
    throw new WorkspaceRefusal(`"${path}" is ${info.size} bytes; the file tools take files up to ${MAX_FILE_BYTES}`);
  return readFile(real, 'utf8');
}

/**
 * A file tool's subject for `ask` patterns: the path relative to the workspace, with `/`, as the model's `./src/a`,
 * `x/../src/a` and `/abs/ws/src/a` all name `src/a` (symlinks are resolved where the write is checked, not here).
 */
function pathSubject(args: Record<string, unknown>, context: { workspace: string | undefined }): string {
  const path = String(args.path);
  if (!context.workspace) return path;
  const inside = (root: string) => relative(root, resolve(root, path)).split(sep).join('/');
  const given = inside(context.workspace);
  if (!given.startsWith('..')) return given;
  // An absolute path through the workspace's real folder (the configured one may lead through a symlink).
  try {
    return inside(realpathSync(context.workspace));
  } catch {
    return given;
  }
}

/** What a person approving a write is shown: the path and the diff the write would make to the file as it is now. */
async function writeDetails(workspace: string | undefined, path: string, change: (before: string | undefined) => string | undefined) {
  try {
    const root = await workspaceRoot(workspace);
    const real = await resolveForWrite(root, path);
    const before = await readText(real, path);
    const after = change(before);
    if (after === undefined) return { path, note: 'the edit does not apply to the file as it is now' };
    return { path: shownPath(root, real), diff: unifiedDiff(shownPath(root, real), before, after) };
  } catch (error) {
    return { path, note: describeFsError(error, path) };
  }
}

const digest = (content: string | undefined) => (content === undefined ? 'absent' : nodeHashing.sha256(content));

interface WriteIntent {
  path: string;
  before: string;
  after: string | null;
}

/**
 * Writes `after` over `before` once. A call an earlier, crashed attempt of the run recorded is judged by the
 * file as it is now: already the intended content (done), still the content it found (write), or something
 * else (changed by someone since: not written, said so).
 */
async function writeOnce(
  context: ToolContext,
  path: string,
  before: string | undefined,
  after: string | undefined,
  write: () => Promise<unknown>,
  failure: unknown,
): Promise<unknown> {
  const intent: WriteIntent = { path, before: digest(before), after: after === undefined ? null : digest(after) };
  const earlier = await context.beginEffect?.(intent);
  if (earlier?.state === 'completed') return earlier.recorded;
  if (earlier) {
    const was = earlier.recorded as WriteIntent;
    if (was.after !== null && intent.before === was.after) return { status: 'ok', path, note: 'written by an earlier attempt of this run' };
    if (intent.before !== was.before)
      return {
        status: 'error',
        error: `"${path}" changed after an earlier attempt of this run recorded this write, so it is not written again; read it and decide`,
      };
  }
  return after === undefined ? failure : write();
}

export const readFileTool = defineTool({
  name: 'read_file',
  description: 'Read a text file in your workspace.',
  deferred: true,
  available: hasWorkspace,
  parameters: z.object({ path: text(), startLine: unlisted(number(1, 10_000_000).optional()) }),
  async execute({ path, startLine = 1 }, context) {
    return inWorkspace(context, path, async (root) => {
      const real = await resolveExisting(root, path);
      const content = await readText(real, path);
      if (content === undefined) return { status: 'error', error: describeFsError({ code: 'ENOENT' }, path) };
      const lines = content.split('\n');
      const first = startLine - 1;
      let end = first;
      let chars = 0;
      // Whole lines up to the limit; at least one, itself cut to the limit.
      while (end < lines.length && (end === first || chars + lines[end].length + 1 <= READ_CHARS)) {
        chars += lines[end].length + 1;
        end += 1;
      }
      if (first === 0 && end >= lines.length && content.length <= READ_CHARS) return { path: shownPath(root, real), content };
      const part = lines.slice(first, end).join('\n').slice(0, READ_CHARS);
      return {
        path: shownPath(root, real),
        content: part,
        lines: `${startLine}-${end} of ${lines.length}`,
        ...(end < lines.length ? { next: `read_file with startLine: ${end + 1} for the rest` } : {}),
      };
    });
  },
});

export const writeFileTool = defineTool({
  name: 'write_file',
  description: 'Create or replace a file in your workspace.',
  effects: true,
  deferred: true,
  available: hasWorkspace,
  parameters: z.object({ path: text(), content: text() }),
  approval: {
    subject: pathSubject,
    details: (args, context) => writeDetails(context.workspace, String(args.path), () => String(args.content)),
    editable: true,
  },
  async execute({ path, content }, context) {
    return inWorkspace(context, path, async (root) => {
      const real = await resolveForWrite(root, path);
      const refused = await context.writeRefusal?.(real);
      if (refused) return { status: 'error', error: refused };
      const before = await readText(real, path);
      const shown = shownPath(root, real);
      return writeOnce(
        context,
        shown,
        before,
        content,
        async () => ({ status: 'ok', path: shown, bytes: await atomicWrite(real, content) }),
        undefined,
      );
    });
  },
});

export const editFileTool = defineTool({
  name: 'edit_file',
  description: 'Replace exact text in a file in your workspace; it must match once unless all is true.',
  effects: true,
  deferred: true,
  available: hasWorkspace,
  parameters: z.object({ path: text(), old: text(), new: text(), all: unlisted(flag().optional()) }),
  approval: {
    subject: pathSubject,
    details: (args, context) =>
      writeDetails(context.workspace, String(args.path), (before) =>
        before === undefined
          ? undefined
          : applyEdit(before, String(args.old), String(args.new), args.all === true, String(args.path)).after,
      ),
    editable: true,
  },
  async execute(args, context) {
    return inWorkspace(context, args.path, async (root) => {
      const real = await resolveExisting(root, args.path);
      const refused = await context.writeRefusal?.(real);
      if (refused) return { status: 'error', error: refused };
      const shown = shownPath(root, real);
      const before = await readText(real, args.path);
      if (before === undefined) return { status: 'error', error: describeFsError({ code: 'ENOENT' }, args.path) };
      const edit = applyEdit(before, args.old, args.new, args.all === true, shown);
      return writeOnce(
        context,
        shown,
        before,
        edit.after,
        async () => ({ status: 'ok', path: shown, replaced: edit.count, bytes: await atomicWrite(real, edit.after!) }),
        { status: 'error', error: edit.error },
      );
    });
  },
});

/** The edit, or why it cannot be made: no match, or several where one was meant. */
export function applyEdit(
  content: string,
  old: string,
  replacement: string,
  all: boolean,
  path: string,
): { after?: string; count: number; error?: string } {
  if (old === replacement) return { count: 0, error: 'old and new are the same text; nothing to change' };
  const count = content.split(old).length - 1;
  if (count === 0) return { count, error: `the text to replace was not found in "${path}"; read the file and copy the text exactly` };
  if (count > 1 && !all)
    return {
      count,
      error: `the text to replace appears ${count} times in "${path}"; include more of the surrounding text so it matches once, or pass all: true`,
    };
  return { after: content.split(old).join(replacement), count };
}

export const listFilesTool = defineTool({
  name: 'list_files',
  description: 'List a folder in your workspace (folders end with /).',
  deferred: true,
  available: hasWorkspace,
  parameters: z.object({ path: text().optional(), recursive: unlisted(flag().optional()) }),
  async execute({ path = '.', recursive = false }, context) {
    return inWorkspace(context, path, async (root) => {
      const real = await resolveExisting(root, path);
      const listed = await listTree(root, real, recursive);
      return { path: shownPath(root, real), ...listed, ...(listed.truncated ? { note: 'list a folder below this one for the rest' } : {}) };
    });
  },
});

export const searchFilesTool = defineTool({
  name: 'search_files',
  description: 'Search the files in your workspace for a regular expression.',
  deferred: true,
  available: hasWorkspace,
  parameters: z.object({ pattern: text(), path: text().optional(), maxResults: unlisted(number(1, 500).optional()) }),
  async execute({ pattern, path = '.', maxResults = 50 }, context) {
    let expression: RegExp;
    try {
      expression = new RegExp(pattern);
    } catch (error) {
      return { status: 'error', error: `pattern is not a valid regular expression: ${(error as Error).message}` };
    }
    return inWorkspace(context, path, async (root) => {
      const real = await resolveExisting(root, path);
      return searchTree(root, real, expression, maxResults, MAX_FILE_BYTES, context.signal);
    });
  },
});

export const WORKSPACE_TOOLS: readonly GatewayTool[] = [readFileTool, writeFileTool, editFileTool, listFilesTool, searchFilesTool];
