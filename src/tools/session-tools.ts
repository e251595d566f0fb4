/**
 * The session tools (seed 001 section 4.4, seed 000's universal flow): agents_list, sessions_list,
 * sessions_history, session_status, sessions_send and sessions_wait. They go through the gateway's
 * AgentMessaging, so every call is checked as the calling session. Failures are data: a denial is
 * `{status: "forbidden", layer, error}`, anything else `{status: "error", code, error}`.
 */
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import type { AgentMessaging, Requester } from '../gateway/messaging.js';
import { z } from 'zod';
import { choice, flag, number, text, textList } from './schema.js';
import { defineTool, type GatewayTool, type ToolContext } from '../gateway/tool-contract.js';

const SESSION_KINDS = ['main', 'direct', 'group', 'subagent', 'a2a'] as const;
const MAX_WAIT_MS = 600_000;

function requester(context: ToolContext): Requester {
  return { sessionKey: context.sessionKey, agentId: context.agentId, runId: context.runId, ...(context.conversation ? { conversation: context.conversation } : {}) };
}

/** Runs a tool's work; failures become data the model can read. */
export async function asToolResult(work: () => Promise<unknown>): Promise<unknown> {
  try {
    return await work();
  } catch (error) {
    if (SwitchboardError.isInstance(error)) {
      const layer = error.details?.layer;
      if (layer) return { status: 'forbidden', layer, error: error.message };
      return { status: 'error', code: error.code, error: error.message };
    }
    return { status: 'error', code: 'INTERNAL', error: errorMessage(error) };
  }
}


export function createSessionTools(messaging: AgentMessaging): GatewayTool[] {
  return [
    defineTool({
      name: 'agents_list',
      description: 'Agents you may message with sessions_send.',
      parameters: z.object({}),
      execute: (_args, context) => asToolResult(async () => ({ agents: messaging.listAgents(requester(context)) })),
    }),
    defineTool({
      name: 'sessions_list',
      description: 'Sessions you may see, newest first.',
      parameters: z.object({ agentId: text().optional(), kind: choice(SESSION_KINDS).optional(), activeMinutes: number(0, 525_600).optional(), limit: number(1, 200).optional() }),
      execute: (args, context) => asToolResult(async () => ({ sessions: await messaging.listSessions(requester(context), args) })),
    }),
    defineTool({
      name: 'sessions_history',
      description: "A session's recent messages.",
      parameters: z.object({ sessionKey: text(), limit: number(1, 200).optional(), includeTools: flag().optional() }),
      execute: (args, context) => asToolResult(() => messaging.history(requester(context), args.sessionKey, { limit: args.limit, includeTools: args.includeTools === true })),
    }),
    defineTool({
      name: 'session_status',
      description: "A session's state, queue and last run.",
      parameters: z.object({ sessionKey: text() }),
      execute: (args, context) => asToolResult(() => messaging.status(requester(context), args.sessionKey)),
    }),
    defineTool({
      name: 'sessions_send',
      effects: true,
      description:
        'Message a session (by sessionKey, or label, or agentId = its main session) and wait up to timeoutSeconds (default 30; 0 = no wait) for the reply. A late reply arrives as a message here. Same idempotencyKey = sent once.',
      parameters: z.object({
        sessionKey: text().optional(),
        label: text().optional(),
        agentId: text().optional(),
        message: text(),
        timeoutSeconds: number(0, 3600).optional(),
        mode: choice(QUEUE_MODES).optional(),
        idempotencyKey: text().optional(),
      }),
      execute: (args, context) =>
        asToolResult(async () =>
          messaging.send(requester(context), {
            ...args,
            timeoutSeconds: args.timeoutSeconds ?? 30,
            idempotencyKey: args.idempotencyKey ?? context.idempotencyKey,
            call: context.call,
            signal: context.signal,
          }),
        ),
    }),
    defineTool({
      name: 'sessions_wait',
      description: 'Wait until any (default) or all of these sessions have replied to you or gone idle.',
      parameters: z.object({ sessionKeys: textList(1, 20, 'session keys'), timeoutMs: number(0, MAX_WAIT_MS), mode: choice(['any', 'all']).optional() }),
      execute: (args, context) =>
        asToolResult(async () =>
          messaging.waitSessions(requester(context), [...new Set(args.sessionKeys)], { timeoutMs: args.timeoutMs, mode: args.mode ?? 'any', signal: context.signal }),
        ),
    }),
  ];
}
