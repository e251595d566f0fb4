/** Tools for A2A: answering A2A callers, and calling remote A2A agents. */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { hopRefusal, onwardHop } from '../core/hops.js';
import { SwitchboardError } from '../core/errors.js';
import { defineTool } from '../tools/tool-contract.js';
import type { GatewayTool } from '../ports/tools.js';
import { asToolResult } from '../tools/tool-contract.js';
import { number, text } from '../tools/schema.js';
import type { A2AClientService, RemoteRef } from './client.js';

export const REQUEST_INPUT_TOOL = 'a2a_request_input';

/**
 * How an agent asks its A2A caller a question: the task becomes `input-required` with the question as
 * its status message when the run ends, and the caller's answer arrives as the next message.
 */
export const requestInputTool = defineTool({
  name: REQUEST_INPUT_TOOL,
  description:
    'Ask the A2A caller a question you need answered to go on; end your turn after calling it. The answer comes as the next message.',
  parameters: z.object({ question: text() }),
  sessionKinds: ['a2a'],
  async execute() {
    return { status: 'ok', note: 'the question goes to the caller when this run ends; end your turn now' };
  },
});

/** Tools to call remote A2A agents, given when a2a.remoteAgents (or a2a.client.allowUrls) is configured. */
export function createA2AClientTools(client: A2AClientService): GatewayTool[] {
  const target = { agentId: text().describe('A remote agent from agents you were told of').optional(), url: text().optional() };
  const ref = (args: { agentId?: string; url?: string }): RemoteRef => ({
    ...(args.agentId ? { agentId: args.agentId } : {}),
    ...(args.url ? { url: args.url } : {}),
  });
  const byTask = z.object({ ...target, taskId: text() });
  return [
    defineTool({
      name: 'a2a_discover',
      description: "A remote A2A agent's card: what it does, its skills, modes and auth.",
      parameters: z.object(target),
      execute: (args, context) => asToolResult(() => client.discover(context.agentId, ref(args))),
    }),
    defineTool({
      name: 'a2a_send',
      effects: true,
      description:
        'Send a message to a remote A2A agent and wait up to timeoutSeconds (default 60; 0 = no wait) for its task to finish. A later result arrives here as a message. Pass taskId/contextId to continue a task.',
      parameters: z.object({
        ...target,
        message: text(),
        timeoutSeconds: number(0, 3600).optional(),
        taskId: text().optional(),
        contextId: text().optional(),
      }),
      approval: {
        // `a2a_send:<agent>`: the remote agent by its configured id, or its URL.
        subject: (args) => String(args.agentId ?? args.url ?? ''),
        details: async (args) => ({ agent: args.agentId ?? null, url: args.url ?? null, message: args.message }),
        editable: true,
      },
      execute: (args, context) =>
        asToolResult(async () => {
          if (args.message.trim() === '') throw new SwitchboardError('INVALID_REQUEST', 'message is required');
          // The hop budget: refused here, where the model can answer instead, as well as by a receiving Switchboard.
          const conversation = onwardHop(context.conversation, () => context.runId || randomUUID());
          const loop = hopRefusal(conversation, client.maxHops, 'A2A message');
          if (loop) throw new SwitchboardError('HOP_LIMIT_EXCEEDED', loop, { hop: conversation.hop });
          return client.send({ agentId: context.agentId, sessionKey: context.sessionKey, runId: context.runId }, ref(args), {
            message: args.message,
            timeoutSeconds: args.timeoutSeconds ?? 60,
            messageId: context.idempotencyKey,
            ...(args.taskId ? { taskId: args.taskId } : {}),
            ...(args.contextId ? { contextId: args.contextId } : {}),
            signal: context.signal,
            conversation,
          });
        }),
    }),
    defineTool({
      name: 'a2a_get_task',
      description: 'The current state and answer of a task on a remote A2A agent.',
      parameters: byTask,
      execute: (args, context) => asToolResult(() => client.getTask(context.agentId, ref(args), args.taskId)),
    }),
    defineTool({
      name: 'a2a_cancel',
      effects: true,
      description: 'Cancel a task on a remote A2A agent.',
      parameters: byTask,
      execute: (args, context) => asToolResult(() => client.cancel(context.agentId, ref(args), args.taskId)),
    }),
  ];
}
