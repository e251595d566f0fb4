/** Sub-agents over Kysely: spawning (session, record and task in one transaction) and compare-and-set settling. */
import type { Kysely, Selectable } from 'kysely';
import { COMPLETION_KIND, decideRunEnd, freezeResult, type CompletionEvent, type SubagentRole, type SubagentState, type SubagentUsage } from '../core/subagent.js';
import type { CompletionState, NewInput, NewSubagent, RunCommit, SubagentFilter, SubagentRecord, SubagentSettlement, SubagentStore, SubagentTransition, SpawnLimits, SpawnRefused, NewToolCall } from '../ports.js';
import { json, num, numOrNull, parse, type Db } from './kysely-rows.js';
import { appendEvent, insertInput, insertOutbox } from './kysely-writes.js';
import type { Database, SubagentsTable } from './schema.js';
import { nodeHashing } from '../hashing.js';
import { lockCounted } from './kysely-limits.js';
import { recordToolCall } from './kysely-tool-call-store.js';
import type { SqlDialectName } from './migrations.js';

const LIVE: SubagentState[] = ['pending', 'running'];

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
    createdAt: num(row.created_at),
    startedAt: numOrNull(row.started_at),
    settledAt: numOrNull(row.settled_at),
    archivedAt: numOrNull(row.archived_at),
    updatedAt: num(row.updated_at),
  };
}

function event(record: SubagentRecord, detail: Record<string, unknown> = {}) {
  return {
    type: 'subagent.updated' as const,
    sessionKey: record.parentSession,
    runId: record.runId,
    payload: { subagentId: record.id, childSessionKey: record.sessionKey, parentSessionKey: record.parentSession, state: record.state, waiting: record.waiting, ...detail },
  };
}

async function getRow(db: Db, id: string): Promise<SubagentRecord | undefined> {
  const row = await db.selectFrom('subagents').selectAll().where('id', '=', id).executeTakeFirst();
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

async function undelivered(db: Db, parentSession: string): Promise<number> {
  const row = await db
    .selectFrom('subagents')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('parent_session', '=', parentSession)
    .where((eb) => eb.or([eb('completion', 'is', null), eb('completion', '=', 'pending')]))
    .executeTakeFirst();
  return num(row?.n ?? 0);
}

/**
 * What the end of a run in a sub-agent's session does to it (inside RunStore.commit's transaction): it
 * settles, or freezes its answer while children or inputs are still on their way to it (seed 002 section 7.2).
 */
export async function endSubagentRun(db: Db, commit: RunCommit, now: number): Promise<void> {
  if (!commit.subagent) return;
  const record = await getRow(db, commit.subagent.id);
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
  await settleRow(db, record, { state: decision.state, diagnostic: decision.diagnostic, text: decision.text, notifyParent: true, maxResultChars: commit.subagent.maxResultChars }, now);
}

async function settleRow(db: Db, record: SubagentRecord, settlement: SubagentSettlement, now: number): Promise<SubagentRecord | undefined> {
  const runs = await db
    .selectFrom('runs')
    .select((eb) => [
      eb.fn.sum<number>('input_tokens').as('input'),
      eb.fn.sum<number>('output_tokens').as('output'),
      eb.fn.sum<number>('model_calls').as('calls'),
      eb.fn.countAll<number>().as('runs'),
    ])
    .where('session_key', '=', record.sessionKey)
    .executeTakeFirst();
  const usage: SubagentUsage = {
    inputTokens: num(runs?.input ?? 0),
    outputTokens: num(runs?.output ?? 0),
    modelCalls: num(runs?.calls ?? 0),
    runs: num(runs?.runs ?? 0),
    durationMs: Math.max(0, now - (record.startedAt ?? record.createdAt)),
  };
  const frozen = freezeResult(settlement.text ?? record.frozenText, settlement.maxResultChars, nodeHashing.sha256);
  const history = [...record.history, { state: settlement.state, at: now, ...(settlement.diagnostic ? { diagnostic: settlement.diagnostic } : {}) }];
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
      { id: `completion-${settled.id}-${settled.runId ?? 'none'}`, kind: COMPLETION_KIND, target: settled.parentSession, payload, idempotencyKey: `completion:${settled.sessionKey}:${settled.runId ?? 'none'}` },
      now,
    );
  }
  await appendEvent(db, event(settled, { diagnostic: settlement.diagnostic, resultHash: frozen.resultHash }), now);
  return settled;
}

export class KyselySubagentStore implements SubagentStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialectName,
  ) {}

  spawn(subagent: NewSubagent, task: NewInput, now: number): Promise<{ subagent: SubagentRecord; created: boolean }>;
  spawn(subagent: NewSubagent, task: NewInput, now: number, limits: SpawnLimits & { call?: NewToolCall }): Promise<{ subagent: SubagentRecord; created: boolean } | SpawnRefused>;
  async spawn(subagent: NewSubagent, task: NewInput, now: number, limits?: SpawnLimits & { call?: NewToolCall }): Promise<{ subagent: SubagentRecord; created: boolean } | SpawnRefused> {
    return this.db.transaction().execute(async (trx) => {
      // Concurrent spawns of one parent (the calls of one model step) count one after another.
      if (limits) await lockCounted(trx, this.dialect, `spawn:${subagent.parentSession}`);
      const existing = await trx
        .selectFrom('subagents')
        .selectAll()
        .where('parent_session', '=', subagent.parentSession)
        .where('correlation_id', '=', subagent.correlationId)
        .executeTakeFirst();
      if (existing) return { subagent: toSubagent(existing), created: false };
      if (limits) {
        const live = await trx
          .selectFrom('subagents')
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('parent_session', '=', subagent.parentSession)
          .where('state', 'in', LIVE)
          .executeTakeFirstOrThrow();
        if (num(live.count) >= limits.maxLive) return { refused: { live: num(live.count) } };
        if (limits.call) await recordToolCall(trx, limits.call, now);
      }
      await trx
        .insertInto('sessions')
        .values({
          key: subagent.sessionKey,
          agent_id: subagent.agentId,
          label: subagent.label,
          parent_key: subagent.parentSession,
          depth: subagent.depth,
          route: null,
          state: 'idle',
          created_at: now,
          updated_at: now,
          last_run_at: null,
        })
        .execute();
      await trx
        .insertInto('subagents')
        .values({
          id: subagent.id,
          session_key: subagent.sessionKey,
          parent_session: subagent.parentSession,
          root_session: subagent.rootSession,
          agent_id: subagent.agentId,
          depth: subagent.depth,
          role: subagent.role,
          label: subagent.label,
          task: subagent.task,
          correlation_id: subagent.correlationId,
          first_run_id: subagent.firstRunId,
          run_id: null,
          model: subagent.model,
          tools: json(subagent.tools),
          timeout_seconds: subagent.timeoutSeconds,
          workdir: subagent.workdir,
          worktree: subagent.worktree ? json(subagent.worktree) : null,
          state: 'pending',
          history: json([{ state: 'pending', at: now }]),
          waiting: 0,
          frozen_text: null,
          result: null,
          result_hash: null,
          result_chars: null,
          usage: null,
          diagnostic: null,
          completion: null,
          attempts: 0,
          created_at: now,
          started_at: null,
          settled_at: null,
          archived_at: null,
          updated_at: now,
        })
        .execute();
      await insertInput(trx, task, now);
      const record = (await getRow(trx, subagent.id))!;
      await appendEvent(trx, event(record, { label: record.label, agentId: record.agentId, depth: record.depth }), now);
      return { subagent: record, created: true };
    });
  }

  get(id: string): Promise<SubagentRecord | undefined> {
    return getRow(this.db, id);
  }

  async getBySession(sessionKey: string): Promise<SubagentRecord | undefined> {
    const row = await this.db.selectFrom('subagents').selectAll().where('session_key', '=', sessionKey).executeTakeFirst();
    return row ? toSubagent(row) : undefined;
  }

  async findByCorrelation(parentSession: string, correlationId: string): Promise<SubagentRecord | undefined> {
    const row = await this.db.selectFrom('subagents').selectAll().where('parent_session', '=', parentSession).where('correlation_id', '=', correlationId).executeTakeFirst();
    return row ? toSubagent(row) : undefined;
  }

  private filtered(filter: SubagentFilter) {
    let query = this.db.selectFrom('subagents');
    if (filter.parentSession) query = query.where('parent_session', '=', filter.parentSession);
    if (filter.rootSession) query = query.where('root_session', '=', filter.rootSession);
    if (filter.states) query = query.where('state', 'in', filter.states);
    if (filter.settledBefore !== undefined) query = query.where('settled_at', '<', filter.settledBefore).where('archived_at', 'is', null);
    return query;
  }

  async count(filter: SubagentFilter): Promise<number> {
    const row = await this.filtered(filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    return num(row?.n ?? 0);
  }

  async list(filter: SubagentFilter = {}): Promise<SubagentRecord[]> {
    const rows = await this.filtered(filter).selectAll().orderBy('created_at').orderBy('id').limit(filter.limit ?? 10_000).execute();
    return rows.map(toSubagent);
  }

  countUndelivered(parentSession: string): Promise<number> {
    return undelivered(this.db, parentSession);
  }

  async settle(id: string, settlement: SubagentSettlement, now: number): Promise<SubagentRecord | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const record = await getRow(trx, id);
      if (!record || !LIVE.includes(record.state)) return undefined;
      return settleRow(trx, record, settlement, now);
    });
  }

  async noteRetry(id: string, diagnostic: string, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const record = await getRow(trx, id);
      if (!record) return;
      const history = [...record.history, { state: 'interrupted' as const, at: now, diagnostic: `${diagnostic}; retrying once` }];
      await trx.updateTable('subagents').set({ attempts: record.attempts + 1, history: json(history), updated_at: now }).where('id', '=', id).execute();
    });
  }

  async markCompletion(id: string, completion: 'delivered' | 'skipped', now: number): Promise<void> {
    await this.db.updateTable('subagents').set({ completion, updated_at: now }).where('id', '=', id).execute();
  }

  async markArchived(id: string, now: number): Promise<void> {
    await this.db.updateTable('subagents').set({ archived_at: now, updated_at: now }).where('id', '=', id).execute();
    const record = await getRow(this.db, id);
    if (record) await this.db.updateTable('sessions').set({ state: 'archived', updated_at: now }).where('key', '=', record.sessionKey).execute();
  }
}
