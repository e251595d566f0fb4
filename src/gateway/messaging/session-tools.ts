/**
 * The session tools (seed 001 section 4.4, seed 000's universal flow): agents_list, sessions_list,
 * sessions_history, session_status, sessions_send and sessions_wait. They go through the gateway's
 * AgentMessaging, so every call is checked as the calling session. Failures are data: a denial is
 * `{status: "forbidden", layer, error}`, anything else `{status: "error", code, error}`.
 */
import { QUEUE_MODES } from '../../core/queue-mode.js';
import type { AgentSendResult } from '../../ports/gateway.js';
import type { AgentMessaging, Requester } from './messaging.js';
import { z } from 'zod';
import { choice, flag, key, number, text, textList } from '../../tools/schema.js';
import { asToolResult, defineTool, unlisted } from '../../tools/tool-contract.js';
import type { GatewayTool, ToolContext } from '../../ports/tools.js';

const SESSION_KINDS = ['main', 'direct', 'group', 'subagent', 'a2a'] as const;
const MAX_WAIT_MS = 600_000;

function requester(context: ToolContext): Requester {
  return {
    sessionKey: context.sessionKey,
    agentId: context.agentId,
    runId: context.runId,
    ...(context.conversation ? { conversation: context.conversation } : {}),
  };
}

/**
 * What the model reads of a send (the control API's sendAs answers with all of it). The conversation id is the
 * gateway's bookkeeping, and a reply in hand needs no input id (it matches a later reply with its send, in
 * sessions_wait's answer). The result is sent again with every later model call of the session.
 */
export function sendAnswer(result: AgentSendResult): Record<string, unknown> {
  const { conversationId: _conversation, ...answer } = result;
  if (answer.status === 'ok' || answer.status === 'error') {
    const { inputId: _input, ...answered } = answer;
    return answered;
  }
  return answer;
}

export function createSessionTools(messaging: AgentMessaging): GatewayTool[] {
  return [
    defineTool({
      name: 'agents_list',
      available: (session) => messaging.canSendAnywhere(session),
      parameters: z.object({}),
      execute: (_args, context) => asToolResult(async () => ({ agents: messaging.listAgents(requester(context)) })),
    }),
    defineTool({
      name: 'sessions_list',
      available: (session) => messaging.canSendAnywhere(session),
      parameters: z.object({
        agentId: unlisted(text().optional()),
        limit: unlisted(number(1, 200).optional()),
        kind: unlisted(choice(SESSION_KINDS).optional()),
        activeMinutes: unlisted(number(0, 525_600).optional()),
      }),
      execute: (args, context) => asToolResult(async () => ({ sessions: await messaging.listSessions(requester(context), args) })),
    }),
    defineTool({
      name: 'sessions_history',
      available: (session) => messaging.canSendAnywhere(session),
      parameters: z.object({ sessionKey: text(), limit: unlisted(number(1, 200).optional()), includeTools: unlisted(flag().optional()) }),
      execute: (args, context) =>
        asToolResult(() =>
          messaging.history(requester(context), args.sessionKey, { limit: args.limit, includeTools: args.includeTools === true }),
        ),
    }),
    defineTool({
      name: 'session_status',
      available: (session) => messaging.canSendAnywhere(session),
      parameters: z.object({ sessionKey: text() }),
      execute: (args, context) => asToolResult(() => messaging.status(requester(context), args.sessionKey)),
    }),
    defineTool({
      name: 'sessions_send',
      effects: true,
      available: (session) => messaging.canSendAnywhere(session),
      description: 'Message agentId or sessionKey; wait timeoutSeconds (default 30) for the reply, or get it later.',
      parameters: z.object({
        agentId: text().optional(),
        sessionKey: text().optional(),
        message: text(),
        label: unlisted(text().optional()),
        timeoutSeconds: number(0, 3600).optional(),
        mode: unlisted(choice(QUEUE_MODES).optional()),
        idempotencyKey: unlisted(key().optional()),
      }),
      execute: (args, context) =>
        asToolResult(async () =>
          sendAnswer(
            await messaging.send(requester(context), {
              ...args,
              timeoutSeconds: args.timeoutSeconds ?? 30,
              idempotencyKey: args.idempotencyKey ?? context.idempotencyKey,
              call: context.call,
              signal: context.signal,
            }),
          ),
        ),
    }),
    defineTool({
      name: 'sessions_wait',
      available: (session) => messaging.hasSomethingToWaitFor(session),
      description: 'Wait for one of these sessions to reply or go idle.',
      parameters: z.object({
        sessionKeys: textList(1, 20, 'session keys'),
        timeoutMs: number(0, MAX_WAIT_MS),
        mode: unlisted(choice(['any', 'all']).optional()),
      }),
      execute: (args, context) =>
        asToolResult(async () =>
          messaging.waitSessions(requester(context), [...new Set(args.sessionKeys)], {
            timeoutMs: args.timeoutMs,
            mode: args.mode ?? 'any',
            signal: context.signal,
            resumedAt: context.resumedAt,
          }),
        ),
    }),
  ];
}
