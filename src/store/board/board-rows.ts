/** The board's rows and the steps its transactions share: mapping, fenced loads, attempts, events, promotion. */
import type { Selectable, SelectQueryBuilder } from 'kysely';
import type { AttemptOutcome, BlockKind, BoardState } from '../../core/board.js';
import { SwitchboardError } from '../../core/errors.js';
import type { BoardAttemptRecord, BoardClaim, BoardCommentRecord, BoardEventRecord, BoardTaskRecord } from '../../ports/index.js';
import { json, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { appendEvent } from '../sql/writes.js';
import type { BoardAttemptsTable, BoardCommentsTable, BoardEventsTable, BoardTasksTable, Database } from '../schema/database.js';

export function toBoardTask(row: Selectable<BoardTasksTable>): BoardTaskRecord {
  return {
    id: row.id,
    board: row.board,
    title: row.title,
    body: row.body,
    assignee: row.assignee,
    priority: num(row.priority),
    labels: parse<string[]>(row.labels),
    creator: row.creator,
    idempotencyKey: row.idempotency_key,
    state: row.state as BoardState,
    blockKind: row.block_kind as BlockKind | null,
    blockReason: row.block_reason,
    maxAttempts: num(row.max_attempts),
    maxRuntimeMs: numOrNull(row.max_runtime_ms),
    attempts: num(row.attempts),
    failures: num(row.failures),
    token: num(row.token),
    claimWorker: row.claim_worker,
    claimedAt: numOrNull(row.claimed_at),
    claimExpiresAt: numOrNull(row.claim_expires_at),
    result: row.result,
    resultHash: row.result_hash,
    resultChars: numOrNull(row.result_chars),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    doneAt: numOrNull(row.done_at),
    conversation: row.conversation_id === null ? null : { id: row.conversation_id, hop: num(row.hop ?? 1) },
    trace: row.trace ?? null,
  };
}

export function toAttempt(row: Selectable<BoardAttemptsTable>): BoardAttemptRecord {
  return {
    taskId: row.task_id,
    attempt: num(row.attempt),
    token: num(row.token),
    worker: row.worker,
    ref: row.ref,
    startedAt: num(row.started_at),
    heartbeatAt: num(row.heartbeat_at),
    endedAt: numOrNull(row.ended_at),
    outcome: row.outcome as AttemptOutcome | null,
    summary: row.summary,
    error: row.error,
  };
}

export function toComment(row: Selectable<BoardCommentsTable>): BoardCommentRecord {
  return {
    seq: num(row.seq),
    taskId: row.task_id,
    author: row.author,
    body: row.body,
    attempt: numOrNull(row.attempt),
    createdAt: num(row.created_at),
  };
}

export function toBoardEvent(row: Selectable<BoardEventsTable>): BoardEventRecord {
  return {
    seq: num(row.seq),
    taskId: row.task_id,
    board: row.board,
    type: row.type,
    actor: row.actor,
    detail: parse(row.detail),
    createdAt: num(row.created_at),
  };
}

export function claimOf(task: BoardTaskRecord): BoardClaim {
  return { taskId: task.id, attempt: task.attempts, token: task.token, worker: task.claimWorker!, expiresAt: task.claimExpiresAt! };
}

export async function loadTask(db: Db, id: string): Promise<BoardTaskRecord> {
  const row = await db.selectFrom('board_tasks').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new SwitchboardError('BOARD_TASK_NOT_FOUND', `no board task "${id}" (list them with "switchboard board list")`);
  return toBoardTask(row);
}

/** The task, if `token` is its current claim; otherwise CLAIM_LOST, which says what happened to the task since. */
export async function loadClaimed(db: Db, id: string, token: number): Promise<BoardTaskRecord> {
  // The task's row is held first, before the attempt's, in every write under a claim, so they never deadlock.
  await lockTasks(db, [id]);
  const task = await loadTask(db, id);
  if (task.state === 'running' && task.token === token) return task;
  if (!Number.isSafeInteger(token) || token < 1 || token > task.token) {
    const issued = task.token === 0 ? 'none yet' : task.token === 1 ? 'only 1' : `1 to ${task.token}`;
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `token ${token} was never issued for task ${id} (its claims so far: ${issued}); use the token "board claim" gave you`,
      {
        taskId: id,
        token,
        currentToken: task.token,
      },
    );
  }
  const now =
    task.state === 'running' ? `claimed again (attempt ${task.attempts}, token ${task.token}, by ${task.claimWorker})` : `${task.state}`;
  throw new SwitchboardError(
    'CLAIM_LOST',
    `claim lost: task ${id} is ${now}; token ${token} is no longer its claim, so nothing was changed. Stop working on it.`,
    {
      taskId: id,
      token,
      currentToken: task.token,
      state: task.state,
    },
  );
}

export async function endAttempt(
  db: Db,
  task: BoardTaskRecord,
  outcome: AttemptOutcome,
  fields: { summary?: string | null; error?: string | null },
  now: number,
): Promise<void> {
  await db
    .updateTable('board_attempts')
    .set({ ended_at: now, outcome, summary: fields.summary ?? null, error: fields.error ?? null })
    .where('task_id', '=', task.id)
    .where('attempt', '=', task.attempts)
    .where('ended_at', 'is', null)
    .execute();
}

/**
 * A row changed between a transaction's read and its write: another transaction (PostgreSQL runs them concurrently,
 * on one gateway's pool as on several gateways) got there first. The board runs its transaction again from its
 * reads, which then see what the other one did (a lost claim, a repeat, nothing left to take back).
 */
export class StaleRow extends Error {
  constructor(id: string) {
    super(`board task ${id} changed under this transaction`);
  }
}

/**
 * Applies `changes` and writes the task's event (and its line in the gateway's journal) in the caller's transaction.
 * A compare-and-set: only while the task is still in the state and under the claim token it was read with
 * (StaleRow otherwise), so a worker's end and the sweep's take-back cannot both land.
 */
export async function updateTask(
  db: Db,
  task: BoardTaskRecord,
  changes: Partial<BoardTasksTable>,
  event: BoardChange,
  now: number,
): Promise<BoardTaskRecord> {
  const row = await db
    .updateTable('board_tasks')
    .set({ ...changes, updated_at: now })
    .where('id', '=', task.id)
    .where('state', '=', task.state)
    .where('token', '=', task.token)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new StaleRow(task.id);
  const updated = toBoardTask(row);
  await recordEvent(db, updated, event, now);
  return updated;
}

/** One change of a task, as its event records it; `key`: the ledger key of the tool call that made it. */
export interface BoardChange {
  type: string;
  actor: string;
  detail?: Record<string, unknown>;
  key?: string;
}

export async function recordEvent(db: Db, task: BoardTaskRecord, event: BoardChange, now: number): Promise<void> {
  const detail = { state: task.state, ...event.detail };
  await db
    .insertInto('board_events')
    .values({
      task_id: task.id,
      board: task.board,
      type: event.type,
      actor: event.actor,
      detail: json(detail),
      idempotency_key: event.key ?? null,
      created_at: now,
    })
    .execute();
  await appendEvent(
    db,
    { type: 'board.updated', payload: { taskId: task.id, board: task.board, event: event.type, actor: event.actor, ...detail } },
    now,
  );
}

/** The claim cleared, as every end of an attempt leaves it. */
export const NO_CLAIM = { claim_worker: null, claimed_at: null, claim_expires_at: null } as const;

/** Ids of the tasks `taskId` depends on that are not done. */
export async function openDependencies(db: Db, taskId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('board_deps')
    .innerJoin('board_tasks', 'board_tasks.id', 'board_deps.depends_on')
    .select('board_tasks.id')
    .where('board_deps.task_id', '=', taskId)
    .where('board_tasks.state', '!=', 'done')
    .execute();
  return rows.map((row) => row.id);
}

/** A task became done: each `todo` task that depended on it and has no other open dependency becomes ready, in the same transaction. */
export async function promoteDependents(db: Db, taskId: string, now: number): Promise<void> {
  // Hold the dependents' rows first (on PostgreSQL an UPDATE locks them till commit): two dependencies finishing at
  // once queue here, and the second then reads the first as done, instead of each reading the other as open.
  await lockTasks(db, db.selectFrom('board_deps').select('task_id').where('depends_on', '=', taskId));
  const dependents = await db
    .selectFrom('board_deps')
    .innerJoin('board_tasks', 'board_tasks.id', 'board_deps.task_id')
    .selectAll('board_tasks')
    .where('board_deps.depends_on', '=', taskId)
    .where('board_tasks.state', '=', 'todo')
    .execute();
  for (const row of dependents) {
    if ((await openDependencies(db, row.id)).length > 0) continue;
    await updateTask(db, toBoardTask(row), { state: 'ready' }, { type: 'promoted', actor: 'board', detail: { after: taskId } }, now);
  }
}

/** Holds the rows of these tasks till the transaction ends (a no-op write; SQLite's one writer holds everything). */
export async function lockTasks(db: Db, ids: string[] | SelectQueryBuilder<Database, 'board_deps', { task_id: string }>): Promise<void> {
  if (Array.isArray(ids) && ids.length === 0) return;
  await db
    .updateTable('board_tasks')
    .set((eb) => ({ token: eb.ref('token') }))
    .where('id', 'in', ids)
    .execute();
}

/**
 * Why a task gave up: the worker and diagnostic of each failed attempt that counted (those since the task was last
 * made ready by hand, which starts a fresh budget), one per line.
 */
export async function gaveUpReason(db: Db, task: BoardTaskRecord, last: string): Promise<string> {
  const rows = await db
    .selectFrom('board_attempts')
    .selectAll()
    .where('task_id', '=', task.id)
    .where('outcome', 'in', ['expired', 'failed'])
    .orderBy('attempt', 'desc')
    .limit(task.failures)
    .execute();
  const lines = rows.reverse().map((row) => `attempt ${num(row.attempt)} (${row.worker}): ${row.error ?? row.outcome}`);
  lines.push(`attempt ${task.attempts} (${task.claimWorker}): ${last}`);
  return `gave up after ${task.failures + 1} failed attempts (max ${task.maxAttempts}):\n${lines.join('\n')}`;
}

/** The change a tool call's ledger key already made, if it made one: its retry makes no second one. */
export async function changeByKey(
  db: Db,
  key: string | undefined,
): Promise<{ taskId: string; detail: Record<string, unknown> } | undefined> {
  if (key === undefined) return undefined;
  const row = await db.selectFrom('board_events').select(['task_id', 'detail']).where('idempotency_key', '=', key).executeTakeFirst();
  return row && { taskId: row.task_id, detail: parse(row.detail) as Record<string, unknown> };
}

/**
 * The attempt a token's claim was, once it ended: a worker that retries a call whose answer it lost (the same
 * complete or block again) is answered as the first call was, instead of with CLAIM_LOST.
 */
export async function endedAttempt(db: Db, id: string, token: number): Promise<Selectable<BoardAttemptsTable> | undefined> {
  return db
    .selectFrom('board_attempts')
    .selectAll()
    .where('task_id', '=', id)
    .where('token', '=', token)
    .where('ended_at', 'is not', null)
    .executeTakeFirst();
}
