/**
 * sessions_spawn and subagents (seed 002 section 2.2, seed 003): delegation with a handle, and the
 * parent's view of its children. Failures are data, as with the session tools.
 */
import { SwitchboardError } from '../core/errors.js';
import { SUBAGENT_ROLES, type SubagentRole } from '../core/subagent.js';
import type { Subagents } from '../gateway/subagents.js';
import type { SubagentRecord } from '../ports.js';
import { asToolResult, oneOf, optionalNumber, optionalString } from './session-tools.js';
import type { GatewayTool, ToolContext } from './types.js';

const MAX_WAIT_MS = 3_600_000;
const ACTIONS = ['list', 'wait', 'kill', 'steer', 'result'] as const;

function stringList(args: Record<string, unknown>, name: string): string[] | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item !== '')) throw new SwitchboardError('INVALID_REQUEST', `${name} must be a list of strings`);
  return value as string[];
}

function optionalBoolean(args: Record<string, unknown>, name: string): boolean | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new SwitchboardError('INVALID_REQUEST', `${name} must be true or false`);
  return value;
}

function target(args: Record<string, unknown>): string {
  const value = optionalString(args, 'target');
  if (!value) throw new SwitchboardError('INVALID_REQUEST', 'target is required: the childSessionKey, subagentId or label of one of your sub-agents');
  return value;
}

/** Some models pass the handle as JSON text rather than an object. */
function parseHandle(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function createSubagentTools(subagents: Subagents): GatewayTool[] {
  return [
    {
      name: 'sessions_spawn',
      effects: true,
      description:
        'Delegate a task to a new sub-agent session. Returns at once with a handle; the result arrives here as a message when the sub-agent finishes. role "orchestrator" lets it spawn its own.',
      parameters: {
        type: 'object',
        properties: {
          task: { type: 'string' },
          context: { type: 'string' },
          agentId: { type: 'string' },
          label: { type: 'string' },
          model: { type: 'string' },
          role: { type: 'string', enum: [...SUBAGENT_ROLES] },
          tools: { type: 'array', items: { type: 'string' } },
          timeoutSeconds: { type: 'number' },
          correlationId: { type: 'string' },
          cwd: { type: 'string' },
          worktree: { type: 'boolean' },
        },
        required: ['task'],
      },
      execute: (args, context) =>
        asToolResult(() =>
          subagents.spawn(
            { sessionKey: context.sessionKey, agentId: context.agentId, idempotencyKey: context.idempotencyKey, call: context.call },
            {
              task: args.task,
              context: optionalString(args, 'context'),
              agentId: optionalString(args, 'agentId'),
              label: optionalString(args, 'label'),
              model: optionalString(args, 'model'),
              role: oneOf<SubagentRole>(args, 'role', SUBAGENT_ROLES),
              tools: stringList(args, 'tools'),
              timeoutSeconds: optionalNumber(args, 'timeoutSeconds', 1, 86_400),
              correlationId: optionalString(args, 'correlationId'),
              cwd: optionalString(args, 'cwd'),
              worktree: optionalBoolean(args, 'worktree'),
            },
          ),
        ),
    },
    {
      name: 'subagents',
      effects: true,
      description:
        'Your sub-agents. action list; wait (targets or all running, mode all|any, timeoutMs, maxFailures); kill (target, with its descendants); steer (target, message); result (handle).',
      parameters: {
        type: 'object',
        properties: {
          action: { type: 'string', enum: [...ACTIONS] },
          target: { type: 'string' },
          targets: { type: 'array', items: { type: 'string' } },
          mode: { type: 'string', enum: ['all', 'any'] },
          timeoutMs: { type: 'number' },
          maxFailures: { type: 'number' },
          message: { type: 'string' },
          handle: { type: 'object' },
          recursive: { type: 'boolean' },
        },
        required: ['action'],
      },
      execute: (args, context) => asToolResult(() => act(subagents, args, context)),
    },
  ];
}

async function act(subagents: Subagents, args: Record<string, unknown>, context: ToolContext): Promise<unknown> {
  const action = oneOf(args, 'action', ACTIONS);
  const self = context.sessionKey;
  switch (action) {
    case 'list':
      return { subagents: await subagents.list(self, { recursive: optionalBoolean(args, 'recursive') }) };
    case 'wait': {
      const timeoutMs = optionalNumber(args, 'timeoutMs', 0, MAX_WAIT_MS);
      if (timeoutMs === undefined) throw new SwitchboardError('INVALID_REQUEST', `timeoutMs is required (0 to ${MAX_WAIT_MS})`);
      const names = stringList(args, 'targets');
      let records: SubagentRecord[];
      if (names) records = await Promise.all([...new Set(names)].map((name) => subagents.find(name, self)));
      else {
        const children = (await subagents.list(self)).filter((child) => child.state === 'pending' || child.state === 'running');
        records = await Promise.all(children.map((child) => subagents.find(child.subagentId, self)));
      }
      if (records.length === 0) return { status: 'ok', children: [], succeeded: 0, running: 0, failed: [], note: 'you have no sub-agents running' };
      return subagents.wait(records, {
        mode: oneOf(args, 'mode', ['all', 'any'] as const) ?? 'all',
        timeoutMs,
        maxFailures: optionalNumber(args, 'maxFailures', 0, 10_000),
        signal: context.signal,
      });
    }
    case 'kill': {
      const record = await subagents.find(target(args), self);
      return { status: 'killed', cancelled: await subagents.kill(record, `killed by ${self}`, false) };
    }
    case 'steer': {
      const record = await subagents.find(target(args), self);
      return subagents.steer(record, { sessionKey: self, agentId: context.agentId }, args.message, context.idempotencyKey);
    }
    case 'result':
      return subagents.result(typeof args.handle === 'string' ? parseHandle(args.handle) : args.handle);
    default:
      throw new SwitchboardError('INVALID_REQUEST', `action is required: one of ${ACTIONS.join(', ')}`);
  }
}
