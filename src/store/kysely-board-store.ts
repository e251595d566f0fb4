/**
 * The task board over Kysely (docs/board.md). Each method is one transaction; a worker's writes are
 * fenced by the claim's token, which grows with every claim, so a worker whose claim was taken back
 * changes nothing (CLAIM_LOST).
 */
import type { Kysely } from 'kysely';
import { claimInOneStatement } from './postgres/board-claim.js';
import { KyselyBoardReads } from './kysely-board-reads.js';
import { afterFailure, cyclePath, initialState, refuseMove, type BlockKind, type BoardState } from '../core/board.js';
import { SwitchboardError } from '../core/errors.js';
import { freezeResult } from '../core/subagent.js';
import { nodeHashing } from '../hashing.js';
import type {
  BoardClaim,
  BoardClaimRequest,
  BoardCommentRecord,
  BoardReclaim,
  BoardStore,
  BoardTaskRecord,
  NewBoardTask,
} from '../ports/index.js';
import {
  changeByKey,
  claimOf,
  endAttempt,
  endedAttempt,
  gaveUpReason,
  loadClaimed,
  loadTask,
  NO_CLAIM,
  openDependencies,
  promoteDependents,
  recordEvent,
  toBoardTask,
  toComment,
  updateTask,
} from './kysely-board-rows.js';
import { json, num, type Db } from './kysely-rows.js';
import type { SqlDialectName } from './sql-dialect.js';
import type { Database } from './schema.js';

const DISPATCHER_LEASE = 'dispatcher';

export class KyselyBoardStore extends KyselyBoardReads implements BoardStore {
  constructor(
    db: Kysely<Database>,
    private readonly dialect: SqlDialectName,
  ) {
    super(db);
  }

  private tx<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
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

  claim(request: BoardClaimRequest, now: number): Promise<BoardClaim | undefined> {
    if (this.dialect === 'postgres') return claimInOneStatement(this.db, request, now);
    return this.tx(async (trx) => {
      let query = trx.selectFrom('board_tasks').selectAll().where('state', '=', 'ready');
      if (request.taskId) query = query.where('id', '=', request.taskId);
      if (request.board) query = query.where('board', '=', request.board);
      if (request.assignee) query = query.where('assignee', '=', request.assignee);
      else query = query.where((eb) => eb.or([eb('assignee', 'is', null), eb('assignee', '=', request.worker)]));
      query = query.orderBy('priority', 'desc').orderBy('created_at').orderBy('id').limit(1);
      // Several gateways on one PostgreSQL: each takes a different row instead of queueing on the same one.
      const row = await (this.dialect === 'postgres' ? query.forUpdate().skipLocked() : query).executeTakeFirst();
      if (!row) return undefined;
      const task = toBoardTask(row);
      const attempt = task.attempts + 1;
      const token = task.token + 1;
      const claimed = await trx
        .updateTable('board_tasks')
        .set({
          state: 'running',
          attempts: attempt,
          token,
          claim_worker: request.worker,
          claimed_at: now,
          claim_expires_at: now + request.ttlMs,
          updated_at: now,
        })
        .where('id', '=', task.id)
        .where('state', '=', 'ready')
        .where('token', '=', task.token)
        .returningAll()
        .executeTakeFirst();
      if (!claimed) return undefined;
      await trx
        .insertInto('board_attempts')
        .values({
          task_id: task.id,
          attempt,
          token,
          worker: request.worker,
          ref: request.ref ?? null,
          started_at: now,
          heartbeat_at: now,
          ended_at: null,
          outcome: null,
          summary: null,
          error: null,
        })
        .execute();
      const record = toBoardTask(claimed);
      await recordEvent(trx, record, { type: 'claimed', actor: request.worker, detail: { attempt, token } }, now);
      return claimOf(record);
    });
  }

  heartbeat(id: string, token: number, ttlMs: number, now: number): Promise<BoardClaim> {
    return this.tx(async (trx) => {
      const task = await loadClaimed(trx, id, token);
      const row = await trx
        .updateTable('board_tasks')
        .set({ claim_expires_at: now + ttlMs })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('board_attempts')
        .set({ heartbeat_at: now })
        .where('task_id', '=', id)
        .where('attempt', '=', task.attempts)
        .execute();
      return claimOf(toBoardTask(row));
    });
  }

  complete(
    id: string,
    token: number,
    outcome: { result: string; summary?: string; review?: boolean; maxResultChars: number },
    now: number,
  ): Promise<BoardTaskRecord> {
    return this.tx(async (trx) => {
      const frozen = freezeResult(outcome.result, outcome.maxResultChars, nodeHashing.sha256);
      const claimed = await this.underClaim(
        trx,
        id,
        token,
        outcome.review ? 'review' : 'completed',
        (task) => task.resultHash === frozen.resultHash,
      );
      if ('repeat' in claimed) return claimed.repeat;
      const { task } = claimed;
      await endAttempt(trx, task, outcome.review ? 'review' : 'completed', { summary: outcome.summary ?? null }, now);
      const state = outcome.review ? 'review' : 'done';
      const done = await updateTask(
        trx,
        task,
        {
          state,
          ...NO_CLAIM,
          result: frozen.result,
          result_hash: frozen.resultHash,
          result_chars: frozen.resultChars,
          done_at: state === 'done' ? now : null,
        },
        {
          type: outcome.review ? 'review_requested' : 'completed',
          actor: task.claimWorker!,
          detail: { attempt: task.attempts, resultChars: frozen.resultChars, truncated: frozen.truncated },
        },
        now,
      );
      if (state === 'done') await promoteDependents(trx, id, now);
      return done;
    });
  }

  block(id: string, token: number, why: { kind: BlockKind; reason: string }, now: number): Promise<BoardTaskRecord> {
    return this.tx(async (trx) => {
      const claimed = await this.underClaim(
        trx,
        id,
        token,
        'blocked',
        (task, attempt) => attempt.summary === why.reason && task.blockKind === why.kind,
      );
      if ('repeat' in claimed) return claimed.repeat;
      const { task } = claimed;
      await endAttempt(trx, task, 'blocked', { summary: why.reason }, now);
      return updateTask(
        trx,
        task,
        { state: 'blocked', ...NO_CLAIM, block_kind: why.kind, block_reason: why.reason },
        { type: 'blocked', actor: task.claimWorker!, detail: { kind: why.kind, reason: why.reason } },
        now,
      );
    });
  }

  /**
   * The task under this token's claim; or, when the claim is gone because this token's attempt already ended the
   * way this call would end it (`same` compares the rest), the task as it is: the worker retried a call whose
   * answer it lost, and is answered as the first call was. Only while no later claim took the task.
   */
  private async underClaim(
    trx: Db,
    id: string,
    token: number,
    outcome: string,
    same: (task: BoardTaskRecord, attempt: { summary: string | null }) => boolean,
  ): Promise<{ task: BoardTaskRecord } | { repeat: BoardTaskRecord }> {
    try {
      return { task: await loadClaimed(trx, id, token) };
    } catch (error) {
      if (!SwitchboardError.isInstance(error) || error.code !== 'CLAIM_LOST') throw error;
      const attempt = await endedAttempt(trx, id, token);
      const task = await loadTask(trx, id);
      if (attempt?.outcome === outcome && task.token === token && same(task, attempt)) return { repeat: task };
      throw error;
    }
  }

  release(id: string, token: number, reason: string | undefined, now: number): Promise<BoardTaskRecord> {
    return this.tx(async (trx) => {
      const task = await loadClaimed(trx, id, token);
      await endAttempt(trx, task, 'released', { summary: reason ?? null }, now);
      return updateTask(
        trx,
        task,
        { state: 'ready', ...NO_CLAIM },
        { type: 'released', actor: task.claimWorker!, detail: reason ? { reason } : {} },
        now,
      );
    });
  }

  fail(id: string, token: number, error: string, now: number): Promise<BoardTaskRecord> {
    return this.tx(async (trx) => this.failAttempt(trx, await loadClaimed(trx, id, token), 'failed', error, now));
  }

  /** A failed or expired attempt: counted; the task is ready again, or blocked (`gave_up`) once the budget is spent. */
  private async failAttempt(
    trx: Db,
    task: BoardTaskRecord,
    outcome: 'failed' | 'expired',
    error: string,
    now: number,
  ): Promise<BoardTaskRecord> {
    const failures = task.failures + 1;
    const state = afterFailure(failures, task.maxAttempts);
    const reason = state === 'blocked' ? await gaveUpReason(trx, task, error) : null;
    await endAttempt(trx, task, outcome, { error }, now);
    return updateTask(
      trx,
      task,
      { state, failures, ...NO_CLAIM, ...(reason ? { block_kind: 'gave_up', block_reason: reason } : {}) },
      {
        type: outcome === 'expired' ? 'reclaimed' : 'attempt_failed',
        actor: 'board',
        detail: { attempt: task.attempts, worker: task.claimWorker, error, failures },
      },
      now,
    );
  }

  noteRef(id: string, token: number, ref: string, now: number): Promise<void> {
    return this.tx(async (trx) => {
      const task = await loadClaimed(trx, id, token);
      await trx
        .updateTable('board_attempts')
        .set({ ref, heartbeat_at: now })
        .where('task_id', '=', id)
        .where('attempt', '=', task.attempts)
        .execute();
    });
  }

  async reclaimExpired(now: number, limit: number): Promise<BoardReclaim[]> {
    const candidates = await this.db
      .selectFrom('board_tasks')
      .select(['id', 'token'])
      .where('state', '=', 'running')
      .where((eb) =>
        eb.or([
          eb('claim_expires_at', '<', now),
          eb.and([eb('max_runtime_ms', 'is not', null), eb(eb('claimed_at', '+', eb.ref('max_runtime_ms')), '<', now)]),
        ]),
      )
      .orderBy('claim_expires_at')
      .limit(limit)
      .execute();
    const reclaimed: BoardReclaim[] = [];
    for (const candidate of candidates) {
      const done = await this.tx(async (trx) => {
        const task = await loadTask(trx, candidate.id);
        // Re-checked inside the transaction: a heartbeat or an end may have come in since the scan.
        if (task.state !== 'running' || task.token !== num(candidate.token)) return undefined;
        const overran = task.maxRuntimeMs !== null && task.claimedAt! + task.maxRuntimeMs < now;
        if (!overran && task.claimExpiresAt! >= now) return undefined;
        const attempt = await trx
          .selectFrom('board_attempts')
          .select('heartbeat_at')
          .where('task_id', '=', task.id)
          .where('attempt', '=', task.attempts)
          .executeTakeFirst();
        const since = new Date(num(attempt?.heartbeat_at ?? task.claimedAt)).toISOString();
        const error = overran
          ? `ran longer than the task's max runtime of ${task.maxRuntimeMs} ms`
          : `claim expired: no heartbeat since ${since}`;
        const after = await this.failAttempt(trx, task, 'expired', error, now);
        return { taskId: task.id, attempt: task.attempts, worker: task.claimWorker!, state: after.state as 'ready' | 'blocked' };
      });
      if (done) reclaimed.push(done);
    }
    return reclaimed;
  }

  async holdDispatcher(owner: string, ttlMs: number, now: number): Promise<boolean> {
    await this.db
      .insertInto('board_leases')
      .values({ name: DISPATCHER_LEASE, owner, expires_at: now + ttlMs })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ owner, expires_at: now + ttlMs })
          .where((eb) => eb.or([eb('board_leases.owner', '=', owner), eb('board_leases.expires_at', '<', now)])),
      )
      .execute();
    const lease = await this.db.selectFrom('board_leases').select('owner').where('name', '=', DISPATCHER_LEASE).executeTakeFirst();
    return lease?.owner === owner;
  }
}
