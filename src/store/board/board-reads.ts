/** The board's reads over Kysely: a task, its view (dependencies, comments, attempts), lists and the event log. */
import type { Kysely } from 'kysely';
import { num } from '../sql/rows.js';
import type { SettledPoint, SqlDialect } from '../sql/dialect.js';
import type { BoardState } from '../../core/board.js';
import type { BoardEventRecord, BoardTaskFilter, BoardTaskRecord, BoardTaskView } from '../../ports/index.js';
import { toAttempt, toBoardEvent, toBoardTask, toComment } from './board-rows.js';
import type { Database } from '../schema/database.js';

export class KyselyBoardReads {
  /** How far the event log can be read without skipping an event that commits late (SettledPoint). */
  private readonly settled: SettledPoint;

  constructor(
    private readonly db: Kysely<Database>,
    dialect: SqlDialect,
  ) {
    this.settled = dialect.settledPoint(db, 'board_events_seq_seq', async () => {
      const row = await db
        .selectFrom('board_events')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      return num((row?.seq as number | null) ?? 0);
    });
  }

  async get(id: string): Promise<BoardTaskRecord | undefined> {
    const row = await this.db.selectFrom('board_tasks').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toBoardTask(row) : undefined;
  }

  async view(id: string, options: { comments?: number } = {}): Promise<BoardTaskView | undefined> {
    const task = await this.get(id);
    if (!task) return undefined;
    const dependsOn = await this.db
      .selectFrom('board_deps')
      .innerJoin('board_tasks', 'board_tasks.id', 'board_deps.depends_on')
      .select(['board_tasks.id', 'board_tasks.title', 'board_tasks.state', 'board_tasks.result'])
      .where('board_deps.task_id', '=', id)
      .orderBy('board_tasks.created_at')
      .execute();
    const dependents = await this.db
      .selectFrom('board_deps')
      .innerJoin('board_tasks', 'board_tasks.id', 'board_deps.task_id')
      .select(['board_tasks.id', 'board_tasks.title', 'board_tasks.state'])
      .where('board_deps.depends_on', '=', id)
      .orderBy('board_tasks.created_at')
      .execute();
    const comments = await this.db
      .selectFrom('board_comments')
      .selectAll()
      .where('task_id', '=', id)
      .orderBy('seq', 'desc')
      .limit(options.comments ?? 1000)
      .execute();
    const attempts = await this.db.selectFrom('board_attempts').selectAll().where('task_id', '=', id).orderBy('attempt').execute();
    return {
      task,
      dependsOn: dependsOn.map((row) => ({ ...row, state: row.state as BoardState })),
      dependents: dependents.map((row) => ({ ...row, state: row.state as BoardState })),
      comments: comments.reverse().map(toComment),
      attempts: attempts.map(toAttempt),
    };
  }

  async list(filter: BoardTaskFilter = {}): Promise<BoardTaskRecord[]> {
    let query = this.db.selectFrom('board_tasks').selectAll();
    if (filter.board) query = query.where('board', '=', filter.board);
    if (filter.states?.length) query = query.where('state', 'in', filter.states);
    if (filter.assignee) query = query.where('assignee', '=', filter.assignee);
    if (filter.createdSince !== undefined) query = query.where('created_at', '>=', filter.createdSince);
    const rows = await query
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('id')
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toBoardTask);
  }

  /** The tasks each of these depends on (`board list`); a task with none is left out. */
  async workerSeen(worker: string): Promise<boolean> {
    // Asked only for an assignee that is no agent (board create): a scan that stops at the first attempt it finds.
    const row = await this.db.selectFrom('board_attempts').select('task_id').where('worker', '=', worker).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async dependencies(taskIds: readonly string[]): Promise<Record<string, string[]>> {
    const deps: Record<string, string[]> = {};
    // In pages, under every driver's limit of bound parameters.
    for (let at = 0; at < taskIds.length; at += 500) {
      const rows = await this.db
        .selectFrom('board_deps')
        .select(['task_id', 'depends_on'])
        .where('task_id', 'in', taskIds.slice(at, at + 500))
        .orderBy('task_id')
        .orderBy('depends_on')
        .execute();
      for (const row of rows) (deps[row.task_id] ??= []).push(row.depends_on);
    }
    return deps;
  }

  /** Up to the settled point only: a reader paging on with `afterSeq` never passes an event still committing. */
  async events(filter: { taskId?: string; board?: string; afterSeq?: number; limit?: number }): Promise<BoardEventRecord[]> {
    const { seq } = await this.settled.read();
    let query = this.db.selectFrom('board_events').selectAll().where('seq', '<=', seq);
    if (filter.taskId) query = query.where('task_id', '=', filter.taskId);
    if (filter.board) query = query.where('board', '=', filter.board);
    if (filter.afterSeq !== undefined) query = query.where('seq', '>', filter.afterSeq);
    const rows = await query
      .orderBy('seq')
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toBoardEvent);
  }
}
