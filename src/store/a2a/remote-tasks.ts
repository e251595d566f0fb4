/** The remote A2A tasks this gateway's client follows (src/a2a/client.ts), over Kysely: their rows and the follow claims. */
import type { Kysely, Selectable } from 'kysely';
import type { RemoteTaskRecord } from '../../ports/index.js';
import { json, num, parse } from '../sql/rows.js';
import type { A2ARemoteTasksTable, Database } from '../schema/database.js';

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
    conversation: row.conversation_id === null ? null : { id: row.conversation_id, hop: num(row.hop ?? 1) },
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

/** The remote-task half of the A2A task store (KyselyA2ATaskStore holds one and hands these calls to it). */
export class KyselyRemoteTasks {
  constructor(private readonly db: Kysely<Database>) {}

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
        conversation_id: task.conversation?.id ?? null,
        hop: task.conversation?.hop ?? null,
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
          conversation_id: (eb) => eb.fn.coalesce('a2a_remote_tasks.conversation_id', eb.val(task.conversation?.id ?? null)),
          hop: (eb) => eb.fn.coalesce('a2a_remote_tasks.hop', eb.val(task.conversation?.hop ?? null)),
          updated_at: now,
        }),
      )
      .execute();
  }

  async claimFollow(taskId: string, follower: string, until: number, now: number): Promise<boolean> {
    const claimed = await this.db
      .updateTable('a2a_remote_tasks')
      .set({ follower, follow_until: until })
      .where('task_id', '=', taskId)
      .where((eb) => eb.or([eb('follower', 'is', null), eb('follower', '=', follower), eb('follow_until', '<', now)]))
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) === 1;
  }

  async releaseFollows(follower: string): Promise<void> {
    await this.db.updateTable('a2a_remote_tasks').set({ follower: null, follow_until: 0 }).where('follower', '=', follower).execute();
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
}
