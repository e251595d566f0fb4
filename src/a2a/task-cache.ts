/**
 * The A2A front's tasks while they are active here: one write per state change a client can observe.
 *
 * The SDK saves the task on every event of an execution (the task, each status update, each streamed
 * artifact chunk) and loads it back before each, and loads the task's push configs for each. Behind
 * this cache, a save that changes the task's state is written through; one that keeps the state (a
 * streamed chunk) only updates the copy here, which loads read, and is written with the next state
 * change. A task that leaves the active states (completed, failed, input required...) is written and
 * kept only for `LINGER_MS`, for the loads of the task and its push configs that follow its last event;
 * what is read after that comes from the store. Push configs are cached with the task and replaced on
 * every change made through here.
 *
 * After a crash, the store holds each task's last state change; chunks streamed since are gone, and
 * the final answer replaces them when the recovered run finishes.
 */
import type { A2APushConfigRecord, A2ATaskFilter, A2ATaskRecord, A2ATaskStore, Clock, RemoteTaskRecord } from '../ports/index.js';

/** States in which the SDK goes on saving the task as the execution runs. */
const ACTIVE = new Set(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);

/** Enough for every task in flight; past it the oldest is written (if it must be) and dropped. */
const MAX_ENTRIES = 10_000;

/** How long a task that left the active states is still read from here. */
export const LINGER_MS = 5_000;

type TaskSave = Parameters<A2ATaskStore['save']>[0];

interface Entry {
  record: A2ATaskRecord;
  /** The state last written to the store. */
  stored: string;
  /** The last save kept the state and is not in the store yet. */
  pending?: { save: TaskSave; now: number };
  pushConfigs?: A2APushConfigRecord[];
}

export class ActiveTaskCache implements A2ATaskStore {
  private readonly entries = new Map<string, Entry>();
  /** Tasks that left the active states, in the order they left, with when they are read from the store again. */
  private readonly ended = new Map<string, Entry & { until: number }>();

  constructor(
    private readonly store: A2ATaskStore,
    private readonly clock: Clock = { now: () => Date.now() },
    /** A save changed the task's state and journaled it: the server publishes the event and logs the change. */
    private readonly onStateChange: (task: A2ATaskRecord, from: string | null) => void = () => {},
  ) {}

  async save(task: TaskSave, now: number): Promise<A2ATaskRecord> {
    const entry = this.entries.get(task.id);
    // A save that keeps the state is held here, unless it also records the task's input or adds to its replay log.
    if (entry && entry.stored === task.state && ACTIVE.has(task.state) && task.inputId === undefined && !task.events?.length) {
      entry.record = {
        ...entry.record,
        task: task.task,
        statusAt: task.statusAt ?? entry.record.statusAt,
        updatedAt: now,
        lastActivityAt: now,
      };
      entry.pending = { save: task, now };
      return entry.record;
    }
    // A state a client can see change is journaled with the write (`a2a.task`); the journal's tail is told after.
    const known = entry ?? this.recent(task.id);
    const before = known?.stored ?? null;
    const changed = before !== task.state;
    const record = await this.store.save(task, now, changed ? { from: before } : undefined);
    if (changed) this.onStateChange(record, before);
    const pushConfigs = known?.pushConfigs;
    this.entries.delete(task.id);
    this.ended.delete(task.id);
    if (ACTIVE.has(task.state)) {
      await this.remember(task.id, { record, stored: task.state, pushConfigs });
    } else {
      this.ended.set(task.id, { record, stored: task.state, pushConfigs, until: this.clock.now() + LINGER_MS });
      this.forgetEnded();
    }
    return record;
  }

  async get(id: string): Promise<A2ATaskRecord | undefined> {
    return (this.entries.get(id) ?? this.recent(id))?.record ?? this.store.get(id);
  }

  async attachInput(
    task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>,
    sessionKey: string,
    inputId: string,
    executor: string,
    now: number,
  ): Promise<void> {
    await this.store.attachInput(task, sessionKey, inputId, executor, now);
    const entry = this.entries.get(task.id) ?? this.recent(task.id);
    if (entry) entry.record = { ...entry.record, sessionKey, inputId, executor, updatedAt: now, lastActivityAt: now };
  }

  async listPushConfigs(taskId: string): Promise<A2APushConfigRecord[]> {
    const entry = this.entries.get(taskId) ?? this.recent(taskId);
    if (entry?.pushConfigs) return entry.pushConfigs;
    const configs = await this.store.listPushConfigs(taskId);
    if (entry) entry.pushConfigs = configs;
    return configs;
  }

  async savePushConfig(config: A2APushConfigRecord, now: number): Promise<void> {
    await this.store.savePushConfig(config, now);
    this.forgetPushConfigs(config.taskId);
  }

  async deletePushConfig(taskId: string, configId?: string): Promise<void> {
    await this.store.deletePushConfig(taskId, configId);
    this.forgetPushConfigs(taskId);
  }

  /** Writes the chunks not yet in the store (at shutdown). */
  async flush(): Promise<void> {
    for (const entry of this.entries.values()) await this.writePending(entry);
  }

  findByFirstMessage(agentId: string, owner: string, messageId: string): Promise<A2ATaskRecord | undefined> {
    return this.store.findByFirstMessage(agentId, owner, messageId);
  }

  count(filter: A2ATaskFilter): Promise<number> {
    return this.store.count(filter);
  }

  otherContextOwner(agentId: string, contextId: string, owner: string): Promise<string | undefined> {
    return this.store.otherContextOwner(agentId, contextId, owner);
  }

  list(filter?: A2ATaskFilter): Promise<A2ATaskRecord[]> {
    return this.store.list(filter);
  }

  saveRemoteTask(task: RemoteTaskRecord, now: number): Promise<void> {
    return this.store.saveRemoteTask(task, now);
  }

  getRemoteTask(taskId: string): Promise<RemoteTaskRecord | undefined> {
    return this.store.getRemoteTask(taskId);
  }

  findRemoteTaskByMessage(messageId: string): Promise<RemoteTaskRecord | undefined> {
    return this.store.findRemoteTaskByMessage(messageId);
  }

  listRemoteTasks(filter: { states: RemoteTaskRecord['state'][]; waiterRunId?: string }): Promise<RemoteTaskRecord[]> {
    return this.store.listRemoteTasks(filter);
  }

  claimFollow(taskId: string, follower: string, until: number, now: number): Promise<boolean> {
    return this.store.claimFollow(taskId, follower, until, now);
  }

  releaseFollows(follower: string): Promise<void> {
    return this.store.releaseFollows(follower);
  }

  appendEvent(taskId: string, type: string, detail: unknown, now: number): Promise<void> {
    return this.store.appendEvent(taskId, type, detail, now);
  }

  enqueuePush(...args: Parameters<A2ATaskStore['enqueuePush']>): Promise<boolean> {
    return this.store.enqueuePush(...args);
  }

  listEvents(taskId: string): Promise<Awaited<ReturnType<A2ATaskStore['listEvents']>>> {
    return this.store.listEvents(taskId);
  }

  private forgetPushConfigs(taskId: string): void {
    const entry = this.entries.get(taskId) ?? this.ended.get(taskId);
    if (entry) entry.pushConfigs = undefined;
  }

  /** The ended task's entry while it lingers. */
  private recent(taskId: string): Entry | undefined {
    this.forgetEnded();
    return this.ended.get(taskId);
  }

  private forgetEnded(): void {
    const now = this.clock.now();
    for (const [id, entry] of this.ended) {
      if (entry.until > now && this.ended.size <= MAX_ENTRIES) break;
      this.ended.delete(id);
    }
  }

  private async remember(taskId: string, entry: Entry): Promise<void> {
    this.entries.delete(taskId);
    this.entries.set(taskId, entry);
    if (this.entries.size <= MAX_ENTRIES) return;
    const [oldestId, oldest] = this.entries.entries().next().value!;
    this.entries.delete(oldestId);
    await this.writePending(oldest);
  }

  private async writePending(entry: Entry): Promise<void> {
    if (!entry.pending) return;
    const { save, now } = entry.pending;
    entry.pending = undefined;
    await this.store.save(save, now);
  }
}
