/**
 * Push notifications from the remotes this gateway's agents called: each followed task registers a callback with
 * its own secret (once the gateway listens), a notification with the right secret wakes the task's follower, and
 * the follower then reads the task with GetTask (the body is not trusted for state). Polling goes on regardless,
 * as the backstop.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Client } from '@a2a-js/sdk/client';
import { errorMessage } from '../core/errors.js';
import type { RemoteTaskRecord } from '../ports/index.js';
import { CALLBACK_PATH, type A2AClientDeps } from './remote-task.js';

export class PushCallbacks {
  private readonly wakers = new Map<string, () => void>();
  /** Tasks resumed before the gateway listened: registered once it does. */
  private readonly awaitingBase = new Map<string, { client: Client; row: RemoteTaskRecord }>();
  private base?: string;

  constructor(private readonly deps: Pick<A2AClientDeps, 'tasks' | 'clock' | 'log'>) {}

  setBase(url: string): void {
    this.base = url.replace(/\/$/, '');
    for (const [taskId, { client, row }] of this.awaitingBase) {
      this.awaitingBase.delete(taskId);
      void this.register(client, row);
    }
  }

  /** Accepted only with the task's own secret; it wakes the task's follower. */
  async receive(taskId: string, token: string | undefined): Promise<boolean> {
    const row = await this.deps.tasks.getRemoteTask(taskId);
    if (
      !row?.pushToken ||
      token === undefined ||
      row.pushToken.length !== token.length ||
      !timingSafeEqual(Buffer.from(row.pushToken), Buffer.from(token))
    ) {
      return false;
    }
    this.wakers.get(taskId)?.();
    return true;
  }

  /** Asks the remote to push this task's updates to us, when it can. */
  async register(client: Client, row: RemoteTaskRecord): Promise<void> {
    if (!this.base) {
      this.awaitingBase.set(row.taskId, { client, row });
      return;
    }
    if (!(await client.getAgentCard()).capabilities?.pushNotifications) return;
    const token = row.pushToken ?? randomBytes(24).toString('hex');
    if (!row.pushToken) await this.deps.tasks.saveRemoteTask({ ...row, pushToken: token }, this.deps.clock.now());
    try {
      await client.createTaskPushNotificationConfig({
        tenant: '',
        id: `switchboard-${row.taskId}`,
        taskId: row.taskId,
        url: `${this.base}${CALLBACK_PATH}/${encodeURIComponent(row.taskId)}`,
        token,
        authentication: undefined,
      });
    } catch (error) {
      this.deps.log(`a2a: remote ${row.remote} refused a push config for task ${row.taskId} (${errorMessage(error)}); polling instead`);
    }
  }

  /** The task is no longer followed. */
  forget(taskId: string): void {
    this.awaitingBase.delete(taskId);
  }

  /** Waits `ms`, or less when a push notification for the task arrives or the client stops. */
  pause(taskId: string, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const wakers = this.wakers;
      function done() {
        clearTimeout(timer);
        if (wakers.get(taskId) === done) wakers.delete(taskId);
        resolve();
      }
      wakers.set(taskId, done);
    });
  }

  wakeAll(): void {
    for (const wake of this.wakers.values()) wake();
  }
}
