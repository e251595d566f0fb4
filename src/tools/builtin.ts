/** Tools every agent may be given: small, side-effect free, and safe to retry. */
import { z } from 'zod';
import { defineTool } from './tool-contract.js';
import type { GatewayTool } from '../ports/tools.js';
import { WORKSPACE_TOOLS } from './workspace-tools.js';

export const timeNowTool = defineTool({
  name: 'time_now',
  parameters: z.object({}),
  async execute(_args, context) {
    const now = context.clock.now();
    return { iso: new Date(now).toISOString(), epochMs: now };
  },
});

export const BUILTIN_TOOLS: readonly GatewayTool[] = [timeNowTool, ...WORKSPACE_TOOLS];
