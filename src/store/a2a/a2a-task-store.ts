/** A2A tasks, their push configs and their replay log over Kysely; the remote tasks the client follows are in a2a/remote-tasks.ts. */
import type { Kysely, Selectable } from 'kysely';
import type {
  A2APushConfigRecord,
  A2ATaskEventInput,
  A2ATaskEventRecord,
  A2ATaskSave,
  A2ATaskFilter,
  A2ATaskRecord,
  A2ATaskStore,
  NewOutboxRow,
  RemoteTaskRecord,
} from '../../ports/index.js';
import { prepared, preparedPerCount } from '../sql/prepared.js';
import { type Db, json, num, numOrNull, parse } from '../sql/rows.js';
import { appendEvent, insertOutbox } from '../sql/writes.js';
import { KyselyRemoteTasks } from './remote-tasks.js';
import type { A2APushConfigsTable, A2ATasksTable, Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

function toTask(row: Selectable<A2ATasksTable>): A2ATaskRecord {
  return {
    id: row.id,
    agentId: row.agent_id,
    contextId: row.context_id,
    owner: row.owner,
    state: row.state,
    task: parse(row.task),
    sessionKey: row.session_key,
    inputId: row.input_id,
    firstMessageId: row.first_message_id,
    statusAt: numOrNull(row.status_at),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    lastActivityAt: num(row.last_activity_at),
    executor: row.executor ?? null,
  };
}

// The statements every A2A request runs, compiled once (`prepared`).
type TaskParam = 'id' | 'agentId' | 'contextId' | 'owner' | 'state' | 'task' | 'now';
const taskColumns = (param: (name: TaskParam) => never) => ({
  id: param('id'),
  agent_id: param('agentId'),
  context_id: param('contextId'),
  owner: param('owner'),
  state: param('state'),
  task: param('task'),
  created_at: param('now'),
  updated_at: param('now'),
  last_activity_at: param('now'),
});
const saveTask = prepared<
  TaskParam | 'firstMessageId' | 'statusAt' | 'sessionKey' | 'inputId' | 'executor',
  Pick<Selectable<A2ATasksTable>, 'session_key' | 'input_id' | 'first_message_id' | 'created_at' | 'executor'>
>((db, param) =>
  db
    .insertInto('a2a_tasks')
    .values({
      ...taskColumns(param),
      session_key: param('sessionKey'),
      input_id: param('inputId'),
      executor: param('executor'),
      first_message_id: param('firstMessageId'),
      status_at: param('statusAt'),
    })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        state: param('state'),
        task: param('task'),
        // The first message is the first one saved; later saves never change it.
        first_message_id: eb.fn.coalesce('a2a_tasks.first_message_id', eb.val(param('firstMessageId'))),
        // A save without the session mapping keeps the one stored.
        session_key: eb.fn.coalesce(eb.val(param('sessionKey')), 'a2a_tasks.session_key'),
        input_id: eb.fn.coalesce(eb.val(param('inputId')), 'a2a_tasks.input_id'),
        executor: eb.fn.coalesce(eb.val(param('executor')), 'a2a_tasks.executor'),
        status_at: param('statusAt'),
        updated_at: param('now'),
        last_activity_at: param('now'),
      })),
    )
    .returning(['session_key', 'input_id', 'first_message_id', 'created_at', 'executor']),
);
const attachTaskInput = prepared<TaskParam | 'sessionKey' | 'inputId' | 'executor', never>((db, param) =>
  db
    .insertInto('a2a_tasks')
    .values({
      ...taskColumns(param),
      session_key: param('sessionKey'),
      input_id: param('inputId'),
      executor: param('executor'),
      first_message_id: null,
      status_at: null,
    })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        session_key: param('sessionKey'),
        input_id: param('inputId'),
        executor: param('executor'),
        last_activity_at: param('now'),
      }),
    ),
);
const taskById = prepared<'id', Selectable<A2ATasksTable>>((db, param) =>
  db.selectFrom('a2a_tasks').selectAll().where('id', '=', param('id')),
);
const taskByFirstMessage = prepared<'agentId' | 'owner' | 'messageId', Selectable<A2ATasksTable>>((db, param) =>
  db
    .selectFrom('a2a_tasks')
    .selectAll()
    .where('agent_id', '=', param('agentId'))
    .where('owner', '=', param('owner'))
    .where('first_message_id', '=', param('messageId'))
    .orderBy('created_at')
    .limit(1),
);
// Not DISTINCT owner: for that, SQLite walks the owner index over every task of the agent (2 ms a request at 8,000
// tasks, growing); this reads the context's rows only (a2a_tasks_context).
const otherContextOwner = prepared<'agentId' | 'contextId' | 'owner', { owner: string }>((db, param) =>
  db
    .selectFrom('a2a_tasks')
    .select('owner')
    .where('agent_id', '=', param('agentId'))
    .where('context_id', '=', param('contextId'))
    .where('owner', '<>', param('owner'))
    .limit(1),
);
const insertTaskEvents = preparedPerCount<'taskId' | 'now', 'type' | 'detail', never>((db, count, param, item) =>
  db.insertInto('a2a_task_events').values(
    Array.from({ length: count }, (_, i) => ({
      task_id: param('taskId'),
      type: item('type', i),
      detail: item('detail', i),
      created_at: param('now'),
    })),
  ),
);
const insertEvents = (db: Db, taskId: string, events: readonly A2ATaskEventInput[], now: number) =>
  insertTaskEvents(db, events.length, {
    taskId,
    now,
    type: events.map((event) => event.type),
    detail: events.map((event) => json(event.detail)),
  });
const pushConfigsOf = prepared<'taskId', Selectable<A2APushConfigsTable>>((db, param) =>
  db.selectFrom('a2a_push_configs').selectAll().where('task_id', '=', param('taskId')).orderBy('created_at').orderBy('config_id'),
);

export class KyselyA2ATaskStore implements A2ATaskStore {
  /** The tasks this gateway's client follows on other agents: their own rows, their own object. */
  private readonly remote: KyselyRemoteTasks;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {
    this.remote = new KyselyRemoteTasks(db);
  }

  saveRemoteTask(task: RemoteTaskRecord, now: number): Promise<void> {
    return this.remote.saveRemoteTask(task, now);
  }

  claimFollow(taskId: string, follower: string, until: number, now: number): Promise<boolean> {
    return this.remote.claimFollow(taskId, follower, until, now);
  }

  releaseFollows(follower: string): Promise<void> {
    return this.remote.releaseFollows(follower);
  }

  findRemoteTaskByMessage(messageId: string): Promise<RemoteTaskRecord | undefined> {
    return this.remote.findRemoteTaskByMessage(messageId);
  }

  getRemoteTask(taskId: string): Promise<RemoteTaskRecord | undefined> {
    return this.remote.getRemoteTask(taskId);
  }

  listRemoteTasks(filter: { states: RemoteTaskRecord['state'][]; waiterRunId?: string }): Promise<RemoteTaskRecord[]> {
    return this.remote.listRemoteTasks(filter);
  }

  async enqueuePush(
    taskId: string,
    push: { state: string | null; final: boolean },
    rows: readonly NewOutboxRow[],
    now: number,
  ): Promise<boolean> {
    if (rows.length === 0) return true;
    return this.db.transaction().execute(async (trx) => {
      // Writers of one task's pushes take turns on its row (SQLite's transactions take turns anyway).
      const task = trx.selectFrom('a2a_tasks').select('id').where('id', '=', taskId);
      await this.dialect.lockRows(task).execute();
      const last = await trx
        .selectFrom('a2a_task_events')
        .select(['type', 'detail', 'created_at'])
        .where('task_id', '=', taskId)
        .where('type', 'in', ['push.queued', 'push.final'])
        .orderBy('seq', 'desc')
        .limit(1)
        .executeTakeFirst();
      // A final state is the task's last word: after it only the same final state again (a repeat), never another.
      if (last?.type === 'push.final' && !(push.final && parse<{ state?: string | null }>(last.detail).state === push.state)) return false;
      // The outbox lists rows by time: a notification made in the same millisecond as the one before (or on a gateway
      // whose clock is behind) is listed after it all the same.
      const at = last ? Math.max(now, num(last.created_at) + 1) : now;
      for (const row of rows) await insertOutbox(trx, row, at);
      await insertEvents(
        trx,
        taskId,
        [{ type: push.final ? 'push.final' : 'push.queued', detail: { state: push.state, rows: rows.length } }],
        at,
      );
      return true;
    });
  }

  async save(task: A2ATaskSave, now: number, stateChange?: { from: string | null }): Promise<A2ATaskRecord> {
    if (!stateChange && !task.events?.length) return this.write(this.db, task, now);
    return this.db.transaction().execute(async (trx) => {
      const record = await this.write(trx, task, now);
      if (stateChange) {
        const payload = {
          taskId: task.id,
          agentId: task.agentId,
          peer: task.owner,
          contextId: task.contextId,
          from: stateChange.from,
          state: task.state,
        };
        await appendEvent(trx, { type: 'a2a.task', sessionKey: record.sessionKey, payload }, now);
      }
      if (task.events?.length) await insertEvents(trx, task.id, task.events, now);
      return record;
    });
  }

  private async write(db: Db, { events: _events, ...task }: A2ATaskSave, now: number): Promise<A2ATaskRecord> {
    const statusAt = task.statusAt ?? null;
    const [row] = await saveTask(db, {
      id: task.id,
      agentId: task.agentId,
      contextId: task.contextId,
      owner: task.owner,
      state: task.state,
      task: json(task.task),
      firstMessageId: task.firstMessageId ?? null,
      statusAt,
      sessionKey: task.sessionKey ?? null,
      inputId: task.inputId ?? null,
      executor: task.executor ?? null,
      now,
    });
    return {
      ...task,
      sessionKey: row.session_key,
      inputId: row.input_id,
      firstMessageId: row.first_message_id,
      statusAt,
      createdAt: num(row.created_at),
      updatedAt: now,
      lastActivityAt: now,
      executor: row.executor ?? null,
    };
  }

  async findByFirstMessage(agentId: string, owner: string, messageId: string): Promise<A2ATaskRecord | undefined> {
    const [row] = await taskByFirstMessage(this.db, { agentId, owner, messageId });
    return row ? toTask(row) : undefined;
  }

  async count(filter: A2ATaskFilter): Promise<number> {
    const row = await this.filtered(filter)
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    return num(row.count);
  }

  async otherContextOwner(agentId: string, contextId: string, owner: string): Promise<string | undefined> {
    return (await otherContextOwner(this.db, { agentId, contextId, owner }))[0]?.owner;
  }

  private filtered(filter: A2ATaskFilter) {
    let query = this.db.selectFrom('a2a_tasks');
    if (filter.agentId) query = query.where('agent_id', '=', filter.agentId);
    if (filter.owner) query = query.where('owner', '=', filter.owner);
    if (filter.contextId) query = query.where('context_id', '=', filter.contextId);
    if (filter.states) query = query.where('state', 'in', filter.states);
    if (filter.statusSince !== undefined) query = query.where('status_at', '>=', filter.statusSince);
    return query;
  }

  async attachInput(
    task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>,
    sessionKey: string,
    inputId: string,
    executor: string,
    now: number,
  ): Promise<void> {
    // Either write may come first: the executor attaches while the SDK saves the first snapshot.
    const placeholder = { id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_SUBMITTED' } };
    await attachTaskInput(this.db, {
      id: task.id,
      agentId: task.agentId,
      contextId: task.contextId,
      owner: task.owner,
      state: 'TASK_STATE_SUBMITTED',
      task: json(placeholder),
      sessionKey,
      inputId,
      executor,
      now,
    });
  }

  async get(id: string): Promise<A2ATaskRecord | undefined> {
    const [row] = await taskById(this.db, { id });
    return row ? toTask(row) : undefined;
  }

  async list(filter: A2ATaskFilter = {}): Promise<A2ATaskRecord[]> {
    const rows = await this.filtered(filter)
      .selectAll()
      .orderBy('last_activity_at', 'desc')
      .orderBy('id')
      .limit(filter.limit ?? 100)
      .offset(filter.offset ?? 0)
      .execute();
    return rows.map(toTask);
  }

  async savePushConfig(config: A2APushConfigRecord, now: number): Promise<void> {
    await this.db
      .insertInto('a2a_push_configs')
      .values({
        task_id: config.taskId,
        config_id: config.configId,
        owner: config.owner,
        config: json(config.config),
        wire_version: config.wireVersion,
        created_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['task_id', 'config_id'])
          .doUpdateSet({ owner: config.owner, config: json(config.config), wire_version: config.wireVersion }),
      )
      .execute();
  }

  async listPushConfigs(taskId: string): Promise<A2APushConfigRecord[]> {
    const rows = await pushConfigsOf(this.db, { taskId });
    return rows.map((row) => ({
      taskId: row.task_id,
      configId: row.config_id,
      owner: row.owner,
      config: parse(row.config),
      wireVersion: row.wire_version,
    }));
  }

  async deletePushConfig(taskId: string, configId?: string): Promise<void> {
    let query = this.db.deleteFrom('a2a_push_configs').where('task_id', '=', taskId);
    if (configId !== undefined) query = query.where('config_id', '=', configId);
    await query.execute();
  }

  async appendEvent(taskId: string, type: string, detail: unknown, now: number): Promise<void> {
    await insertEvents(this.db, taskId, [{ type, detail }], now);
  }

  async listEvents(taskId: string): Promise<A2ATaskEventRecord[]> {
    const rows = await this.db.selectFrom('a2a_task_events').selectAll().where('task_id', '=', taskId).orderBy('seq').execute();
    return rows.map((row) => ({
      seq: num(row.seq),
      taskId: row.task_id,
      type: row.type,
      detail: parse(row.detail),
      createdAt: num(row.created_at),
    }));
  }
}
