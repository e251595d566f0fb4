/** Tools for A2A: answering A2A callers, and calling remote A2A agents. */
import type { A2AClientService, RemoteRef } from '../a2a/client.js';
import { SwitchboardError } from '../core/errors.js';
import { asToolResult } from './session-tools.js';
import type { GatewayTool } from './types.js';

export const REQUEST_INPUT_TOOL = 'a2a_request_input';

/**
 * How an agent asks its A2A caller a question: the task becomes `input-required` with the question as
 * its status message when the run ends, and the caller's answer arrives as the next message.
 */
export const requestInputTool: GatewayTool = {
  name: REQUEST_INPUT_TOOL,
  description: 'Ask the A2A caller a question you need answered to go on; end your turn after calling it. The answer comes as the next message.',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  sessionKinds: ['a2a'],
  async execute(args) {
    if (typeof args.question !== 'string' || args.question.trim() === '') return { status: 'error', code: 'INVALID_REQUEST', error: 'question is required' };
    return { status: 'ok', note: 'the question goes to the caller when this run ends; end your turn now' };
  },
};

/** Tools to call remote A2A agents, given when a2a.remoteAgents (or a2a.client.allowUrls) is configured. */
export function createA2AClientTools(client: A2AClientService): GatewayTool[] {
  const ref = (args: Record<string, unknown>): RemoteRef => ({
    ...(typeof args.agentId === 'string' && args.agentId ? { agentId: args.agentId } : {}),
    ...(typeof args.url === 'string' && args.url ? { url: args.url } : {}),
  });
  const target = { agentId: { type: 'string', description: 'A remote agent from agents you were told of' }, url: { type: 'string' } };
  const taskId = (args: Record<string, unknown>) => {
    if (typeof args.taskId !== 'string' || args.taskId === '') throw new SwitchboardError('INVALID_REQUEST', 'taskId is required');
    return args.taskId;
  };
  return [
    {
      name: 'a2a_discover',
      description: "A remote A2A agent's card: what it does, its skills, modes and auth.",
      parameters: { type: 'object', properties: target },
      execute: (args, context) => asToolResult(() => client.discover(context.agentId, ref(args))),
    },
    {
      name: 'a2a_send',
      effects: true,
      description:
        'Send a message to a remote A2A agent and wait up to timeoutSeconds (default 60; 0 = no wait) for its task to finish. A later result arrives here as a message. Pass taskId/contextId to continue a task.',
      parameters: {
        type: 'object',
        properties: { ...target, message: { type: 'string' }, timeoutSeconds: { type: 'number' }, taskId: { type: 'string' }, contextId: { type: 'string' } },
        required: ['message'],
      },
      execute: (args, context) =>
        asToolResult(async () => {
          if (typeof args.message !== 'string' || args.message.trim() === '') throw new SwitchboardError('INVALID_REQUEST', 'message is required');
          const timeoutSeconds = args.timeoutSeconds === undefined ? 60 : Number(args.timeoutSeconds);
          if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0 || timeoutSeconds > 3600) throw new SwitchboardError('INVALID_REQUEST', 'timeoutSeconds must be a number from 0 to 3600');
          return client.send({ agentId: context.agentId, sessionKey: context.sessionKey, runId: context.runId }, ref(args), {
            message: args.message,
            timeoutSeconds,
            messageId: context.idempotencyKey,
            ...(typeof args.taskId === 'string' && args.taskId ? { taskId: args.taskId } : {}),
            ...(typeof args.contextId === 'string' && args.contextId ? { contextId: args.contextId } : {}),
            signal: context.signal,
          });
        }),
    },
    {
      name: 'a2a_get_task',
      description: 'The current state and answer of a task on a remote A2A agent.',
      parameters: { type: 'object', properties: { ...target, taskId: { type: 'string' } }, required: ['taskId'] },
      execute: (args, context) => asToolResult(() => client.getTask(context.agentId, ref(args), taskId(args))),
    },
    {
      name: 'a2a_cancel',
      effects: true,
      description: 'Cancel a task on a remote A2A agent.',
      parameters: { type: 'object', properties: { ...target, taskId: { type: 'string' } }, required: ['taskId'] },
      execute: (args, context) => asToolResult(() => client.cancel(context.agentId, ref(args), taskId(args))),
    },
  ];
}
