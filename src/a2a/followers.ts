/**
 * Remote tasks followed in the background (a2a_send's result that came after the caller stopped waiting, or a task a
 * crashed or taken-over run waited for), across restarts and across the gateways on one database: one gateway follows
 * each task at a time, under a claim in the store renewed while it follows; a gateway takes up the tasks whose
 * follower's claim lapsed (it died) every few seconds and after a recovery. A task whose waiting run still runs, on
 * any gateway, is that run's. The result goes to the outbox once (its key is the task's).
 */
import { randomUUID } from 'node:crypto';
import type { Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { errorMessage } from '../core/errors.js';
import type { NewOutboxRow, RemoteTaskRecord } from '../ports/index.js';
import type { PushCallbacks } from './push-callbacks.js';
import type { RemoteAgents } from './remote-agents.js';
import { RESULT_KIND, SETTLED, stateName, summarizeTask, type A2AClientDeps, type RemoteResult } from './remote-task.js';

/** How often a gateway looks for remote tasks nobody follows (their follower's claim lapsed). */
const TAKE_UP_MS = 5_000;

export interface FollowersDeps extends A2AClientDeps {
  remotes: RemoteAgents;
  push: PushCallbacks;
  /** Polls GetTask until the task settles or the deadline passes (A2AClientService's poll). */
  poll: (client: Client, task: Task, deadline: number, signal?: AbortSignal) => Promise<Task>;
  backoff: (attempt: number) => number;
  record: (task: Task, remote: string, sessionKey: string, state: RemoteTaskRecord['state']) => Promise<void>;
}

/** The outbox row that brings a remote task's result into the session that sent it (one key per task: given once). */
export function resultRow(remote: string, sessionKey: string, result: RemoteResult): NewOutboxRow {
  return {
    id: randomUUID(),
    kind: RESULT_KIND,
    target: sessionKey,
    payload: { remote, sessionKey, result },
    idempotencyKey: `a2a-result:${result.taskId}`,
  };
}

export class RemoteFollowers {
  private readonly followers = new Map<string, AbortController>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly deps: FollowersDeps) {}

  private get follower(): string {
    return this.deps.gatewayId ?? 'gateway';
  }

  /** How long a follow claim holds without renewal: a lease's lifetime. */
  private get claimMs(): number {
    return this.deps.config.lanes.leaseTtlSeconds * 1000;
  }

  /** Takes up what is owed now, then every few seconds. */
  async start(): Promise<void> {
    await this.takeUp();
    this.timer = setInterval(() => void this.takeUp().catch((error) => this.deps.log(`a2a follows: ${errorMessage(error)}`)), TAKE_UP_MS);
    this.timer.unref();
  }

  /**
   * Follows every task whose result is owed and that nobody follows: a background follow, or a task whose waiting
   * run no longer runs (its tool call will never take the result). A task whose waiting run still runs, here or on
   * another gateway, is left to that run.
   */
  async takeUp(): Promise<void> {
    for (const row of await this.deps.tasks.listRemoteTasks({ states: ['waiting', 'followed'] })) {
      if (this.followers.has(row.taskId)) continue;
      if (row.state === 'waiting' && row.waiterRunId && (await this.deps.runAlive(row.waiterRunId))) continue;
      this.follow(row);
    }
  }

  /** Follows a remote task in the background until it settles, then hands its result to the outbox; once claimed. */
  follow(row: RemoteTaskRecord | undefined): void {
    if (!row || this.followers.has(row.taskId) || this.stopped) return;
    const controller = new AbortController();
    this.followers.set(row.taskId, controller);
    let renewal: NodeJS.Timeout | undefined;
    void (async () => {
      // Another gateway follows it: its claim holds, and lapses only if that gateway stops renewing it.
      if (!(await this.claim(row.taskId))) return;
      renewal = setInterval(() => {
        this.claim(row.taskId).then(
          (held) => held || controller.abort(),
          () => {},
        );
      }, this.claimMs / 3);
      await this.followClaimed(row, controller.signal);
    })()
      .catch((error) => this.deps.log(`a2a follow of task ${row.taskId}: ${errorMessage(error)}; resumed at the next start`))
      .finally(() => {
        clearInterval(renewal);
        this.followers.delete(row.taskId);
        this.deps.push.forget(row.taskId);
      });
  }

  private claim(taskId: string): Promise<boolean> {
    const now = this.deps.clock.now();
    return this.deps.tasks.claimFollow(taskId, this.follower, now + this.claimMs, now);
  }

  private async followClaimed(row: RemoteTaskRecord, signal: AbortSignal): Promise<void> {
    const { remotes, push, config, clock } = this.deps;
    const target = remotes.targetOf(row.remote);
    // Every follow has a deadline, and a failure (the remote down, a refused card) is retried with backoff.
    const deadline = row.createdAt + config.a2a.client.followTimeoutSeconds * 1000;
    let task: Task | undefined;
    for (let attempt = 0; !signal.aborted && clock.now() < deadline; attempt += 1) {
      try {
        const client = await remotes.client(target);
        if (attempt === 0 || !row.pushToken) await push.register(client, row);
        task = await client.getTask({ tenant: '', id: row.taskId, historyLength: 0 });
        task = await this.deps.poll(client, task, deadline, signal);
        break;
      } catch (error) {
        this.deps.log(`a2a follow of task ${row.taskId} on ${row.remote}: ${errorMessage(error)}; trying again`);
        await push.pause(row.taskId, Math.min(this.deps.backoff(attempt), Math.max(0, deadline - clock.now())));
      }
    }
    if (signal.aborted) return;
    if (task && SETTLED.has(task.status?.state ?? 0)) {
      await this.deps.record(task, row.remote, row.sessionKey, 'followed');
      await this.deps.enqueue(resultRow(row.remote, row.sessionKey, summarizeTask(task)));
      return;
    }
    // Past the deadline: the session is told the truth rather than left waiting for a result forever.
    await this.deps.enqueue(
      resultRow(row.remote, row.sessionKey, {
        state: task ? stateName(task.status?.state) : 'unknown',
        taskId: row.taskId,
        contextId: row.contextId,
        text: `stopped following the task after ${config.a2a.client.followTimeoutSeconds}s (a2a.client.followTimeoutSeconds) without a final result; ask for it with a2a_get_task`,
      }),
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const controller of this.followers.values()) controller.abort();
    // The others take up these tasks at once, instead of when the claims lapse.
    void this.deps.tasks.releaseFollows(this.follower).catch(() => {});
  }
}
