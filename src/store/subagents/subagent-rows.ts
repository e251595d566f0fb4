/** Sub-agent rows over Kysely: the mapping and the writes made inside other transactions (a run's start and commit, a spawn, a settle). */
import type { Selectable } from 'kysely';
import {
  elapsedWithoutDowntime,
  COMPLETION_KIND,
  decideRunEnd,
  freezeResult,
  type CompletionEvent,
  type SubagentRole,
  type SubagentState,
  type SubagentUsage,
} from '../../core/subagent.js';
import type { CompletionState, RunCommit, SubagentRecord, SubagentSettlement, SubagentTransition } from '../../ports/index.js';
import { json, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { appendEvent, insertOutbox } from '../sql/writes.js';
import type { SubagentsTable } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';
import { nodeHashing } from '../../kit/hashing.js';

export const LIVE: SubagentState[] = ['pending', 'running'];

export function toSubagent(row: Selectable<SubagentsTable>): SubagentRecord {
  return {
    id: row.id,
    sessionKey: row.session_key,
    parentSession: row.parent_session,
    rootSession: row.root_session,
    agentId: row.agent_id,
    depth: num(row.depth),
    role: row.role as SubagentRole,
    label: row.label,
    task: row.task,
    correlationId: row.correlation_id,
    firstRunId: row.first_run_id,
    runId: row.run_id,
    model: row.model,
    tools: parse<string[]>(row.tools),
    timeoutSeconds: num(row.timeout_seconds),
    workdir: row.workdir,
    worktree: parse(row.worktree),
    state: row.state as SubagentState,
    history: parse<SubagentTransition[]>(row.history),
    waiting: num(row.waiting) === 1,
    frozenText: row.frozen_text,
    result: row.result,
    resultHash: row.result_hash,
    resultChars: numOrNull(row.result_chars),
    usage: parse<SubagentUsage | null>(row.usage),
    diagnostic: row.diagnostic,
    completion: row.completion as CompletionState | null,
    attempts: num(row.attempts),
    retryOf: row.retry_of ?? null,
    runtime: row.runtime ?? null,
    createdAt: num(row.created_at),
    startedAt: numOrNull(row.started_at),
    settledAt: numOrNull(row.settled_at),
    archivedAt: numOrNull(row.archived_at),
    updatedAt: num(row.updated_at),
  };
}

export function event(record: SubagentRecord, detail: Record<string, unknown> = {}) {
  return {
    type: 'subagent.updated' as const,
    sessionKey: record.parentSession,
    runId: record.runId,
    payload: {
      subagentId: record.id,
      childSessionKey: record.sessionKey,
      parentSessionKey: record.parentSession,
      state: record.state,
      waiting: record.waiting,
      ...detail,
    },
  };
}

/** `forUpdate` (PostgreSQL only) holds the row until the transaction ends: what is decided from it cannot go stale. */
/** The sub-agent's row; with `hold`, held to the end of the transaction where the engine locks rows. */
export async function getRow(db: Db, id: string, hold?: SqlDialect): Promise<SubagentRecord | undefined> {
  const query = db.selectFrom('subagents').selectAll().where('id', '=', id);
  const row = await (hold ? hold.lockRows(query) : query).executeTakeFirst();
  return row ? toSubagent(row) : undefined;
}

/** Marks the session's sub-agent running when its first run starts (inside RunStore.start's transaction). */
export async function startSubagentRun(db: Db, subagentId: string, runId: string, now: number): Promise<void> {
  const record = await getRow(db, subagentId);
  if (!record || !LIVE.includes(record.state)) return;
  if (record.state === 'running') {
    await db.updateTable('subagents').set({ run_id: runId, updated_at: now }).where('id', '=', record.id).execute();
    return;
  }
  const history = [...record.history, { state: 'running' as const, at: now }];
  const started = await db
    .updateTable('subagents')
    .set({ state: 'running', run_id: runId, started_at: now, history: json(history), updated_at: now })
    .where('id', '=', record.id)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  if (Number(started.numUpdatedRows) === 1) await appendEvent(db, event({ ...record, state: 'running', runId }), now);
}

/** How many of a parent's children have not reached it yet (live, or their completion still pending), `except` one. */
export async function undelivered(db: Db, parentSession: string, except?: string): Promise<number> {
  let query = db
    .selectFrom('subagents')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('parent_session', '=', parentSession)
    .where((eb) => eb.or([eb('completion', 'is', null), eb('completion', '=', 'pending')]));
  if (except) query = query.where('id', '!=', except);
  const row = await query.executeTakeFirst();
  return num(row?.n ?? 0);
}

/**
 * What the end of a run in a sub-agent's session does to it (inside RunStore.commit's transaction): it
 * settles, or freezes its answer while children or inputs are still on their way to it (seed 002 section 7.2).
 */
export async function endSubagentRun(db: Db, commit: RunCommit, now: number, dialect: SqlDialect): Promise<void> {
  if (!commit.subagent) return;
  // Its row is held before its queued inputs are counted: a follow-up stored meanwhile (SubagentStore.reopen holds the
  // row too) is either counted here or sees the sub-agent settled, never left queued behind a settled sub-agent.
  const record = await getRow(db, commit.subagent.id, dialect);
  if (!record || !LIVE.includes(record.state)) return;
  const queued = await db
    .selectFrom('inputs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('session_key', '=', record.sessionKey)
    .where('status', '=', 'queued')
    .executeTakeFirst();
  const decision = decideRunEnd({
    status: commit.outcome.status,
    finalText: commit.outcome.finalText,
    error: commit.subagent.error,
    frozenText: record.frozenText,
    liveChildren: await undelivered(db, record.sessionKey),
    queuedInputs: num(queued?.n ?? 0),
  });
  if (decision.kind === 'none') return;
  if (decision.kind === 'wait') {
    const history = record.waiting ? record.history : [...record.history, { state: 'waiting' as const, at: now }];
    await db
      .updateTable('subagents')
      .set({ waiting: 1, frozen_text: decision.frozenText, history: json(history), updated_at: now })
      .where('id', '=', record.id)
      .execute();
    await appendEvent(db, event({ ...record, waiting: true }), now);
    return;
  }
  await settleRow(
    db,
    record,
    {
      state: decision.state,
      diagnostic: decision.diagnostic,
      text: decision.text,
      notifyParent: true,
      maxResultChars: commit.subagent.maxResultChars,
    },
    now,
    commit.trace,
  );
}

export async function settleRow(
  db: Db,
  record: SubagentRecord,
  settlement: SubagentSettlement,
  now: number,
  /** The traceparent of the run whose commit settles it: its completion's delivery hangs from that run. */
  sender?: string,
): Promise<SubagentRecord | undefined> {
  // The child's runs, once: their usage summed, and their spans for the time it ran without a gateway's downtime.
  const runs = (
    await db
      .selectFrom('runs')
      .select(['input_tokens', 'output_tokens', 'model_calls', 'started_at', 'ended_at', 'status'])
      .where('session_key', '=', record.sessionKey)
      .execute()
  ).map((row) => ({
    inputTokens: num(row.input_tokens),
    outputTokens: num(row.output_tokens),
    modelCalls: num(row.model_calls),
    startedAt: num(row.started_at),
    endedAt: numOrNull(row.ended_at),
    status: row.status,
  }));
  const total = (field: 'inputTokens' | 'outputTokens' | 'modelCalls') => runs.reduce((sum, run) => sum + run[field], 0);
  const usage: SubagentUsage = {
    inputTokens: total('inputTokens'),
    outputTokens: total('outputTokens'),
    modelCalls: total('modelCalls'),
    runs: runs.length,
    durationMs: elapsedWithoutDowntime(record.startedAt ?? record.createdAt, now, runs),
  };
  const frozen = freezeResult(settlement.text ?? record.frozenText, settlement.maxResultChars, nodeHashing.sha256);
  const history = [
    ...record.history,
    { state: settlement.state, at: now, ...(settlement.diagnostic ? { diagnostic: settlement.diagnostic } : {}) },
  ];
  const completion: CompletionState = settlement.notifyParent ? 'pending' : 'skipped';
  const updated = await db
    .updateTable('subagents')
    .set({
      state: settlement.state,
      waiting: 0,
      result: frozen.result,
      result_hash: frozen.resultHash,
      result_chars: frozen.resultChars,
      usage: json(usage),
      diagnostic: settlement.diagnostic,
      completion,
      history: json(history),
      settled_at: now,
      updated_at: now,
    })
    .where('id', '=', record.id)
    .where('state', 'in', LIVE)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) return undefined;
  if (settlement.dropNote) {
    await db
      .updateTable('inputs')
      .set({ status: 'dropped', note: settlement.dropNote, updated_at: now })
      .where('session_key', '=', record.sessionKey)
      .where('status', '=', 'queued')
      .execute();
  }
  const settled = (await getRow(db, record.id))!;
  if (settlement.notifyParent) {
    const payload: CompletionEvent = {
      subagentId: settled.id,
      childSessionKey: settled.sessionKey,
      parentSessionKey: settled.parentSession,
      agentId: settled.agentId,
      label: settled.label,
      task: settled.task,
      runId: settled.runId,
      status: settlement.state,
      result: frozen.result,
      resultHash: frozen.resultHash,
      truncated: frozen.truncated,
      diagnostic: settlement.diagnostic,
      usage,
      worktree: settled.worktree ? { path: settled.worktree.path, branch: settled.worktree.branch } : null,
    };
    await insertOutbox(
      db,
      {
        id: `completion-${settled.id}-${settled.runId ?? 'none'}`,
        kind: COMPLETION_KIND,
        target: settled.parentSession,
        payload,
        idempotencyKey: `completion:${settled.sessionKey}:${settled.runId ?? 'none'}`,
      },
      now,
      sender,
    );
  }
  await appendEvent(db, event(settled, { diagnostic: settlement.diagnostic, resultHash: frozen.resultHash }), now);
  return settled;
}
