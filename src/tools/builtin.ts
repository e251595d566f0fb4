/** Tools every agent may be given: small, side-effect free, and safe to retry. */
import { readFile, realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { isInside } from '../gateway/workdir.js';
import { z } from 'zod';
import { text } from './schema.js';
import { defineTool, type GatewayTool } from '../gateway/tool-contract.js';

const MAX_READ_BYTES = 64 * 1024;

export const timeNowTool = defineTool({
  name: 'time_now',
  description: 'Current time, UTC.',
  parameters: z.object({}),
  async execute(_args, context) {
    const now = context.clock.now();
    return { iso: new Date(now).toISOString(), epochMs: now };
  },
});

export const workspaceReadTool = defineTool({
  name: 'workspace_read',
  description: 'Read a text file in your workspace.',
  // An agent without a workspace has nothing to read.
  available: async (session) => session.workspace !== undefined,
  parameters: z.object({ path: text() }),
  async execute({ path }, context) {
    if (!context.workspace) return { error: 'this agent has no workspace (set agents.list[].workspace)' };
    let root: string;
    let target: string;
    try {
      // Checked after realpath: a symlink inside the workspace must not lead out of it.
      root = await realpath(context.workspace);
      target = await realpath(resolve(root, path));
    } catch (error) {
      return { error: describeFsError(error, path) };
    }
    if (!isInside(root, target)) return { error: `path "${path}" is outside the workspace` };
    try {
      const info = await stat(target);
      if (!info.isFile()) return { error: `"${path}" is not a file` };
      if (info.size > MAX_READ_BYTES) return { error: `"${path}" is ${info.size} bytes; the limit is ${MAX_READ_BYTES}` };
      return { path, content: await readFile(target, 'utf8') };
    } catch (error) {
      return { error: describeFsError(error, path) };
    }
  },
});

function describeFsError(error: unknown, path: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return `"${path}" does not exist in the workspace`;
  if (code === 'EACCES' || code === 'EPERM') return `"${path}" cannot be read: permission denied (EACCES)`;
  if (code === 'ELOOP') return `"${path}" is a symlink loop`;
  return `"${path}" cannot be read (${code ?? 'error'})`;
}

export const BUILTIN_TOOLS: readonly GatewayTool[] = [timeNowTool, workspaceReadTool];
