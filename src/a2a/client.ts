/**
 * Calling remote A2A agents (the `a2a_*` tools; which remotes and how they are reached is RemoteAgents').
 * A send streams when the remote can and falls back to polling GetTask (exponential
 * backoff with jitter, 1 s up to `a2a.client.maxPollSeconds`) when the stream ends early or fails. A
 * result that comes after the caller stopped waiting is followed in the background, across restarts,
 * and delivered into the calling session through the outbox, once.
 *
 * With several gateways on one database, one follows each task at a time, under a claim in the database renewed
 * while it follows; a gateway takes up the tasks whose follower's claim lapsed (it died) and the tasks a run waited
 * for when that run was interrupted. A task whose waiting run still runs, on any gateway, is that run's.
 */
import { carried, type Conversation } from '../core/hops.js';
import { randomUUID } from 'node:crypto';
import { taskStateToJSON, type Message, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { backoffDelay } from '../kit/retry.js';
import { waitUntil } from '../kit/wait-until.js';
import { PushCallbacks } from './push-callbacks.js';
import { RemoteFollowers } from './followers.js';
import { RemoteAgents } from './remote-agents.js';
import type { HeldResult } from '../ports/runtimes.js';
import type { NewInput, OutboxRecord, RemoteTaskRecord } from '../ports/index.js';
import {
  SETTLED,
  applyStreamEvent,
  TASK_CREATION_MS,
  partsText,
  stateName,
  summarizeTask,
  textMessage,
  type A2AClientDeps,
  type RemoteRef,
  type RemoteResult,
} from './remote-task.js';

export { CALLBACK_PATH, RESULT_KIND, summarizeTask, type A2AClientDeps, type RemoteRef, type RemoteResult } from './remote-task.js';

export class A2AClientService {
  /** Remote tasks followed in the background (followers.ts). */
  private readonly followers: RemoteFollowers;
  /** Followed tasks waiting for the callback base to register their push config. */
  private stopped = false;

  private readonly remotes: RemoteAgents;
  /** Push notifications from remotes: they wake the follower of their task sooner. */
  private readonly push: PushCallbacks;

  constructor(private readonly deps: A2AClientDeps) {
    this.push = new PushCallbacks(deps);
    this.remotes = new RemoteAgents(deps.config);
    this.followers = new RemoteFollowers({
      ...deps,
      remotes: this.remotes,
      push: this.push,
      poll: (client, task, deadline, signal) => this.poll(client, task, deadline, signal),
      backoff: (attempt) => this.backoff(attempt),
      record: (task, remote, sessionKey, state) => this.record(task, remote, sessionKey, state),
    });
  }

  /** a2a_discover, a2a_get_task and a2a_cancel: plain calls to a remote agent. */
  discover(requesterAgent: string, ref: RemoteRef) {
    return this.remotes.discover(requesterAgent, ref);
  }

  getTask(requesterAgent: string, ref: RemoteRef, taskId: string): Promise<RemoteResult> {
    return this.remotes.getTask(requesterAgent, ref, taskId);
  }

  cancel(requesterAgent: string, ref: RemoteRef, taskId: string): Promise<RemoteResult> {
    return this.remotes.cancel(requesterAgent, ref, taskId);
  }

  /** The board's remote workers: see RemoteAgents.submit. */
  get boardWorkers(): Pick<RemoteAgents, 'submit' | 'poll'> {
    return this.remotes;
  }

  /** The hop budget every carrier between agents keeps (session.agentToAgent.maxHops). */
  get maxHops(): number {
    return this.deps.config.session.agentToAgent.maxHops;
  }

  /**
   * a2a_send: sends and waits up to `timeoutSeconds` for the task to settle. If it has not by then, the
   * task is followed in the background and its result arrives in `sessionKey` as a message.
   */
  async send(
    requester: { agentId: string; sessionKey: string; runId?: string },
    ref: RemoteRef,
    /** `messageId`: stable across retries (the tool-call ledger's key), so the remote can dedupe the send. */
    request: {
      message: string;
      timeoutSeconds: number;
      messageId?: string;
      contextId?: string;
      taskId?: string;
      signal?: AbortSignal;
      /** The sending run's conversation, one hop further: a Switchboard on the far side counts it (the hop budget). */
      conversation?: Conversation;
    },
  ): Promise<RemoteResult | { state: 'timeout'; taskId: string; contextId: string; note: string }> {
    const target = this.remotes.resolve(requester.agentId, ref);
    // A rerun of the same call (same ledger key): pick up the task the first attempt made, send nothing.
    const earlier = request.messageId ? await this.deps.tasks.findRemoteTaskByMessage(request.messageId) : undefined;
    if (earlier) return this.resume(earlier, requester.runId);
    const client = await this.remotes.client(target);
    const card = await client.getAgentCard();
    const message = textMessage(request.message, request.messageId ?? randomUUID(), request.contextId, request.taskId);
    if (request.conversation) message.metadata = { ...message.metadata, switchboard: carried(request.conversation) };
    const deadline = this.deps.clock.now() + request.timeoutSeconds * 1000;
    const params = {
      tenant: '',
      message,
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: !card.capabilities?.streaming },
      metadata: {},
    };
    let task: Task | undefined;
    const streamAbort = new AbortController();
    const abortStream = () => streamAbort.abort();
    request.signal?.addEventListener('abort', abortStream, { once: true });
    // Waiting for the task to exist is bounded on its own: even a send that does not wait needs its id.
    let timer = setTimeout(abortStream, Math.max(deadline - this.deps.clock.now(), TASK_CREATION_MS));
    try {
      if (card.capabilities?.streaming) {
        try {
          for await (const event of client.sendMessageStream(params, { signal: streamAbort.signal })) {
            const known = task !== undefined;
            task = await applyStreamEvent(client, task, event as { payload?: { $case: string; value: unknown } });
            if (task && !known) {
              await this.record(task, target.remote, requester.sessionKey, 'waiting', {
                waiterRunId: requester.runId ?? null,
                messageId: message.messageId,
                conversation: request.conversation ?? null,
              });
              clearTimeout(timer);
              timer = setTimeout(abortStream, Math.max(0, deadline - this.deps.clock.now()));
            }
            if (task && SETTLED.has(task.status?.state ?? 0)) break;
          }
        } catch (error) {
          if (!streamAbort.signal.aborted) this.deps.log(`a2a stream to ${target.remote} ended: ${errorMessage(error)}; polling instead`);
        }
      } else {
        const sent = await client.sendMessage(params, { signal: streamAbort.signal });
        if ('id' in sent && 'status' in sent) task = sent as Task;
        else
          return { state: 'completed', taskId: '', contextId: (sent as Message).contextId, text: partsText((sent as Message).parts).text };
      }
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', abortStream);
    }
    if (!task) throw new SwitchboardError('MODEL_PROVIDER_ERROR', `remote agent "${target.remote}" did not create a task for the message`);
    await this.record(task, target.remote, requester.sessionKey, 'waiting', {
      waiterRunId: requester.runId ?? null,
      messageId: message.messageId,
      conversation: request.conversation ?? null,
    });
    if (!SETTLED.has(task.status?.state ?? 0) && this.deps.clock.now() < deadline && !request.signal?.aborted) {
      task = await this.poll(client, task, deadline, request.signal);
    }
    if (SETTLED.has(task.status?.state ?? 0)) {
      // Kept until the waiting run commits: if it never does, the result is delivered as a message.
      const result = summarizeTask(task);
      await this.record(task, target.remote, requester.sessionKey, 'returned', { waiterRunId: requester.runId ?? null, result });
      return result;
    }
    await this.record(task, target.remote, requester.sessionKey, 'followed', { waiterRunId: null });
    this.followers.follow(await this.deps.tasks.getRemoteTask(task.id));
    return {
      state: 'timeout',
      taskId: task.id,
      contextId: task.contextId,
      note: `the remote task is still ${stateName(task.status?.state)}; its result will arrive in this session as a message`,
    };
  }

  /**
   * The same a2a_send again (a rerun after a crash): nothing is sent. The first attempt's result reaches
   * the session as a message (recovery delivers a result its run never committed, and the follower a
   * result that comes later), so the rerun is told where it is instead of getting it a second time.
   */
  private resume(
    row: RemoteTaskRecord,
    runId?: string,
  ): RemoteResult | { state: 'timeout'; taskId: string; contextId: string; note: string } {
    // The same run, resumed from its last step after a crash or a wait: the result it was handed is its own again (it is
    // in its transcript if it commits, else delivered as a message, as the first time).
    if (row.state === 'returned' && runId && row.waiterRunId === runId && row.result) return row.result as RemoteResult;
    const base = { state: 'timeout' as const, taskId: row.taskId, contextId: row.contextId };
    if (row.state === 'delivered' || row.state === 'returned') {
      return {
        ...base,
        note: 'this message was sent before (the same call, before a restart); its result is delivered to this session as a message',
      };
    }
    this.followers.follow(row);
    return {
      ...base,
      note: 'this message was sent before (the same call, before a restart) and the remote task is still being followed; its result will arrive in this session as a message',
    };
  }

  /** Polls GetTask until the task settles or the deadline passes; backoff 1 s doubling to maxPollSeconds, with jitter. */
  private async poll(client: Client, task: Task, deadline: number, signal?: AbortSignal): Promise<Task> {
    let current = task;
    let fetched = false;
    const settled = await waitUntil(
      deadline,
      async () => {
        if (fetched) {
          try {
            current = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
          } catch (error) {
            this.deps.log(`a2a poll of task ${task.id}: ${errorMessage(error)}`);
          }
        }
        fetched = true;
        return SETTLED.has(current.status?.state ?? 0) ? current : undefined;
      },
      // Remote polling backs off; a push notification for the task cuts the pause short.
      {
        clock: this.deps.clock,
        pause: (ms) => this.push.pause(task.id, ms),
        stopping: () => this.stopped,
        sleepMs: (attempt) => this.backoff(attempt),
      },
      () => false,
      signal,
    );
    return settled ?? current;
  }

  /** The pause before attempt `attempt + 1`: 1 s doubling to a2a.client.maxPollSeconds, with jitter (the outbox's backoff). */
  private backoff(attempt: number): number {
    return backoffDelay(
      attempt,
      { baseDelayMs: 1000, maxDelayMs: this.deps.config.a2a.client.maxPollSeconds * 1000 },
      (this.deps.random ?? Math.random)(),
    );
  }

  private async record(
    task: Task,
    remote: string,
    sessionKey: string,
    state: RemoteTaskRecord['state'],
    changes: Partial<Pick<RemoteTaskRecord, 'pushToken' | 'waiterRunId' | 'result' | 'messageId' | 'conversation'>> = {},
  ): Promise<void> {
    const now = this.deps.clock.now();
    const existing = await this.deps.tasks.getRemoteTask(task.id);
    await this.deps.tasks.saveRemoteTask(
      {
        taskId: task.id,
        remote,
        contextId: task.contextId,
        sessionKey,
        state,
        remoteState: taskStateToJSON(task.status?.state ?? 0),
        pushToken: existing?.pushToken ?? null,
        waiterRunId: existing?.waiterRunId ?? null,
        result: existing?.result ?? null,
        ...changes,
        createdAt: now,
        updatedAt: now,
      },
      now,
    );
  }

  /**
   * Results a2a_send returned to a waiting run (the gateway's HeldResults path settles them): in the
   * run's transcript if it commits, otherwise delivered into the session as a message.
   */
  async held(runId?: string): Promise<HeldResult[]> {
    const rows = await this.deps.tasks.listRemoteTasks({ states: ['returned'], waiterRunId: runId });
    return rows.map((row) => ({
      runId: row.waiterRunId,
      redelivery:
        row.result === null ? undefined : this.resultInput(row.remote, row.sessionKey, row.result as RemoteResult, row.conversation),
      settle: async () => void (await this.deps.tasks.saveRemoteTask({ ...row, state: 'delivered' }, this.deps.clock.now())),
    }));
  }

  /** Where remotes post push notifications for the tasks this gateway follows (set once the gateway listens). */
  setCallbackBase(url: string): void {
    this.push.setBase(url);
  }

  /** A push notification from a remote for a task we follow; true when its secret matched (PushCallbacks.receive). */
  receivePush(taskId: string, token: string | undefined): Promise<boolean> {
    return this.push.receive(taskId, token);
  }

  /**
   * The message that brings a remote task's result into the session that sent it (one key per task: given once). It
   * stays at the hop its a2a_send carried, as a sessions_send reply does, so that answering it goes one hop further.
   */
  private resultInput(
    remote: string,
    sessionKey: string,
    result: RemoteResult,
    conversation: Conversation | null | undefined,
  ): Omit<NewInput, 'id'> {
    return {
      sessionKey,
      idempotencyKey: `a2a-result:${result.taskId}`,
      mode: 'followup',
      text: `[the result of your a2a_send to ${remote}: task ${result.taskId} is ${result.state}]\n${result.text || '(no text)'}`,
      provenance: {
        kind: 'a2a',
        channel: 'a2a',
        sourceAgent: remote,
        sourceTool: 'a2a_send',
        ...(conversation ? { conversationId: conversation.id, hop: conversation.hop } : {}),
      },
    };
  }

  /** The outbox handler: the result becomes a message in the calling session, once. */
  async deliverResult(row: OutboxRecord): Promise<void> {
    const { remote, sessionKey, result } = row.payload as { remote: string; sessionKey: string; result: RemoteResult };
    const stored = await this.deps.tasks.getRemoteTask(result.taskId);
    await this.deps.deliver(this.resultInput(remote, sessionKey, result, stored?.conversation));
    if (stored) await this.deps.tasks.saveRemoteTask({ ...stored, state: 'delivered' }, this.deps.clock.now());
  }

  /**
   * Crash recovery: follows the tasks whose results are still owed (a tool that waited at a crash
   * included). Results returned to runs that never committed were settled by the gateway's recovery.
   */
  start(): Promise<void> {
    return this.followers.start();
  }

  /** After runs were taken over or interrupted: the tasks they waited for are followed now. */
  afterRecovery(): Promise<void> {
    return this.followers.takeUp();
  }

  stop(): void {
    this.stopped = true;
    this.followers.stop();
    this.push.wakeAll();
  }
}
