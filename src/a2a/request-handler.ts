/**
 * The SDK's request handler with what the A2A front adds on every binding (JSON-RPC, HTTP+JSON, v0.3):
 * a retried first message of a task (same messageId, no task id yet) is answered with the task it made
 * before instead of starting a second task and run; messages without parts or a role, and negative
 * history lengths, are refused as invalid parameters; a push config created without an id gets one and
 * the answer carries it; ids longer than the store keeps are refused. A blocking SendMessage is noted, so that its run
 * does not stream chunks nobody reads.
 */
import { randomUUID } from 'node:crypto';
import {
  Role,
  Task,
  TaskState,
  type GetTaskRequest,
  type SendMessageRequest,
  type StreamResponse,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, type ServerCallContext } from '@a2a-js/sdk/server';
import type { A2ATaskStore } from '../ports/index.js';
import { ownerOf } from './task-store.js';

const SETTLED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

const MAX_MESSAGE_ID = 256;
const MAX_CONTEXT_ID = 128;
const MAX_TASK_ID = 64;
const MAX_CONFIG_ID = 128;

export class GatewayRequestHandler extends DefaultRequestHandler {
  constructor(
    private readonly tasks: A2ATaskStore,
    private readonly agentId: string,
    /** Where blocking SendMessage calls are noted for the executor (their runs need not stream). */
    private readonly blockingCalls: WeakSet<ServerCallContext>,
    ...args: ConstructorParameters<typeof DefaultRequestHandler>
  ) {
    super(...args);
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    checkMessage(params);
    const task = await this.retried(params, context);
    if (task) return task;
    if (params.configuration?.returnImmediately !== true) this.blockingCalls.add(context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    checkMessage(params);
    const task = await this.retried(params, context);
    if (!task) return yield* super.sendMessageStream(params, context);
    if (SETTLED.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
      yield { payload: { $case: 'task', value: task } };
      return;
    }
    yield* super.resubscribe({ tenant: params.tenant, id: task.id }, context);
  }

  override async getTask(params: GetTaskRequest, context: ServerCallContext) {
    if (params.historyLength !== undefined && params.historyLength < 0)
      throw new RequestMalformedError('historyLength must be a non-negative integer');
    return super.getTask(params, context);
  }

  override async createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context: ServerCallContext) {
    if (params.id.length > MAX_CONFIG_ID)
      throw new RequestMalformedError(`the push config's id is ${params.id.length} characters; at most ${MAX_CONFIG_ID} are accepted`);
    return super.createTaskPushNotificationConfig(params.id ? params : { ...params, id: randomUUID() }, context);
  }

  /** The task this peer's earlier copy of the same first message created, if any. */
  private async retried(params: SendMessageRequest, context: ServerCallContext): Promise<Task | undefined> {
    const message = params.message;
    if (!message || message.taskId) return undefined;
    const record = await this.tasks.findByFirstMessage(this.agentId, ownerOf(context), message.messageId);
    return record ? Task.fromJSON(record.task) : undefined;
  }
}

function checkMessage(params: SendMessageRequest): void {
  const message = params.message;
  if (!message) throw new RequestMalformedError('message is required');
  if (message.parts.length === 0) throw new RequestMalformedError('message.parts must hold at least one part');
  if (message.role === Role.ROLE_UNSPECIFIED) throw new RequestMalformedError('message.role is required (ROLE_USER)');
  if (!message.messageId) throw new RequestMalformedError('message.messageId is required');
  // Ids are stored (a contextId is part of its session's key): longer ones are refused here, saying so.
  for (const [field, value, max] of [
    ['message.messageId', message.messageId, MAX_MESSAGE_ID],
    ['message.contextId', message.contextId, MAX_CONTEXT_ID],
    ['message.taskId', message.taskId, MAX_TASK_ID],
  ] as const) {
    if (value && value.length > max) throw new RequestMalformedError(`${field} is ${value.length} characters; at most ${max} are accepted`);
  }
  const pushId = params.configuration?.taskPushNotificationConfig?.id ?? '';
  if (pushId.length > MAX_CONFIG_ID)
    throw new RequestMalformedError(`the push config's id is ${pushId.length} characters; at most ${MAX_CONFIG_ID} are accepted`);
}
