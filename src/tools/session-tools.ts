/**
 * The session tools (seed 001 section 4.4, seed 000's universal flow): agents_list, sessions_list,
 * sessions_history, session_status, sessions_send and sessions_wait. They go through the gateway's
 * AgentMessaging, so every call is checked as the calling session. Failures are data: a denial is
 * `{status: "forbidden", layer, error}`, anything else `{status: "error", code, error}`.
 */
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { QUEUE_MODES, type QueueMode } from '../core/queue-mode.js';
import type { SessionKind } from '../core/session-key.js';
import type { AgentMessaging, Requester } from '../gateway/messaging.js';
import type { GatewayTool, ToolContext } from './types.js';

const SESSION_KINDS = ['main', 'direct', 'group', 'subagent', 'a2a'] as const;
const MAX_WAIT_MS = 600_000;

function requester(context: ToolContext): Requester {
  return { sessionKey: context.sessionKey, agentId: context.agentId, runId: context.runId, ...(context.conversation ? { conversation: context.conversation } : {}) };
}

/** Tool arguments are validated here, at the edge; a bad one is an INVALID_REQUEST naming the argument. */
export function optionalString(args: Record<string, unknown>, name: string): string | undefined {
  const value = args[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new SwitchboardError('INVALID_REQUEST', `${name} must be a string`);
  return value;
}

export function optionalNumber(args: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new SwitchboardError('INVALID_REQUEST', `${name} must be a number from ${min} to ${max}`);
  }
  return value;
}

export function oneOf<T extends string>(args: Record<string, unknown>, name: string, allowed: readonly T[]): T | undefined {
  const value = optionalString(args, name);
  if (value !== undefined && !allowed.includes(value as T)) throw new SwitchboardError('INVALID_REQUEST', `${name} must be one of ${allowed.join(', ')}`);
  return value as T | undefined;
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
    {
      name: 'agents_list',
      description: 'Agents you may message with sessions_send.',
      parameters: { type: 'object', properties: {} },
      execute: (_args, context) => asToolResult(async () => ({ agents: messaging.listAgents(requester(context)) })),
    },
    {
      name: 'sessions_list',
      description: 'Sessions you may see, newest first.',
      parameters: {
        type: 'object',
        properties: {
          agentId: { type: 'string' },
          kind: { type: 'string', enum: [...SESSION_KINDS] },
          activeMinutes: { type: 'number' },
          limit: { type: 'number' },
        },
      },
      execute: (args, context) =>
        asToolResult(async () => ({
          sessions: await messaging.listSessions(requester(context), {
            agentId: optionalString(args, 'agentId'),
            kind: oneOf<SessionKind>(args, 'kind', SESSION_KINDS),
            activeMinutes: optionalNumber(args, 'activeMinutes', 0, 525_600),
            limit: optionalNumber(args, 'limit', 1, 200),
          }),
        })),
    },
    {
      name: 'sessions_history',
      description: "A session's recent messages.",
      parameters: {
        type: 'object',
        properties: { sessionKey: { type: 'string' }, limit: { type: 'number' }, includeTools: { type: 'boolean' } },
        required: ['sessionKey'],
      },
      execute: (args, context) =>
        asToolResult(() =>
          messaging.history(requester(context), requiredKey(args), { limit: optionalNumber(args, 'limit', 1, 200), includeTools: args.includeTools === true }),
        ),
    },
    {
      name: 'session_status',
      description: "A session's state, queue and last run.",
      parameters: { type: 'object', properties: { sessionKey: { type: 'string' } }, required: ['sessionKey'] },
      execute: (args, context) => asToolResult(() => messaging.status(requester(context), requiredKey(args))),
    },
    {
      name: 'sessions_send',
      effects: true,
      description:
        'Message a session (by sessionKey, or label, or agentId = its main session) and wait up to timeoutSeconds (default 30; 0 = no wait) for the reply. A late reply arrives as a message here. Same idempotencyKey = sent once.',
      parameters: {
        type: 'object',
        properties: {
          sessionKey: { type: 'string' },
          label: { type: 'string' },
          agentId: { type: 'string' },
          message: { type: 'string' },
          timeoutSeconds: { type: 'number' },
          mode: { type: 'string', enum: [...QUEUE_MODES] },
          idempotencyKey: { type: 'string' },
        },
        required: ['message'],
      },
      execute: (args, context) =>
        asToolResult(async () => {
          if (typeof args.message !== 'string') throw new SwitchboardError('INVALID_REQUEST', 'message must be a string');
          return messaging.send(requester(context), {
            sessionKey: optionalString(args, 'sessionKey'),
            label: optionalString(args, 'label'),
            agentId: optionalString(args, 'agentId'),
            message: args.message,
            mode: oneOf<QueueMode>(args, 'mode', QUEUE_MODES),
            timeoutSeconds: optionalNumber(args, 'timeoutSeconds', 0, 3600) ?? 30,
            idempotencyKey: optionalString(args, 'idempotencyKey') ?? context.idempotencyKey,
            call: context.call,
            signal: context.signal,
          });
        }),
    },
    {
      name: 'sessions_wait',
      description: 'Wait until any (default) or all of these sessions have replied to you or gone idle.',
      parameters: {
        type: 'object',
        properties: {
          sessionKeys: { type: 'array', items: { type: 'string' } },
          timeoutMs: { type: 'number' },
          mode: { type: 'string', enum: ['any', 'all'] },
        },
        required: ['sessionKeys', 'timeoutMs'],
      },
      execute: (args, context) =>
        asToolResult(async () => {
          const keys = args.sessionKeys;
          if (!Array.isArray(keys) || keys.length === 0 || keys.length > 20 || !keys.every((key) => typeof key === 'string')) {
            throw new SwitchboardError('INVALID_REQUEST', 'sessionKeys must be a list of 1 to 20 session keys');
          }
          const timeoutMs = optionalNumber(args, 'timeoutMs', 0, MAX_WAIT_MS);
          if (timeoutMs === undefined) throw new SwitchboardError('INVALID_REQUEST', `timeoutMs is required (0 to ${MAX_WAIT_MS})`);
          return messaging.waitSessions(requester(context), [...new Set(keys as string[])], { timeoutMs, mode: oneOf(args, 'mode', ['any', 'all'] as const) ?? 'any', signal: context.signal });
        }),
    },
  ];
}

function requiredKey(args: Record<string, unknown>): string {
  const key = optionalString(args, 'sessionKey');
  if (!key) throw new SwitchboardError('INVALID_REQUEST', 'sessionKey is required');
  return key;
}
