/** A2A: the server's tasks, their events and push configs, and the client's remote tasks. Times are milliseconds since the Unix epoch. */
import type { Conversation } from '../core/hops.js';
import type { NewOutboxRow } from './journal.js';

/** An A2A task as the server stores it: the protocol's Task (v1.0 JSON) plus what maps it onto a session. */
export interface A2ATaskRecord {
  id: string;
  agentId: string;
  contextId: string;
  /** The authenticated peer that created it; only it may read or change it. */
  owner: string;
  /** The v1.0 state name, e.g. TASK_STATE_WORKING. */
  state: string;
  /** The Task in the protocol's v1.0 JSON form. */
  task: unknown;
  sessionKey: string | null;
  /** The input the task's latest message became. */
  inputId: string | null;
  /** The messageId of the message that created the task: a retry of it finds this task. */
  firstMessageId: string | null;
  /** When the task's status last changed (its status timestamp). */
  statusAt: number | null;
  createdAt: number;
  updatedAt: number;
  lastActivityAt: number;
  /** The gateway whose executor works on its latest message; null before one did (or for older rows). */
  executor: string | null;
}

export interface A2ATaskEventRecord {
  seq: number;
  taskId: string;
  type: string;
  detail: unknown;
  createdAt: number;
}

export interface A2APushConfigRecord {
  taskId: string;
  configId: string;
  owner: string;
  /** The TaskPushNotificationConfig in the protocol's v1.0 JSON form. */
  config: unknown;
  /** The protocol version the client spoke when it registered it: notifications are shaped for it. */
  wireVersion: string;
}

/**
 * A task on a remote A2A agent. `waiting`: a tool call holds it; `followed`: the gateway follows it and
 * delivers its result into the session; `returned`: the tool call got the result; `delivered`: the
 * result is in the session as a message.
 */
export interface RemoteTaskRecord {
  taskId: string;
  /** The configured remote agent id, or the URL it was reached at. */
  remote: string;
  contextId: string;
  sessionKey: string;
  state: 'waiting' | 'followed' | 'returned' | 'delivered';
  /** The remote task's last known state (v1.0 name). */
  remoteState: string;
  /** The secret the remote's push notifications for this task must carry, once registered. */
  pushToken: string | null;
  /** The run whose tool call waits for (or got) the result. */
  waiterRunId: string | null;
  /** The settled result (the a2a_send answer), kept until it is surely in the session. */
  result: unknown;
  /** The messageId a2a_send created the task with (the tool-call ledger's key): a rerun finds the task by it. */
  messageId?: string | null;
  /** The hop budget: the conversation and hop the a2a_send that made the task carried (a late result stays at it). */
  conversation?: Conversation | null;
  createdAt: number;
  updatedAt: number;
}

export interface A2ATaskFilter {
  agentId?: string;
  owner?: string;
  contextId?: string;
  states?: string[];
  /** Only tasks whose status changed at or after this time. */
  statusSince?: number;
  limit?: number;
  offset?: number;
}

/**
 * A task snapshot to save; with `sessionKey`, `inputId` and `executor`, also which input its latest message became (as
 * `attachInput` records it), in the same write; with `events`, entries of its replay log (as `appendEvent` adds one),
 * in the same transaction.
 */
export type A2ATaskSave = Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner' | 'state' | 'task'> &
  Partial<Pick<A2ATaskRecord, 'firstMessageId' | 'statusAt'>> & {
    sessionKey?: string;
    inputId?: string;
    executor?: string;
    events?: readonly A2ATaskEventInput[];
  };

/** An entry for a task's replay log. */
export interface A2ATaskEventInput {
  type: string;
  detail: unknown;
}

export interface A2ATaskStore {
  /**
   * Inserts or replaces the task snapshot; a session mapping not given is left as it is. Returns the task as stored.
   * With `stateChange`, an `a2a.task` journal event saying so is written in the same transaction.
   */
  save(task: A2ATaskSave, now: number, stateChange?: { from: string | null }): Promise<A2ATaskRecord>;
  /** The task a peer created with this first message, if any. */
  findByFirstMessage(agentId: string, owner: string, messageId: string): Promise<A2ATaskRecord | undefined>;
  /** How many tasks match (limit and offset ignored). */
  count(filter: A2ATaskFilter): Promise<number>;
  /** A peer other than `owner` with tasks in this context of the agent, if any (a context belongs to one peer). */
  otherContextOwner(agentId: string, contextId: string, owner: string): Promise<string | undefined>;
  /**
   * Records which session and input the task's latest message became, and the gateway whose executor works on it
   * (creating a placeholder row if needed).
   */
  attachInput(
    task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>,
    sessionKey: string,
    inputId: string,
    executor: string,
    now: number,
  ): Promise<void>;
  get(id: string): Promise<A2ATaskRecord | undefined>;
  /** Newest activity first. */
  list(filter?: A2ATaskFilter): Promise<A2ATaskRecord[]>;
  /**
   * Writes the outbox rows of one push notification of a task (a row per config), in the task's order whoever writes
   * them: one writer at a time per task (its row held FOR UPDATE on PostgreSQL), each notification listed for delivery
   * after the task's earlier ones, and nothing but the same final state again after a final state was queued (a late
   * `working`, or a late `failed` after `completed`, from a gateway that was paused in the task is refused). Each queued notification is noted in the task's replay log
   * (`push.queued`, or `push.final` for a final state). Returns false when refused, having written nothing.
   */
  enqueuePush(taskId: string, push: { state: string | null; final: boolean }, rows: readonly NewOutboxRow[], now: number): Promise<boolean>;
  /** Push notification configs of a task (A2A): saved by id, replaced when the id repeats. */
  savePushConfig(config: A2APushConfigRecord, now: number): Promise<void>;
  listPushConfigs(taskId: string): Promise<A2APushConfigRecord[]>;
  /** Deletes one config, or all of the task's when `configId` is omitted. */
  deletePushConfig(taskId: string, configId?: string): Promise<void>;
  /** Tasks this gateway's agents gave remote A2A agents, followed until their result is delivered. */
  saveRemoteTask(task: RemoteTaskRecord, now: number): Promise<void>;
  getRemoteTask(taskId: string): Promise<RemoteTaskRecord | undefined>;
  findRemoteTaskByMessage(messageId: string): Promise<RemoteTaskRecord | undefined>;
  listRemoteTasks(filter: { states: RemoteTaskRecord['state'][]; waiterRunId?: string }): Promise<RemoteTaskRecord[]>;
  /**
   * Claims following a remote task in the background for `follower` until `until`: a compare-and-set that takes a
   * claim nobody holds, one that expired by `now`, or the follower's own (renewing it). False when another holds it.
   */
  claimFollow(taskId: string, follower: string, until: number, now: number): Promise<boolean>;
  /** Lets go of every follow claim `follower` holds (a clean stop): the other gateways take them up at once. */
  releaseFollows(follower: string): Promise<void>;
  /** The per-task replay log: messages, state changes, push delivery attempts. */
  appendEvent(taskId: string, type: string, detail: unknown, now: number): Promise<void>;
  listEvents(taskId: string): Promise<A2ATaskEventRecord[]>;
}
