/** A2A tasks and their replay log over Kysely. */
import type { Kysely, Selectable } from 'kysely';
import type { A2APushConfigRecord, A2ATaskEventRecord, RemoteTaskRecord, A2ATaskFilter, A2ATaskRecord, A2ATaskStore } from '../ports.js';
import { json, num, numOrNull, parse } from './kysely-rows.js';
import type { A2ARemoteTasksTable, A2ATasksTable, Database } from './schema.js';

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
  };
}

function toRemoteTask(row: Selectable<A2ARemoteTasksTable>): RemoteTaskRecord {
  return {
    taskId: row.task_id,
    remote: row.remote,
    contextId: row.context_id,
    sessionKey: row.session_key,
    state: row.state as RemoteTaskRecord['state'],
    remoteState: row.remote_state,
    pushToken: row.push_token,
    waiterRunId: row.waiter_run_id,
    result: parse(row.result),
    messageId: row.message_id,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

function taskRow(
  task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>,
  state: string,
  snapshot: unknown,
  mapping: Pick<A2ATasksTable, 'session_key' | 'input_id'>,
  now: number,
): A2ATasksTable {
  return { id: task.id, agent_id: task.agentId, context_id: task.contextId, owner: task.owner, state, task: json(snapshot), ...mapping, first_message_id: null, status_at: null, created_at: now, updated_at: now, last_activity_at: now };
}

export class KyselyA2ATaskStore implements A2ATaskStore {
  constructor(private readonly db: Kysely<Database>) {}

  async save(task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner' | 'state' | 'task'> & Partial<Pick<A2ATaskRecord, 'firstMessageId' | 'statusAt'>>, now: number): Promise<A2ATaskRecord> {
    const derived = { first_message_id: task.firstMessageId ?? null, status_at: task.statusAt ?? null };
    const row = await this.db
      .insertInto('a2a_tasks')
      .values({ ...taskRow(task, task.state, task.task, { session_key: null, input_id: null }, now), ...derived })
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          state: task.state,
          task: json(task.task),
          // The first message is the first one saved; later saves never change it.
          first_message_id: eb.fn.coalesce('a2a_tasks.first_message_id', eb.val(derived.first_message_id)),
          status_at: derived.status_at,
          updated_at: now,
          last_activity_at: now,
        })),
      )
      .returning(['session_key', 'input_id', 'first_message_id', 'created_at'])
      .executeTakeFirstOrThrow();
    return {
      ...task,
      sessionKey: row.session_key,
      inputId: row.input_id,
      firstMessageId: row.first_message_id,
      statusAt: derived.status_at,
      createdAt: num(row.created_at),
      updatedAt: now,
      lastActivityAt: now,
    };
  }

  async findByFirstMessage(agentId: string, owner: string, messageId: string): Promise<A2ATaskRecord | undefined> {
    const row = await this.db
      .selectFrom('a2a_tasks')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('owner', '=', owner)
      .where('first_message_id', '=', messageId)
      .orderBy('created_at')
      .executeTakeFirst();
    return row ? toTask(row) : undefined;
  }

  async count(filter: A2ATaskFilter): Promise<number> {
    const row = await this.filtered(filter)
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    return num(row.count);
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

  async attachInput(task: Pick<A2ATaskRecord, 'id' | 'agentId' | 'contextId' | 'owner'>, sessionKey: string, inputId: string, now: number): Promise<void> {
    // Either write may come first: the executor attaches while the SDK saves the first snapshot.
    const placeholder = { id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_SUBMITTED' } };
    await this.db
      .insertInto('a2a_tasks')
      .values(taskRow(task, 'TASK_STATE_SUBMITTED', placeholder, { session_key: sessionKey, input_id: inputId }, now))
      .onConflict((oc) => oc.column('id').doUpdateSet({ session_key: sessionKey, input_id: inputId, last_activity_at: now }))
      .execute();
  }

  async get(id: string): Promise<A2ATaskRecord | undefined> {
    const row = await this.db.selectFrom('a2a_tasks').selectAll().where('id', '=', id).executeTakeFirst();
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
      .values({ task_id: config.taskId, config_id: config.configId, owner: config.owner, config: json(config.config), wire_version: config.wireVersion, created_at: now })
      .onConflict((oc) => oc.columns(['task_id', 'config_id']).doUpdateSet({ owner: config.owner, config: json(config.config), wire_version: config.wireVersion }))
      .execute();
  }

  async listPushConfigs(taskId: string): Promise<A2APushConfigRecord[]> {
    const rows = await this.db.selectFrom('a2a_push_configs').selectAll().where('task_id', '=', taskId).orderBy('created_at').orderBy('config_id').execute();
    return rows.map((row) => ({ taskId: row.task_id, configId: row.config_id, owner: row.owner, config: parse(row.config), wireVersion: row.wire_version }));
  }

  async deletePushConfig(taskId: string, configId?: string): Promise<void> {
    let query = this.db.deleteFrom('a2a_push_configs').where('task_id', '=', taskId);
    if (configId !== undefined) query = query.where('config_id', '=', configId);
    await query.execute();
  }

  async saveRemoteTask(task: RemoteTaskRecord, now: number): Promise<void> {
    await this.db
      .insertInto('a2a_remote_tasks')
            .values({
        task_id: task.taskId,
        remote: task.remote,
        context_id: task.contextId,
        session_key: task.sessionKey,
        state: task.state,
        remote_state: task.remoteState,
        push_token: task.pushToken,
        waiter_run_id: task.waiterRunId,
        result: task.result === null || task.result === undefined ? null : json(task.result),
        message_id: task.messageId ?? null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.column('task_id').doUpdateSet({
          state: task.state,
          remote_state: task.remoteState,
          push_token: task.pushToken,
          waiter_run_id: task.waiterRunId,
          result: task.result === null || task.result === undefined ? null : json(task.result),
          // Set once, by the send that made the task; later saves keep it.
          message_id: (eb) => eb.fn.coalesce('a2a_remote_tasks.message_id', eb.val(task.messageId ?? null)),
          updated_at: now,
        }),
      )
      .execute();
  }

  async findRemoteTaskByMessage(messageId: string): Promise<RemoteTaskRecord | undefined> {
    const row = await this.db.selectFrom('a2a_remote_tasks').selectAll().where('message_id', '=', messageId).executeTakeFirst();
    return row ? toRemoteTask(row) : undefined;
  }

  async getRemoteTask(taskId: string): Promise<RemoteTaskRecord | undefined> {
    const row = await this.db.selectFrom('a2a_remote_tasks').selectAll().where('task_id', '=', taskId).executeTakeFirst();
    return row ? toRemoteTask(row) : undefined;
  }

  async listRemoteTasks(filter: { states: RemoteTaskRecord['state'][]; waiterRunId?: string }): Promise<RemoteTaskRecord[]> {
    let query = this.db.selectFrom('a2a_remote_tasks').selectAll().where('state', 'in', filter.states);
    if (filter.waiterRunId) query = query.where('waiter_run_id', '=', filter.waiterRunId);
    const rows = await query.orderBy('created_at').execute();
    return rows.map(toRemoteTask);
  }

  async appendEvent(taskId: string, type: string, detail: unknown, now: number): Promise<void> {
    await this.db.insertInto('a2a_task_events').values({ task_id: taskId, type, detail: json(detail), created_at: now }).execute();
  }

  async listEvents(taskId: string): Promise<A2ATaskEventRecord[]> {
    const rows = await this.db.selectFrom('a2a_task_events').selectAll().where('task_id', '=', taskId).orderBy('seq').execute();
    return rows.map((row) => ({ seq: num(row.seq), taskId: row.task_id, type: row.type, detail: parse(row.detail), createdAt: num(row.created_at) }));
  }
}
