/** The task board's table types (src/board). JSON columns hold text; times are integer milliseconds. */
import type { Generated } from 'kysely';

export interface BoardTasksTable {
  id: string;
  board: string;
  title: string;
  body: string;
  assignee: string | null;
  priority: number;
  labels: string;
  creator: string;
  idempotency_key: string | null;
  state: string;
  block_kind: string | null;
  block_reason: string | null;
  max_attempts: number;
  max_runtime_ms: number | null;
  attempts: number;
  failures: number;
  token: number;
  claim_worker: string | null;
  claimed_at: number | null;
  claim_expires_at: number | null;
  result: string | null;
  result_hash: string | null;
  result_chars: number | null;
  created_at: number;
  updated_at: number;
  done_at: number | null;
  /** The hop budget: the conversation the creating run was in, one hop further (null when no run made it). */
  conversation_id: string | null;
  hop: number | null;
  /** The W3C traceparent of the span that created it (0028). */
  trace: string | null;
}

export interface BoardDepsTable {
  task_id: string;
  depends_on: string;
  created_at: number;
}

export interface BoardCommentsTable {
  seq: Generated<number>;
  task_id: string;
  author: string;
  body: string;
  attempt: number | null;
  created_at: number;
}

export interface BoardAttemptsTable {
  task_id: string;
  attempt: number;
  token: number;
  worker: string;
  ref: string | null;
  started_at: number;
  heartbeat_at: number;
  ended_at: number | null;
  outcome: string | null;
  summary: string | null;
  error: string | null;
}

export interface BoardEventsTable {
  seq: Generated<number>;
  task_id: string;
  board: string;
  type: string;
  actor: string;
  detail: string;
  /** The ledger key of the tool call that made this change, if one did. */
  idempotency_key: string | null;
  created_at: number;
}

export interface BoardLeasesTable {
  name: string;
  owner: string;
  expires_at: number;
  /** Grows each time the lease changes hands: the fence of the holder's writes. */
  epoch: Generated<number>;
}
