/** Table types for Kysely. JSON columns hold text; times are integer milliseconds. */
import type { Generated } from 'kysely';
import type { A2APushConfigsTable, A2ARemoteTasksTable, A2ATaskEventsTable, A2ATasksTable } from './a2a.js';
import type {
  BoardAttemptsTable,
  BoardCommentsTable,
  BoardDepsTable,
  BoardEventsTable,
  BoardLeasesTable,
  BoardTasksTable,
} from './board.js';
import type { ChannelPartsTable, ChannelSendersTable } from './channels.js';
import type { ApprovalsTable, BudgetHoldsTable, BudgetSpendTable } from './gates.js';
import type { ScheduleAnchorsTable, ScheduleSlotsTable } from './schedules.js';
import type {
  GatewaysTable,
  MailboxReservationsTable,
  MemoryChunksTable,
  MemoryDocsTable,
  SharedSecretsTable,
  TeamStatesTable,
} from './shared.js';

export type * from './a2a.js';
export type * from './board.js';
export type * from './channels.js';
export type * from './gates.js';
export type * from './shared.js';

export interface SessionsTable {
  key: string;
  agent_id: string;
  label: string | null;
  parent_key: string | null;
  depth: number;
  route: string | null;
  state: string;
  created_at: number;
  updated_at: number;
  last_run_at: number | null;
  /** Set when a person archived the session (the console, `sessions archive`); null while it is current. */
  archived_at: number | null;
}

export interface InputsTable {
  seq: Generated<number>;
  id: string;
  session_key: string;
  idempotency_key: string;
  mode: string;
  status: string;
  attempts: number;
  text: string;
  provenance: string;
  run_id: string | null;
  note: string | null;
  created_at: number;
  updated_at: number;
}

export interface TranscriptTable {
  seq: Generated<number>;
  session_key: string;
  role: string;
  content: string;
  provenance: string | null;
  input_id: string | null;
  run_id: string | null;
  created_at: number;
}

export interface RunsTable {
  id: string;
  session_key: string;
  agent_id: string;
  status: string;
  owner: string;
  epoch: number;
  model: string;
  started_at: number;
  ended_at: number | null;
  input_tokens: number;
  output_tokens: number;
  model_calls: number;
  steps: number;
  preamble_chars: number;
  prompt_chars: number;
  request_bytes: Generated<number>;
  request_system_bytes: Generated<number>;
  request_tool_bytes: Generated<number>;
  cached_input_tokens: Generated<number>;
  final_text: string | null;
  error_code: string | null;
  error_message: string | null;
  /** 1, and one more each time the run resumed after a crash or a lost lease (migration 0026). */
  attempt: Generated<number>;
  /** A run suspended in a wait: its deadline, kept until it resumes (migration 0026). */
  wake_at: number | null;
  /** JSON: the journal keys whose events wake a run suspended in a wait; null once woken (or never waiting). */
  wake_keys: string | null;
  /** JSON: each waiting call's own deadline, by `<step>:<index>`, until the run resumes. */
  wait_deadlines: string | null;
}

export interface OutboxTable {
  id: string;
  kind: string;
  target: string;
  payload: string;
  idempotency_key: string;
  status: string;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
  /** The last delivery attempt's claim; grows with every claim (migration 0010). */
  claim_token: Generated<number>;
  /** The gateway whose attempt holds the row, while one does. */
  claimed_by: string | null;
}

export interface SessionLeaseTable {
  session_key: string;
  owner: string;
  epoch: number;
  expires_at: number;
}

export interface EventsTable {
  seq: Generated<number>;
  type: string;
  session_key: string | null;
  run_id: string | null;
  payload: string;
  created_at: number;
}

export interface ExchangesTable {
  id: string;
  conversation_id: string;
  hop: number;
  requester_session: string;
  requester_agent: string;
  target_session: string;
  target_agent: string;
  request_input_id: string;
  max_turns: number;
  phase: string;
  turn: number;
  reply_state: string;
  waiter_run_id: string | null;
  reply_run_id: string | null;
  reply_status: string | null;
  reply_text: string | null;
  created_at: number;
  updated_at: number;
}

export interface SubagentsTable {
  id: string;
  session_key: string;
  parent_session: string;
  root_session: string;
  agent_id: string;
  depth: number;
  role: string;
  label: string | null;
  task: string;
  correlation_id: string;
  first_run_id: string;
  run_id: string | null;
  model: string | null;
  tools: string;
  timeout_seconds: number;
  workdir: string | null;
  worktree: string | null;
  state: string;
  history: string;
  waiting: number;
  frozen_text: string | null;
  result: string | null;
  result_hash: string | null;
  result_chars: number | null;
  usage: string | null;
  diagnostic: string | null;
  completion: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  settled_at: number | null;
  archived_at: number | null;
  updated_at: number;
  /** The interrupted run whose retry was noted (noteRetry), so that it is noted once. */
  retry_of: string | null;
  runtime: string | null;
}

export interface ToolCallsTable {
  key: string;
  scope: string;
  step: number;
  call_index: number;
  tool: string;
  args_hash: string;
  session_key: string;
  first_run_id: string;
  run_id: string;
  state: string;
  result: string | null;
  diverged_from: string | null;
  calls: number;
  created_at: number;
  updated_at: number;
}

/** A run's committed steps (ports/steps.ts); JSON columns hold text. */
export interface RunStepsTable {
  run_id: string;
  step: number;
  attempt: number;
  session_key: string;
  model: string;
  response: string;
  tool_names: string;
  input_ids: string;
  results: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  request_bytes: number;
  request_system_bytes: number;
  request_tool_bytes: number;
  started_at: number;
  answered_at: number;
  settled_at: number | null;
}

export interface RateMarksTable {
  bucket: string;
  at: number;
  ref: string;
}

export interface Database {
  board_tasks: BoardTasksTable;
  board_deps: BoardDepsTable;
  board_comments: BoardCommentsTable;
  board_attempts: BoardAttemptsTable;
  board_events: BoardEventsTable;
  board_leases: BoardLeasesTable;
  tool_calls: ToolCallsTable;
  run_steps: RunStepsTable;
  rate_marks: RateMarksTable;
  subagents: SubagentsTable;
  a2a_remote_tasks: A2ARemoteTasksTable;
  a2a_tasks: A2ATasksTable;
  a2a_push_configs: A2APushConfigsTable;
  a2a_task_events: A2ATaskEventsTable;
  exchanges: ExchangesTable;
  sessions: SessionsTable;
  inputs: InputsTable;
  transcript: TranscriptTable;
  runs: RunsTable;
  outbox: OutboxTable;
  session_lease: SessionLeaseTable;
  events: EventsTable;
  gateways: GatewaysTable;
  shared_secrets: SharedSecretsTable;
  memory_docs: MemoryDocsTable;
  memory_chunks: MemoryChunksTable;
  mailbox_reservations: MailboxReservationsTable;
  team_states: TeamStatesTable;
  channel_senders: ChannelSendersTable;
  channel_parts: ChannelPartsTable;
  approvals: ApprovalsTable;
  budget_spend: BudgetSpendTable;
  budget_holds: BudgetHoldsTable;
  schedule_anchors: ScheduleAnchorsTable;
  schedule_slots: ScheduleSlotsTable;
}
