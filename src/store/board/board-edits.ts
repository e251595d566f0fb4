/**
 * The board's edits by people and agents over Kysely (docs/board.md): create, link, move, review and comment,
 * each one transaction. A change a tool call made under its ledger key is not made again (changeByKey).
 */
import type { Kysely } from 'kysely';
import { cyclePath, initialState, refuseMove, type BoardState } from '../../core/board.js';
import { SwitchboardError } from '../../core/errors.js';
import type {
  BoardClaim,
  BoardClaimRequest,
  BoardCommentRecord,
  BoardTaskRecord,
  DispatcherFence,
  NewBoardTask,
} from '../../ports/index.js';
import { KyselyBoardReads } from './board-reads.js';
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
  StaleRow,
  toBoardTask,
  toComment,
  updateTask,
} from './board-rows.js';
import { json, num, type Db } from '../sql/rows.js';
import type { Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

const MAX_TX_ATTEMPTS = 8;
export const DISPATCHER_LEASE = 'dispatcher';

/**
 * The dispatcher's fence: its lease still held under this epoch, its row held (FOR SHARE on PostgreSQL) until the
 * transaction ends, so another gateway's takeover of the lease waits for this write, and every write after it fails.
 */
async function holdFence(trx: Db, dialect: SqlDialect, fence: DispatcherFence): Promise<void> {
  const read = trx
    .selectFrom('board_leases')
    .select('epoch')
    .where('name', '=', DISPATCHER_LEASE)
    .where('owner', '=', fence.owner)
    .where('epoch', '=', fence.epoch);
  if (await dialect.shareRows(read).executeTakeFirst()) return;
  throw new SwitchboardError(
    'DISPATCHER_LEASE_LOST',
    `the board dispatcher lease moved on from ${fence.owner} (epoch ${fence.epoch}): another gateway dispatches now; nothing was written`,
  );
}
const isDeadlock = (error: unknown) => (error as { code?: unknown } | null)?.code === '40P01';

/** A claim an adapter makes in one statement, with the rows the portable claim writes. */
export type OneStatementClaim = (db: Kysely<Database>, request: BoardClaimRequest, now: number) => Promise<BoardClaim | undefined>;

export class KyselyBoardEdits extends KyselyBoardReads {
  constructor(
    db: Kysely<Database>,
    dialect: SqlDialect,
    /** Set on the dispatcher's view (BoardStore.fenced): every transaction checks it first. */
    protected readonly fence?: DispatcherFence,
    /** An adapter's claim in one statement, where it has one (PostgreSQL); the portable claim otherwise. */
    protected readonly oneStatementClaim?: OneStatementClaim,
  ) {
    super(db, dialect);
  }

  /**
   * One transaction, run again (a few times) when a compare-and-set found its row changed (StaleRow) or PostgreSQL
   * chose it as a deadlock's victim: the rerun reads what the winner wrote and answers from that.
   */
  protected async tx<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          if (this.fence) await holdFence(trx, this.dialect, this.fence);
          return work(trx);
        });
      } catch (error) {
        if (attempt >= MAX_TX_ATTEMPTS || !(error instanceof StaleRow || isDeadlock(error))) throw error;
      }
    }
  }

  create(task: NewBoardTask, now: number): Promise<{ task: BoardTaskRecord; created: boolean }> {
    return this.tx(async (trx) => {
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
    return this.tx(async (trx) => {
      // Links are added one at a time across the database (PostgreSQL: a transaction-scoped advisory lock), so two
      // links that would close a cycle together cannot both pass the cycle check. The dependency's row is held too:
      // if it is finishing now, either its promotion sees this link or this link sees it done.
      await this.dialect.lockName(trx, 'switchboard.board_deps');
      await lockTasks(trx, [dependsOn]);
      const task = await loadTask(trx, taskId);
      const other = await loadTask(trx, dependsOn);
      if (['running', 'done', 'cancelled', 'archived'].includes(task.state)) {
        throw new SwitchboardError(
          'BOARD_MOVE_REFUSED',
          `task ${taskId} is ${task.state}; dependencies can be added only to tasks that have not started`,
        );
      }
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
      const demote = task.state === 'ready' && other.state !== 'done';
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
    return this.tx((trx) => this.moveIn(trx, id, to, change, now));
  }

  review(id: string, review: { approve: boolean; actor: string; comment?: string; key?: string }, now: number): Promise<BoardTaskRecord> {
    return this.tx(async (trx) => {
      if (await changeByKey(trx, review.key)) return loadTask(trx, id);
      const task = await loadTask(trx, id);
      if (task.state !== 'review') {
        throw new SwitchboardError(
          'BOARD_MOVE_REFUSED',
          `task ${task.id} is ${task.state}, not in review; only a task a worker sent to review can be approved or sent back`,
          { state: task.state },
        );
      }
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
      if (open.length > 0)
        throw new SwitchboardError(
          'BOARD_MOVE_REFUSED',
          `task ${id} cannot be ready: it depends on ${open.join(', ')}, not done yet (it becomes ready by itself when they are)`,
          { openDependencies: open },
        );
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
    return this.tx(async (trx) => {
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
