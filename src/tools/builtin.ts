/** Tools every agent may be given: small, side-effect free, and safe to retry. */
import { readFile, stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import type { GatewayTool } from './types.js';

const MAX_READ_BYTES = 64 * 1024;

export const timeNowTool: GatewayTool = {
  name: 'time_now',
  description: 'The current date and time (ISO 8601, UTC) and epoch milliseconds.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  async execute(_args, context) {
    const now = context.clock.now();
    return { iso: new Date(now).toISOString(), epochMs: now };
  },
};

export const workspaceReadTool: GatewayTool = {
  name: 'workspace_read',
  description: `Read a UTF-8 text file from your workspace folder (at most ${MAX_READ_BYTES} bytes). Paths are relative to the workspace.`,
  parameters: {
    type: 'object',
    properties: { path: { type: 'string', description: 'File path relative to the workspace' } },
    required: ['path'],
    additionalProperties: false,
  },
  async execute(args, context) {
    if (!context.workspace) return { error: 'this agent has no workspace (set agents.list[].workspace)' };
    const path = String(args.path ?? '');
    const target = resolve(context.workspace, path);
    const inside = relative(context.workspace, target);
    if (inside.startsWith('..') || inside.includes(`..${sep}`) || resolve(target) === resolve('/')) {
      return { error: `path "${path}" is outside the workspace` };
    }
    try {
      const info = await stat(target);
      if (!info.isFile()) return { error: `"${path}" is not a file` };
      if (info.size > MAX_READ_BYTES) return { error: `"${path}" is ${info.size} bytes; the limit is ${MAX_READ_BYTES}` };
      return { path, content: await readFile(target, 'utf8') };
    } catch {
      return { error: `"${path}" does not exist in the workspace` };
    }
  },
};

export const BUILTIN_TOOLS: readonly GatewayTool[] = [timeNowTool, workspaceReadTool];
