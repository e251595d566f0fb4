/**
 * The SDK's request handler with what the A2A front adds on every binding (JSON-RPC, HTTP+JSON, v0.3):
 * a retried first message of a task (same messageId, no task id yet) is answered with the task it made
 * before instead of starting a second task and run; messages without parts or a role, and negative
 * history lengths, are refused as invalid parameters; a push config created without an id gets one and
 * the answer carries it; ids longer than the store keeps are refused. A blocking SendMessage of a new task goes past the
 * SDK's ResultManager (see `GatewayAgentExecutor.answerBlocking`); one that cannot (it sets a push config) is noted, so
 * that its run does not stream chunks nobody reads.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  Role,
  Task,
  type AgentCard,
  TaskState,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type SendMessageRequest,
  type StreamResponse,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import {
  DefaultRequestHandler,
  type ExecutionEventBusManager,
  type PushNotificationSender,
  type PushNotificationStore,
  type ServerCallContext,
  type TaskStore,
} from '@a2a-js/sdk/server';
import { errorMessage } from '../core/errors.js';
import type { A2ATaskStore } from '../ports/index.js';
import type { GatewayAgentExecutor } from './executor.js';
import type { PeerUser } from './peers.js';
import { ownerOf, type StoreFailureListener, storeCall } from './task-store.js';

/** States in which the SDK keeps a task's event bus for the messages that follow. */
const INTERRUPTED = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

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

export interface HandlerParts {
  tasks: A2ATaskStore;
  agentId: string;
  card: AgentCard;
  taskStore: TaskStore;
  executor: GatewayAgentExecutor;
  buses: ExecutionEventBusManager;
  pushStore: PushNotificationStore;
  push: PushNotificationSender;
  /** Where blocking SendMessage calls are noted for the executor (their runs need not stream). */
  blockingCalls: WeakSet<ServerCallContext>;
  /** Hears what failed after the answer was settled (the A2A server logs it). */
  onError: (error: unknown) => void;
  /** Hears a request the store did not take (the A2A server logs it). */
  onStoreFailure?: StoreFailureListener;
}

export class GatewayRequestHandler extends DefaultRequestHandler {
  private readonly tasks: A2ATaskStore;
  private readonly agentId: string;
  private readonly executor: GatewayAgentExecutor;
  private readonly buses: ExecutionEventBusManager;
  private readonly push: PushNotificationSender;
  private readonly pushStore: PushNotificationStore;
  private readonly blockingCalls: WeakSet<ServerCallContext>;
  private readonly onError: (error: unknown) => void;
  private readonly onStoreFailure: StoreFailureListener;

  constructor(parts: HandlerParts) {
    super(parts.card, parts.taskStore, parts.executor, parts.buses, parts.pushStore, parts.push);
    ({
      tasks: this.tasks,
      agentId: this.agentId,
      executor: this.executor,
      buses: this.buses,
      push: this.push,
      pushStore: this.pushStore,
      blockingCalls: this.blockingCalls,
      onError: this.onError,
    } = parts);
    this.onStoreFailure = parts.onStoreFailure ?? (() => {});
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    checkMessage(params);
    const task = await this.retried(params, context);
    if (task) return task;
    if (params.configuration?.returnImmediately !== true) {
      if (!params.message!.taskId && !params.configuration?.taskPushNotificationConfig) return this.blocking(params, context);
      this.blockingCalls.add(context);
    }
    return super.sendMessage(params, context);
  }

  /**
   * A blocking SendMessage that starts a task. Its id, and its context's when the client names none, are made from the
   * agent, the peer and the messageId: a client that sends the message again after a crash (the input accepted, the
   * task not yet written) reaches the same task, session and input, and the input runs once.
   */
  private async blocking(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const message = params.message!;
    const owner = ownerOf(context);
    const taskId = firstMessageId('task', this.agentId, owner, message.messageId);
    const contextId = message.contextId || firstMessageId('context', this.agentId, owner, message.messageId);
    const bus = this.buses.createOrGetByTaskId(taskId, context);
    let task: Task | undefined;
    try {
      // Its writes fail as the SDK's task store's do: in the gateway's words, never the database's.
      task = await storeCall(
        () =>
          this.executor.answerBlocking(
            { ...message, taskId, contextId },
            { taskId, contextId, owner, peer: (context.user as PeerUser | undefined)?.peer, checkContext: Boolean(message.contextId) },
            bus,
          ),
        this.onStoreFailure,
      );
    } catch (error) {
      // Subscribers that came meanwhile are not left waiting for an end that will not come.
      bus.finished();
      throw error;
    } finally {
      if (!task?.status || !INTERRUPTED.has(task.status.state)) this.buses.cleanupByTaskId(taskId, context);
    }
    // A push config created for the task while it ran (its id is in ListTasks) hears how it ended.
    if (task.status)
      await this.push
        .send({ payload: { $case: 'statusUpdate', value: { taskId, contextId, status: task.status, metadata: {} } } }, context, task)
        .catch((error: unknown) => this.onError(new Error(`push notification for task ${taskId} not queued: ${errorMessage(error)}`)));
    return withHistoryLength(task, params.configuration?.historyLength);
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

  /**
   * A v0.3 client reads a task's push config without naming one: its SDK gives a config created without an id the
   * task's id. Without an id, the config named after the task answers, else the task's first.
   */
  override async getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest, context: ServerCallContext) {
    if (params.id) return super.getTaskPushNotificationConfig(params, context);
    const configs = await this.pushStore.load(params.taskId, context);
    const config = configs.find((candidate) => candidate.id === params.taskId) ?? configs[0];
    return super.getTaskPushNotificationConfig(config ? { ...params, id: config.id } : params, context);
  }

  /** The task this peer's earlier copy of the same first message created, if any. */
  private async retried(params: SendMessageRequest, context: ServerCallContext): Promise<Task | undefined> {
    const message = params.message;
    if (!message || message.taskId) return undefined;
    const record = await this.tasks.findByFirstMessage(this.agentId, ownerOf(context), message.messageId);
    return record ? Task.fromJSON(record.task) : undefined;
  }
}

/** The id of a new task, or of its new context, for a first message: the same agent, peer and messageId give the same id. */
export function firstMessageId(kind: 'task' | 'context', agentId: string, owner: string, messageId: string): string {
  const hex = createHash('sha256')
    .update(JSON.stringify([kind, agentId, owner, messageId]))
    .digest('hex');
  // A UUID in form (version 8, "custom"), as clients expect of a task id.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The task with at most `historyLength` of its latest messages, as the SDK answers (none for 0, all when unset). */
function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };
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
