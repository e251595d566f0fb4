/** A reference A2A agent built from the SDK's own DefaultRequestHandler and InMemoryTaskStore, on 127.0.0.1. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState, type AgentCard, type Message } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  type InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type TaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const now = () => new Date().toISOString();
const text = (value: string) => ({ content: { $case: 'text' as const, value }, metadata: {}, filename: '', mediaType: 'text/plain' });

/** The reference agent: "quick" answers at once, "slow" after 1.5 s, "ask" asks back, "hold" waits for a cancel. */
export class ReferenceExecutor implements AgentExecutor {
  private readonly held = new Map<string, () => void>();
  authorizations: (string | undefined)[] = [];
  messageIds: string[] = [];
  /** Cut every response still open after 300 ms, as a proxy dropping a stream would. */
  dropStreams = false;

  async execute(context: Parameters<AgentExecutor['execute']>[0], bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    this.messageIds.push(context.userMessage.messageId);
    const said = context.userMessage.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
    const agentMessage = (value: string): Message => ({
      messageId: `${taskId}-${Date.now()}`,
      contextId,
      taskId,
      role: Role.ROLE_AGENT,
      parts: [text(value)],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    });
    if (!context.task)
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
          artifacts: [],
          history: [context.userMessage],
          metadata: {},
        }),
      );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
        metadata: {},
      }),
    );
    if (said.startsWith('ask')) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: agentMessage('which colour?'), timestamp: now() },
          metadata: {},
        }),
      );
      bus.finished();
      return;
    }
    if (said.startsWith('slow')) await new Promise((resolve) => setTimeout(resolve, 1500));
    if (said.startsWith('hold')) {
      await new Promise<void>((resolve) => this.held.set(taskId, resolve));
      return;
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: 'a', name: 'answer', description: '', parts: [text(`ref: ${said}`)], metadata: {}, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: {},
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
        metadata: {},
      }),
    );
    bus.finished();
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    this.held.get(taskId)?.();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
        metadata: {},
      }),
    );
    bus.finished();
  }
}

export async function referenceServer(
  streaming: boolean,
  executor: ReferenceExecutor,
  push?: InMemoryPushNotificationStore,
  port = 0,
  tasks: TaskStore = new InMemoryTaskStore(),
): Promise<{ server: Server; url: string }> {
  const app = express();
  const server = app.listen(port, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: streaming ? 'Reference' : 'Polled reference',
    description: 'a reference A2A agent',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming, pushNotifications: push !== undefined, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'says it back',
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const handler = push
    ? new DefaultRequestHandler(card, tasks, executor, undefined, push, new DefaultPushNotificationSender(push))
    : new DefaultRequestHandler(card, tasks, executor);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(
    '/rpc',
    (request, response, next) => {
      executor.authorizations.push(request.header('authorization'));
      if (executor.dropStreams) setTimeout(() => response.socket?.destroy(), 300).unref();
      next();
    },
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  return { server, url };
}
