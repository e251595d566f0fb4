/**
 * The task board over Kysely (docs/board.md): the claims and what a worker does under one. Each method is one
 * transaction; a worker's writes are fenced by the claim's token, which grows with every claim, so a worker whose
 * claim was taken back changes nothing (CLAIM_LOST). Composed of the reads (KyselyBoardReads), the edits of people
 * and agents (KyselyBoardEdits) and the transactions they share (BoardTransactions); a worker's claims are here.
 */
import { KyselyBoardEdits } from './board-edits.js';
import { KyselyBoardReads } from './board-reads.js';
import { BoardTransactions, DISPATCHER_LEASE } from './board-transactions.js';
import { afterFailure, claimOverdue, type BlockKind, type BoardState } from '../../core/board.js';
import { SwitchboardError } from '../../core/errors.js';
import { freezeResult } from '../../core/subagent.js';
import { nodeHashing } from '../../kit/hashing.js';
import { sql, type Kysely } from 'kysely';
import type {
  BoardClaim,
  BoardClaimRequest,
  BoardCommentRecord,
  BoardEventRecord,
  BoardReclaim,
  BoardStore,
  BoardTaskFilter,
  BoardTaskRecord,
  BoardTaskView,
  DispatcherFence,
  NewBoardTask,
} from '../../ports/index.js';
import {
  claimOf,
  endAttempt,
  endedAttempt,
  gaveUpReason,
  loadClaimed,
  loadTask,
  lockTasks,
  NO_CLAIM,
  promoteDependents,
  recordEvent,
  StaleRow,
  toBoardTask,
  updateTask,
} from './board-rows.js';
import { num, type Db } from '../sql/rows.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Database } from '../schema/database.js';

/** A claim an adapter makes in one statement, with the rows the portable claim writes. */
export type OneStatementClaim = (db: Kysely<Database>, request: BoardClaimRequest, now: number) => Promise<BoardClaim | undefined>;

export class KyselyBoardStore implements BoardStore {
  private readonly tx: BoardTransactions;
  private readonly reads: KyselyBoardReads;
  private readonly edits: KyselyBoardEdits;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    /** Set on the dispatcher's view (BoardStore.fenced): every transaction checks it first. */
    private readonly fence?: DispatcherFence,
    /** An adapter's claim in one statement, where it has one (PostgreSQL); the portable claim otherwise. */
    private readonly oneStatementClaim?: OneStatementClaim,
  ) {
    this.tx = new BoardTransactions(db, dialect, fence);
    this.reads = new KyselyBoardReads(db, dialect);
    this.edits = new KyselyBoardEdits(this.tx, dialect);
  }

  fenced(fence: DispatcherFence): BoardStore {
    return new KyselyBoardStore(this.db, this.dialect, fence, this.oneStatementClaim);
  }

  get(id: string): Promise<BoardTaskRecord | undefined> {
    return this.reads.get(id);
  }

  view(id: string, options?: { comments?: number }): Promise<BoardTaskView | undefined> {
    return this.reads.view(id, options);
  }

  list(filter?: BoardTaskFilter): Promise<BoardTaskRecord[]> {
    return this.reads.list(filter);
  }

  workerSeen(worker: string): Promise<boolean> {
    return this.reads.workerSeen(worker);
  }

  dependencies(taskIds: readonly string[]): Promise<Record<string, string[]>> {
    return this.reads.dependencies(taskIds);
  }

  events(filter: { taskId?: string; board?: string; afterSeq?: number; limit?: number }): Promise<BoardEventRecord[]> {
    return this.reads.events(filter);
  }

  create(task: NewBoardTask, now: number): Promise<{ task: BoardTaskRecord; created: boolean }> {
    return this.edits.create(task, now);
  }

  link(taskId: string, dependsOn: string, actor: string, now: number): Promise<BoardTaskRecord> {
    return this.edits.link(taskId, dependsOn, actor, now);
  }

  move(id: string, to: BoardState, change: { actor: string; reason?: string }, now: number): Promise<BoardTaskRecord> {
    return this.edits.move(id, to, change, now);
  }

  review(id: string, review: { approve: boolean; actor: string; comment?: string; key?: string }, now: number): Promise<BoardTaskRecord> {
    return this.edits.review(id, review, now);
  }

  comment(id: string, comment: { author: string; body: string; token?: number; key?: string }, now: number): Promise<BoardCommentRecord> {
    return this.edits.comment(id, comment, now);
  }

  claim(request: BoardClaimRequest, now: number): Promise<BoardClaim | undefined> {
    // The dispatcher's claims take the portable path, whose transaction checks its fence first.
    if (this.oneStatementClaim && !this.fence) return this.oneStatementClaim(this.db, request, now);
    return this.tx.run(async (trx) => {
      let query = trx.selectFrom('board_tasks').selectAll().where('state', '=', 'ready');
      if (request.taskId) query = query.where('id', '=', request.taskId);
      if (request.board) query = query.where('board', '=', request.board);
      if (request.assignee) query = query.where('assignee', '=', request.assignee);
      else query = query.where((eb) => eb.or([eb('assignee', 'is', null), eb('assignee', '=', request.worker)]));
      query = query.orderBy('priority', 'desc').orderBy('created_at').orderBy('id').limit(1);
      // Several gateways on one PostgreSQL: each takes a different row instead of queueing on the same one.
      const row = await this.dialect.lockRowsSkipLocked(query).executeTakeFirst();
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
    return this.tx.run(async (trx) => {
      const task = await loadClaimed(trx, id, token);
      // Under this token only: a stale worker's heartbeat must not extend, nor hand back, a later worker's claim.
      const row = await trx
        .updateTable('board_tasks')
        .set({ claim_expires_at: now + ttlMs })
        .where('id', '=', id)
        .where('state', '=', 'running')
        .where('token', '=', token)
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new StaleRow(id);
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
    return this.tx.run(async (trx) => {
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
    return this.tx.run(async (trx) => {
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
    return this.tx.run(async (trx) => {
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
    return this.tx.run(async (trx) => this.failAttempt(trx, await loadClaimed(trx, id, token), 'failed', error, now));
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
        detail: { attempt: task.attempts, worker: task.claimWorker, error, failures, ...(reason ? { blockKind: 'gave_up' } : {}) },
      },
      now,
    );
  }

  noteRef(id: string, token: number, ref: string, now: number): Promise<void> {
    return this.tx.run(async (trx) => {
      const task = await loadClaimed(trx, id, token);
      await trx
        .updateTable('board_attempts')
        .set({ ref, heartbeat_at: now })
        .where('task_id', '=', id)
        .where('attempt', '=', task.attempts)
        .where('token', '=', token)
        .where('ended_at', 'is', null)
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
      const done = await this.tx.run(async (trx) => {
        await lockTasks(trx, [candidate.id]);
        const task = await loadTask(trx, candidate.id);
        // Re-checked inside the transaction: a heartbeat or an end may have come in since the scan.
        if (task.state !== 'running' || task.token !== num(candidate.token)) return undefined;
        const overdue = claimOverdue(
          { claimedAt: task.claimedAt!, claimExpiresAt: task.claimExpiresAt!, maxRuntimeMs: task.maxRuntimeMs },
          now,
        );
        if (!overdue) return undefined;
        const attempt = await trx
          .selectFrom('board_attempts')
          .select('heartbeat_at')
          .where('task_id', '=', task.id)
          .where('attempt', '=', task.attempts)
          .executeTakeFirst();
        const since = new Date(num(attempt?.heartbeat_at ?? task.claimedAt)).toISOString();
        const error =
          overdue === 'overran'
            ? `ran longer than the task's max runtime of ${task.maxRuntimeMs} ms`
            : `claim expired: no heartbeat since ${since}`;
        const after = await this.failAttempt(trx, task, 'expired', error, now);
        return { taskId: task.id, attempt: task.attempts, worker: task.claimWorker!, state: after.state as 'ready' | 'blocked' };
      });
      if (done) reclaimed.push(done);
    }
    return reclaimed;
  }

  async holdDispatcher(owner: string, ttlMs: number, now: number): Promise<DispatcherFence | undefined> {
    // Taken when free, expired or already the owner's; the epoch grows only when it changes hands.
    const [held] = await this.db
      .insertInto('board_leases')
      .values({ name: DISPATCHER_LEASE, owner, expires_at: now + ttlMs, epoch: 1 })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({
            owner,
            expires_at: now + ttlMs,
            epoch: sql<number>`CASE WHEN board_leases.owner = ${owner} THEN board_leases.epoch ELSE board_leases.epoch + 1 END`,
          })
          .where((eb) => eb.or([eb('board_leases.owner', '=', owner), eb('board_leases.expires_at', '<', now)])),
      )
      .returning(['owner', 'epoch'])
      .execute();
    return held ? { owner, epoch: num(held.epoch) } : undefined;
  }
}
