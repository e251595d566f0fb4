/**
 * The board's claim on PostgreSQL as one statement: pick the task (`FOR UPDATE SKIP LOCKED`, so concurrent
 * claimers take different rows), set its claim, write the attempt, the task's event and the journal line.
 * One round trip and one commit instead of seven round trips; the rows are those the portable claim writes.
 */
import { sql, type Kysely } from 'kysely';
import type { BoardClaim, BoardClaimRequest } from '../../ports/index.js';
import { claimOf, toBoardTask } from '../board/board-rows.js';
import type { Database, BoardTasksTable } from '../schema/database.js';

export async function claimInOneStatement(db: Kysely<Database>, request: BoardClaimRequest, now: number): Promise<BoardClaim | undefined> {
  const filters = [sql`state = 'ready'`];
  if (request.taskId) filters.push(sql`id = ${request.taskId}`);
  if (request.board) filters.push(sql`board = ${request.board}`);
  filters.push(request.assignee ? sql`assignee = ${request.assignee}` : sql`(assignee IS NULL OR assignee = ${request.worker})`);
  const { rows } = await sql<BoardTasksTable>`
    WITH picked AS (
      SELECT id FROM board_tasks WHERE ${sql.join(filters, sql` AND `)}
      ORDER BY priority DESC, created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE board_tasks t SET state = 'running', attempts = t.attempts + 1, token = t.token + 1, claim_worker = ${request.worker},
        claimed_at = ${now}, claim_expires_at = ${now + request.ttlMs}, updated_at = ${now}
      FROM picked WHERE t.id = picked.id
      RETURNING t.*
    ), attempt AS (
      INSERT INTO board_attempts (task_id, attempt, token, worker, ref, started_at, heartbeat_at)
      SELECT id, attempts, token, claim_worker, ${request.ref ?? null}, ${now}, ${now} FROM claimed
    ), event AS (
      INSERT INTO board_events (task_id, board, type, actor, detail, created_at)
      SELECT id, board, 'claimed', claim_worker, json_build_object('state', state, 'attempt', attempts, 'token', token)::text, ${now} FROM claimed
    ), journal AS (
      INSERT INTO events (type, session_key, run_id, payload, created_at)
      SELECT 'board.updated', NULL, NULL,
        json_build_object('taskId', id, 'board', board, 'event', 'claimed', 'actor', claim_worker, 'state', state, 'attempt', attempts, 'token', token)::text, ${now}
      FROM claimed
    )
    SELECT * FROM claimed`.execute(db);
  return rows[0] ? claimOf(toBoardTask(rows[0])) : undefined;
}
