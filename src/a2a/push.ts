/**
 * A2A push notifications, through the outbox: configs are stored with the task (so they survive a
 * restart), each task event becomes one outbox row per config, and the outbox delivers it at least once
 * with retries, backoff and jitter, a timeout and the config's credentials. Targets on private,
 * loopback or link-local addresses are refused (at registration and again at delivery, after DNS)
 * unless `a2a.push.allowPrivateTargets` is set.
 */
import { randomUUID } from 'node:crypto';
import { TaskPushNotificationConfig, TaskState, taskStateToJSON, type StreamResponse, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import {
  V1PushNotificationSerializer,
  type PushNotificationSender,
  type PushNotificationStore,
  type ServerCallContext,
  type StoredPushNotificationConfig,
} from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import type { SwitchboardConfig } from '../config/schema.js';
import { errorMessage } from '../core/errors.js';
import type { Deliveries } from '../ports/gateway.js';
import { PermanentDeliveryError } from '../kit/retry.js';
import type { A2ATaskStore, Clock, NewOutboxRow, OutboxRecord } from '../ports/index.js';
import { ownerOf } from './task-store.js';
import { guardedFetch, refusedTarget } from '../net/outbound-guard.js';
import { traceHeader } from '../kit/trace-context.js';

export const PUSH_KIND = 'a2a.push';
const TOKEN_HEADER = 'X-A2A-Notification-Token';

const PUSH_SETTING = 'a2a.push.allowPrivateTargets';

/** Why this URL may not receive notifications, or undefined when it may. */
export function refusedPushTarget(url: string, allowPrivate: boolean): Promise<string | undefined> {
  return refusedTarget(url, allowPrivate, PUSH_SETTING);
}

/** Push configs in the gateway's store, scoped to the peer that registered them. */
export class GatewayPushStore implements PushNotificationStore {
  constructor(
    private readonly tasks: A2ATaskStore,
    private readonly config: SwitchboardConfig,
    private readonly clock: Clock,
  ) {}

  async save(taskId: string, context: ServerCallContext, pushConfig: TaskPushNotificationConfig): Promise<void> {
    const refused = await refusedPushTarget(pushConfig.url, this.config.a2a.push.allowPrivateTargets);
    if (refused) throw new RequestMalformedError(`push notification target refused: ${refused}`);
    const configId = pushConfig.id || randomUUID();
    await this.tasks.savePushConfig(
      {
        taskId,
        configId,
        owner: ownerOf(context),
        config: TaskPushNotificationConfig.toJSON({ ...pushConfig, id: configId, taskId }),
        wireVersion: context.requestedVersion || '0.3',
      },
      this.clock.now(),
    );
  }

  async loadWithMetadata(taskId: string, context: ServerCallContext): Promise<StoredPushNotificationConfig[]> {
    const owner = ownerOf(context);
    return (await this.tasks.listPushConfigs(taskId))
      .filter((stored) => stored.owner === owner)
      .map((stored) => ({ config: TaskPushNotificationConfig.fromJSON(stored.config), wireVersion: stored.wireVersion }));
  }

  /** Writes one notification's rows in the task's order (A2ATaskStore.enqueuePush); false when refused. */
  enqueue(taskId: string, push: { state: string | null; final: boolean }, rows: readonly NewOutboxRow[]): Promise<boolean> {
    return this.tasks.enqueuePush(taskId, push, rows, this.clock.now());
  }

  async load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    return (await this.loadWithMetadata(taskId, context)).map((stored) => stored.config);
  }

  async delete(taskId: string, context: ServerCallContext, configId?: string): Promise<void> {
    const owner = ownerOf(context);
    for (const stored of await this.tasks.listPushConfigs(taskId)) {
      if (stored.owner === owner && (configId === undefined || stored.configId === configId))
        await this.tasks.deletePushConfig(taskId, stored.configId);
    }
  }
}

interface PushPayload {
  taskId: string;
  configId: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  contentType: string;
}

function taskIdOf(event: StreamResponse): string | undefined {
  const payload = event.payload;
  if (!payload) return undefined;
  if (payload.$case === 'task') return payload.value.id;
  if (payload.$case === 'message') return payload.value.taskId || undefined;
  return payload.value.taskId;
}

const FINAL_STATES = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** The task state an event tells of (none for an artifact or a message), and whether it is a final one. */
function pushedState(event: StreamResponse): { state: string | null; final: boolean } {
  const payload = event.payload;
  const state =
    payload?.$case === 'statusUpdate' ? payload.value.status?.state : payload?.$case === 'task' ? payload.value.status?.state : undefined;
  return state === undefined ? { state: null, final: false } : { state: taskStateToJSON(state), final: FINAL_STATES.has(state) };
}

/**
 * The SDK's sender interface, writing one outbox row per config instead of posting inline. The SDK sends a task's
 * events without waiting for each other (fire and forget), so each task's sends take turns here, and the store writes
 * them in the task's order across gateways (A2ATaskStore.enqueuePush): the notifications leave in the task's order.
 */
export class OutboxPushSender implements PushNotificationSender {
  private readonly serializers = { '1.0': new V1PushNotificationSerializer(), '0.3': new V03PushNotificationSerializer() };
  /** Each task's latest send: the next one waits for it. */
  private readonly sending = new Map<string, Promise<void>>();

  constructor(
    private readonly gateway: Pick<Deliveries, 'kickDeliveries'>,
    private readonly store: GatewayPushStore,
  ) {}

  async send(event: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = taskIdOf(event);
    if (!taskId) return;
    const turn = (this.sending.get(taskId) ?? Promise.resolve()).catch(() => {}).then(() => this.write(taskId, event, context, task));
    this.sending.set(taskId, turn);
    try {
      await turn;
    } finally {
      if (this.sending.get(taskId) === turn) this.sending.delete(taskId);
    }
  }

  private async write(taskId: string, event: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const rows: NewOutboxRow[] = [];
    for (const { config, wireVersion } of await this.store.loadWithMetadata(taskId, context)) {
      const serializer = wireVersion === '0.3' ? this.serializers['0.3'] : this.serializers['1.0'];
      const { body, contentType } = serializer.serialize(event, task);
      const headers: Record<string, string> = {};
      if (config.authentication?.scheme && config.authentication.credentials)
        headers.Authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
      else if (config.token) headers[TOKEN_HEADER] = config.token;
      const payload: PushPayload = { taskId, configId: config.id, url: config.url, headers, body, contentType };
      rows.push({
        id: randomUUID(),
        kind: PUSH_KIND,
        target: config.url,
        payload,
        idempotencyKey: `push:${taskId}:${config.id}:${randomUUID()}`,
      });
    }
    // Refused only for what comes after the task's final state: a late event of a gateway that was paused in the task.
    if (rows.length > 0 && (await this.store.enqueue(taskId, pushedState(event), rows))) this.gateway.kickDeliveries();
  }
}

/**
 * The outbox handler: posts through the guard, which checks the target again (DNS may have changed), and logs the
 * attempt on the task. A refused target fails for good; any other failure is retried.
 */
export function pushDeliverer(tasks: A2ATaskStore, config: SwitchboardConfig, clock: Clock) {
  // The connection goes only to the address the guard accepted, so DNS rebinding cannot reach inside.
  const post = guardedFetch({ setting: PUSH_SETTING, allowPrivate: config.a2a.push.allowPrivateTargets });
  return async (row: OutboxRecord): Promise<void> => {
    const push = row.payload as PushPayload;
    const attempt = row.attempts + 1;
    const log = (detail: Record<string, unknown>) =>
      tasks.appendEvent(push.taskId, 'push', { url: push.url, configId: push.configId, attempt, ...detail }, clock.now());
    let status: number;
    try {
      const response = await post(push.url, {
        method: 'POST',
        // The row's key is the same on every retry of this notification: receivers dedupe by it.
        // The delivery's span (the outbox's), so the receiver's handling joins the task's trace.
        headers: { 'Content-Type': push.contentType, 'Idempotency-Key': row.idempotencyKey, ...push.headers, ...traceHeader() },
        body: push.body,
        signal: AbortSignal.timeout(config.a2a.push.timeoutMs),
        redirect: 'manual',
      });
      status = response.status;
      await response.body?.cancel();
    } catch (error) {
      // The guard's refusal, before the request or at connect time (outbound-guard.ts keeps the code on both).
      const refusedNow = (error as { code?: string }).code === 'EPRIVATEADDRESS';
      const why = errorMessage((error as { cause?: unknown }).cause ?? error);
      await log({ outcome: refusedNow ? 'refused' : 'failed', error: why });
      if (refusedNow) throw new PermanentDeliveryError(why);
      throw error;
    }
    if (status < 200 || status >= 300) {
      await log({ outcome: 'failed', status });
      throw new Error(`push to ${push.url} answered HTTP ${status}`);
    }
    await log({ outcome: 'delivered', status });
  };
}
