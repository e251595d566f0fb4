/** Row <-> record mapping shared by the Kysely stores. JSON columns hold text; times are integer ms. */
import type { Insertable, Kysely, Selectable, Transaction } from 'kysely';
import type { QueueMode } from '../../core/queue-mode.js';
import type { RunStatus } from '../../core/run-status.js';
import type {
  EventRecord,
  ExchangePhase,
  ExchangeRecord,
  ExchangeReplyState,
  InputRecord,
  InputStatus,
  OutboxRecord,
  OutboxStatus,
  ReplyRoute,
  RunRecord,
  SessionRecord,
  SessionState,
  TranscriptEntry,
} from '../../ports/index.js';
import type {
  Database,
  EventsTable,
  ExchangesTable,
  InputsTable,
  OutboxTable,
  RunsTable,
  SessionsTable,
  TranscriptTable,
} from '../schema/database.js';

export type Db = Kysely<Database> | Transaction<Database>;

export const json = (value: unknown): string => JSON.stringify(value ?? null);
export const parse = <T>(text: string | null): T => (text === null ? (null as T) : (JSON.parse(text) as T));
export const num = (value: number | string | bigint | null): number => (value === null ? 0 : Number(value));
export const numOrNull = (value: number | string | bigint | null): number | null => (value === null ? null : Number(value));

export function toSession(row: Selectable<SessionsTable>): SessionRecord {
  return {
    key: row.key,
    agentId: row.agent_id,
    label: row.label,
    parentKey: row.parent_key,
    depth: num(row.depth),
    route: parse<ReplyRoute | null>(row.route),
    state: row.state as SessionState,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    lastRunAt: numOrNull(row.last_run_at),
    archivedAt: numOrNull(row.archived_at),
  };
}

export function toInput(row: Selectable<InputsTable>): InputRecord {
  return {
    id: row.id,
    seq: num(row.seq),
    sessionKey: row.session_key,
    idempotencyKey: row.idempotency_key,
    mode: row.mode as QueueMode,
    status: row.status as InputStatus,
    attempts: num(row.attempts),
    text: row.text,
    provenance: parse(row.provenance),
    runId: row.run_id,
    note: row.note,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export function toTranscript(row: Selectable<TranscriptTable>): TranscriptEntry {
  return {
    seq: num(row.seq),
    sessionKey: row.session_key,
    role: row.role as TranscriptEntry['role'],
    content: parse(row.content),
    provenance: parse(row.provenance),
    inputId: row.input_id,
    runId: row.run_id,
    createdAt: num(row.created_at),
  };
}

export function toRun(row: Selectable<RunsTable>): RunRecord {
  return {
    id: row.id,
    sessionKey: row.session_key,
    agentId: row.agent_id,
    status: row.status as RunStatus,
    owner: row.owner,
    epoch: num(row.epoch),
    model: row.model,
    startedAt: num(row.started_at),
    endedAt: numOrNull(row.ended_at),
    usage: {
      inputTokens: num(row.input_tokens),
      outputTokens: num(row.output_tokens),
      modelCalls: num(row.model_calls),
      steps: num(row.steps),
      cachedInputTokens: num(row.cached_input_tokens),
    },
    preambleChars: num(row.preamble_chars),
    promptChars: num(row.prompt_chars),
    request: { bytes: num(row.request_bytes), systemBytes: num(row.request_system_bytes), toolBytes: num(row.request_tool_bytes) },
    finalText: row.final_text,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    attempt: num(row.attempt ?? 1),
    waitingUntil: row.wake_keys === null || row.wake_keys === undefined ? null : numOrNull(row.wake_at),
  };
}

export function toOutbox(row: Selectable<OutboxTable>): OutboxRecord {
  return {
    id: row.id,
    kind: row.kind,
    target: row.target,
    payload: parse(row.payload),
    idempotencyKey: row.idempotency_key,
    status: row.status as OutboxStatus,
    attempts: num(row.attempts),
    nextAttemptAt: num(row.next_attempt_at),
    lastError: row.last_error,
    createdAt: num(row.created_at),
    deliveredAt: numOrNull(row.delivered_at),
    claimToken: num(row.claim_token),
  };
}

export function toEvent(row: Selectable<EventsTable>): EventRecord {
  return {
    seq: num(row.seq),
    type: row.type as EventRecord['type'],
    sessionKey: row.session_key,
    runId: row.run_id,
    payload: parse(row.payload),
    createdAt: num(row.created_at),
  };
}

export function toExchange(row: Selectable<ExchangesTable>): ExchangeRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    hop: num(row.hop),
    requesterSession: row.requester_session,
    requesterAgent: row.requester_agent,
    targetSession: row.target_session,
    targetAgent: row.target_agent,
    requestInputId: row.request_input_id,
    maxTurns: num(row.max_turns),
    phase: row.phase as ExchangePhase,
    turn: num(row.turn),
    replyState: row.reply_state as ExchangeReplyState,
    waiterRunId: row.waiter_run_id,
    replyRunId: row.reply_run_id,
    replyStatus: row.reply_status,
    replyText: row.reply_text,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

/** A new run's row: what it is and who holds it, with nothing used or said yet (a start's, or a fork's). */
export function newRunRow(run: {
  id: string;
  sessionKey: string;
  agentId: string;
  status: string;
  owner: string;
  epoch: number;
  model: string;
  now: number;
}): Insertable<RunsTable> {
  return {
    id: run.id,
    session_key: run.sessionKey,
    agent_id: run.agentId,
    status: run.status,
    owner: run.owner,
    epoch: run.epoch,
    model: run.model,
    started_at: run.now,
    ended_at: null,
    input_tokens: 0,
    output_tokens: 0,
    model_calls: 0,
    steps: 0,
    preamble_chars: 0,
    prompt_chars: 0,
    final_text: null,
    error_code: null,
    error_message: null,
  };
}
