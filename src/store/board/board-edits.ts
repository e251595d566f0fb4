/**
 * The board's edits by people and agents over Kysely (docs/board.md): create, link, move, review and comment,
 * each one transaction. A change a tool call made under its ledger key is not made again (changeByKey). Which
 * edits are allowed is core/board.ts's to say; this stores them.
 */
import {
  cyclePath,
  demotedByLink,
  initialState,
  refuseLink,
  refuseMove,
  refuseReady,
  refuseReview,
  type BoardState,
} from '../../core/board.js';
import { SwitchboardError } from '../../core/errors.js';
import type { BoardCommentRecord, BoardTaskRecord, NewBoardTask } from '../../ports/index.js';
import type { BoardTransactions } from './board-transactions.js';
import {
  changeByKey,
  endAttempt,
  loadClaimed,
  loadTask,
  lockTasks,
  NO_CLAIM,
  openDependencies,
  promoteDependents,
  recordEvent,
  toBoardTask,
  toComment,
  updateTask,
} from './board-rows.js';
import { json, num, type Db } from '../sql/rows.js';
import type { Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';
import { currentTraceparent } from '../../kit/trace-context.js';

export class KyselyBoardEdits {
  constructor(
    private readonly tx: BoardTransactions,
    private readonly dialect: SqlDialect,
  ) {}

  create(task: NewBoardTask, now: number): Promise<{ task: BoardTaskRecord; created: boolean }> {
    return this.tx.run(async (trx) => {
      if (task.idempotencyKey !== null) {
        const existing = await trx
          .selectFrom('board_tasks')
          .selectAll()
          .where('idempotency_key', '=', task.idempotencyKey)
          .executeTakeFirst();
        if (existing) return { task: toBoardTask(existing), created: false };
      }
      const dependsOn = [...new Set(task.dependsOn)];
      const found =
        dependsOn.length === 0 ? [] : await trx.selectFrom('board_tasks').select(['id', 'state']).where('id', 'in', dependsOn).execute();
      const missing = dependsOn.filter((id) => !found.some((row) => row.id === id));
      if (missing.length > 0)
        throw new SwitchboardError('BOARD_TASK_NOT_FOUND', `dependsOn: no board task ${missing.map((id) => `"${id}"`).join(', ')}`);
      const state = initialState(task.triage, found.filter((row) => row.state !== 'done').length);
      const inserted = await trx
        .insertInto('board_tasks')
        .values({
          id: task.id,
          board: task.board,
          title: task.title,
          body: task.body,
          assignee: task.assignee,
          priority: task.priority,
          labels: json(task.labels),
          creator: task.creator,
          idempotency_key: task.idempotencyKey,
          conversation_id: task.conversation?.id ?? null,
          hop: task.conversation?.hop ?? null,
          // The span that creates it (a run's board tool call, a traced API request): its attempts join that trace.
          trace: currentTraceparent() ?? null,
          state,
          block_kind: null,
          block_reason: null,
          max_attempts: task.maxAttempts,
          max_runtime_ms: task.maxRuntimeMs,
          attempts: 0,
          failures: 0,
          token: 0,
          ...NO_CLAIM,
          result: null,
          result_hash: null,
          result_chars: null,
          created_at: now,
          updated_at: now,
          done_at: null,
        })
        // A concurrent create with the same key (PostgreSQL) lands here: the first one's task is the task.
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!inserted) {
        const existing = await trx
          .selectFrom('board_tasks')
          .selectAll()
          .where('idempotency_key', '=', task.idempotencyKey)
          .executeTakeFirstOrThrow();
        return { task: toBoardTask(existing), created: false };
      }
      if (dependsOn.length > 0)
        await trx
          .insertInto('board_deps')
          .values(dependsOn.map((id) => ({ task_id: task.id, depends_on: id, created_at: now })))
          .execute();
      const record = toBoardTask(inserted);
      await recordEvent(trx, record, { type: 'created', actor: task.creator, detail: { dependsOn } }, now);
      return { task: record, created: true };
    });
  }

  link(taskId: string, dependsOn: string, actor: string, now: number): Promise<BoardTaskRecord> {
    return this.tx.run(async (trx) => {
      // Links are added one at a time across the database (PostgreSQL: a transaction-scoped advisory lock), so two
      // links that would close a cycle together cannot both pass the cycle check. The dependency's row is held too:
      // if it is finishing now, either its promotion sees this link or this link sees it done.
      await this.dialect.lockName(trx, 'switchboard.board_deps');
      await lockTasks(trx, [dependsOn]);
      const task = await loadTask(trx, taskId);
      const other = await loadTask(trx, dependsOn);
      const unlinkable = refuseLink(taskId, task.state);
      if (unlinkable) throw new SwitchboardError('BOARD_MOVE_REFUSED', unlinkable);
      const known = await trx
        .selectFrom('board_deps')
        .select('task_id')
        .where('task_id', '=', taskId)
        .where('depends_on', '=', dependsOn)
        .executeTakeFirst();
      if (known) return task;
      const cycle = await this.findCycle(trx, taskId, dependsOn);
      if (cycle)
        throw new SwitchboardError(
          'DEPENDENCY_CYCLE',
          `refused: ${taskId} depending on ${dependsOn} would close a cycle: ${cycle.join(' -> ')}`,
          { cycle },
        );
      await trx.insertInto('board_deps').values({ task_id: taskId, depends_on: dependsOn, created_at: now }).execute();
      const demote = demotedByLink(task.state, other.state);
      return updateTask(trx, task, demote ? { state: 'todo' } : {}, { type: 'linked', actor, detail: { dependsOn } }, now);
    });
  }

  /** Walks the dependency graph from `dependsOn`, one query per level, as far as it reaches. */
  private async findCycle(trx: Db, taskId: string, dependsOn: string): Promise<string[] | null> {
    const edges = new Map<string, string[]>();
    let frontier = [dependsOn];
    while (frontier.length > 0) {
      const rows = await trx.selectFrom('board_deps').select(['task_id', 'depends_on']).where('task_id', 'in', frontier).execute();
      for (const id of frontier) edges.set(id, []);
      for (const row of rows) edges.get(row.task_id)!.push(row.depends_on);
      frontier = [...new Set(rows.map((row) => row.depends_on))].filter((id) => !edges.has(id));
    }
    return cyclePath(taskId, dependsOn, (id) => edges.get(id) ?? []);
  }

  move(id: string, to: BoardState, change: { actor: string; reason?: string }, now: number): Promise<BoardTaskRecord> {
    return this.tx.run((trx) => this.moveIn(trx, id, to, change, now));
  }

  review(id: string, review: { approve: boolean; actor: string; comment?: string; key?: string }, now: number): Promise<BoardTaskRecord> {
    return this.tx.run(async (trx) => {
      if (await changeByKey(trx, review.key)) return loadTask(trx, id);
      const task = await loadTask(trx, id);
      const unreviewable = refuseReview(task.id, task.state);
      if (unreviewable) throw new SwitchboardError('BOARD_MOVE_REFUSED', unreviewable, { state: task.state });
      if (review.comment) await this.commentIn(trx, task, { author: review.actor, body: review.comment }, now);
      const reason = review.approve ? 'approved' : 'changes requested';
      return this.moveIn(trx, id, review.approve ? 'done' : 'ready', { actor: review.actor, reason, key: review.key }, now);
    });
  }

  private async moveIn(
    trx: Db,
    id: string,
    to: BoardState,
    change: { actor: string; reason?: string; key?: string },
    now: number,
  ): Promise<BoardTaskRecord> {
    const task = await loadTask(trx, id);
    const refused = refuseMove(task.state, to);
    if (refused) throw new SwitchboardError('BOARD_MOVE_REFUSED', `task ${id}: ${refused}`, { state: task.state, to });
    if (to === 'ready') {
      const open = await openDependencies(trx, id);
      const notReady = refuseReady(id, open);
      if (notReady) throw new SwitchboardError('BOARD_MOVE_REFUSED', notReady, { openDependencies: open });
    }
    const changes: Partial<Database['board_tasks']> = { state: to };
    if (task.state === 'running') {
      // A cancel fences the worker out: the next claim number is spent, so its token is stale at once.
      await endAttempt(trx, task, 'cancelled', { error: change.reason ?? `cancelled by ${change.actor}` }, now);
      Object.assign(changes, NO_CLAIM, { token: task.token + 1 });
    }
    if (to === 'blocked')
      Object.assign(changes, { block_kind: 'needs_input', block_reason: change.reason ?? `blocked by ${change.actor}` });
    else if (task.state === 'blocked') Object.assign(changes, { block_kind: null, block_reason: null, failures: 0 });
    if (to === 'done') changes.done_at = now;
    const detail = { from: task.state, ...(change.reason ? { reason: change.reason } : {}) };
    const moved = await updateTask(trx, task, changes, { type: 'moved', actor: change.actor, detail, key: change.key }, now);
    if (to === 'done') await promoteDependents(trx, id, now);
    return moved;
  }

  comment(id: string, comment: { author: string; body: string; token?: number; key?: string }, now: number): Promise<BoardCommentRecord> {
    return this.tx.run(async (trx) => {
      const made = await changeByKey(trx, comment.key);
      if (made)
        return toComment(
          await trx.selectFrom('board_comments').selectAll().where('seq', '=', Number(made.detail.comment)).executeTakeFirstOrThrow(),
        );
      const task = comment.token === undefined ? await loadTask(trx, id) : await loadClaimed(trx, id, comment.token);
      return this.commentIn(trx, task, comment, now);
    });
  }

  private async commentIn(
    trx: Db,
    task: BoardTaskRecord,
    comment: { author: string; body: string; token?: number; key?: string },
    now: number,
  ): Promise<BoardCommentRecord> {
    const row = await trx
      .insertInto('board_comments')
      .values({
        task_id: task.id,
        author: comment.author,
        body: comment.body,
        attempt: comment.token === undefined ? null : task.attempts,
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordEvent(trx, task, { type: 'commented', actor: comment.author, detail: { comment: num(row.seq) }, key: comment.key }, now);
    return toComment(row);
  }
}
