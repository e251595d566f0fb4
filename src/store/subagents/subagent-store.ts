/** Sub-agents over Kysely: spawning (session, record and task in one transaction, counted against the limit), settling, queries. */
import type { Kysely } from 'kysely';
import type {
  InputRecord,
  NewInput,
  NewSubagent,
  ParentFacts,
  SubagentFilter,
  SubagentRecord,
  SubagentSettlement,
  SubagentStore,
  SpawnLimits,
  SpawnRefused,
  NewToolCall,
  ReopenRefused,
} from '../../ports/index.js';
import { json, num, toInput } from '../sql/rows.js';
import { appendEvent, insertInput } from '../sql/writes.js';
import type { Database } from '../schema/database.js';
import { lockCounted } from '../sql/limits.js';
import { recordToolCall } from '../tool-calls/tool-call-store.js';
import type { SqlDialect } from '../sql/dialect.js';
import { LIVE, event, getRow, settleRow, toSubagent, undelivered } from './subagent-rows.js';

export class KyselySubagentStore implements SubagentStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {}

  spawn(subagent: NewSubagent, task: NewInput, now: number): Promise<{ subagent: SubagentRecord; created: boolean }>;
  spawn(
    subagent: NewSubagent,
    task: NewInput,
    now: number,
    limits: SpawnLimits & { call?: NewToolCall },
  ): Promise<{ subagent: SubagentRecord; created: boolean } | SpawnRefused>;
  async spawn(
    subagent: NewSubagent,
    task: NewInput,
    now: number,
    limits?: SpawnLimits & { call?: NewToolCall },
  ): Promise<{ subagent: SubagentRecord; created: boolean } | SpawnRefused> {
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
          runtime: subagent.runtime ?? null,
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
    const row = await this.db
      .selectFrom('subagents')
      .selectAll()
      .where('parent_session', '=', parentSession)
      .where('correlation_id', '=', correlationId)
      .executeTakeFirst();
    return row ? toSubagent(row) : undefined;
  }

  private filtered(filter: SubagentFilter) {
    let query = this.db.selectFrom('subagents');
    if (filter.parentSession) query = query.where('parent_session', '=', filter.parentSession);
    if (filter.rootSession) query = query.where('root_session', '=', filter.rootSession);
    if (filter.states) query = query.where('state', 'in', filter.states);
    if (filter.settledBefore !== undefined) query = query.where('settled_at', '<', filter.settledBefore).where('archived_at', 'is', null);
    if (filter.createdSince !== undefined) query = query.where('created_at', '>=', filter.createdSince);
    return query;
  }

  async count(filter: SubagentFilter): Promise<number> {
    const row = await this.filtered(filter)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return num(row?.n ?? 0);
  }

  async list(filter: SubagentFilter = {}): Promise<SubagentRecord[]> {
    const rows = await this.filtered(filter)
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .limit(filter.limit ?? 10_000)
      .execute();
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

  async noteRetry(id: string, runId: string, diagnostic: string, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const record = await getRow(trx, id);
      if (!record || record.runId !== runId || record.retryOf === runId) return false;
      const history = [...record.history, { state: 'interrupted' as const, at: now, diagnostic: `${diagnostic}; retrying once` }];
      const noted = await trx
        .updateTable('subagents')
        .set({ attempts: record.attempts + 1, history: json(history), retry_of: runId, updated_at: now })
        .where('id', '=', id)
        .where('run_id', '=', runId)
        .where((eb) => eb.or([eb('retry_of', 'is', null), eb('retry_of', '!=', runId)]))
        .executeTakeFirst();
      return Number(noted.numUpdatedRows) === 1;
    });
  }

  async markCompletion(id: string, completion: 'delivered' | 'skipped', now: number): Promise<void> {
    await this.db.updateTable('subagents').set({ completion, updated_at: now }).where('id', '=', id).execute();
  }

  async handOver(
    id: string,
    completion: 'delivered' | 'dead',
    now: number,
    build: (parent: ParentFacts) => NewInput,
  ): Promise<{ input: InputRecord; created: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      const record = await getRow(trx, id);
      if (!record) throw new Error(`sub-agent ${id} does not exist`);
      // Hand-overs to one parent count its children one after another (on PostgreSQL, from any gateway), so the
      // last one in always sees the others delivered and wakes a waiting parent.
      await lockCounted(trx, this.dialect, `handover:${record.parentSession}`);
      const parent = await trx.selectFrom('subagents').select('waiting').where('session_key', '=', record.parentSession).executeTakeFirst();
      const others = await undelivered(trx, record.parentSession, id);
      const accepted = await insertInput(trx, build({ waiting: num(parent?.waiting ?? 0) === 1, others }), now);
      await trx.updateTable('subagents').set({ completion, updated_at: now }).where('id', '=', id).execute();
      return accepted;
    });
  }

  async reopen(
    id: string,
    task: NewInput,
    now: number,
    limits: SpawnLimits & { call?: NewToolCall },
  ): Promise<{ subagent: SubagentRecord; input: InputRecord; created: boolean; reopened: boolean } | ReopenRefused> {
    return this.db.transaction().execute(async (trx) => {
      const parent = (await getRow(trx, id))?.parentSession;
      if (parent === undefined) throw new Error(`sub-agent ${id} does not exist`);
      // Counted with the parent's spawns: a follow-up makes a child live again, as a spawn makes a new one.
      await lockCounted(trx, this.dialect, `spawn:${parent}`);
      // Held until the follow-up is stored: a run of the sub-agent that commits meanwhile counts it (endSubagentRun).
      const record = (await getRow(trx, id, this.dialect))!;
      const repeated = await trx.selectFrom('inputs').selectAll().where('idempotency_key', '=', task.idempotencyKey).executeTakeFirst();
      if (repeated) return { subagent: record, input: toInput(repeated), created: false, reopened: false };
      // Archived with its worktree removed, it has nowhere to work; without one, its session and history are all there.
      if (record.archivedAt !== null && record.worktree !== null) return { closed: 'archived' as const, subagent: record };
      if (record.state === 'cancelled') return { closed: 'cancelled' as const, subagent: record };
      if (LIVE.includes(record.state)) {
        if (limits.call) await recordToolCall(trx, limits.call, now);
        const { input } = await insertInput(trx, task, now);
        return { subagent: record, input, created: true, reopened: false };
      }
      // Its last completion still on its way would be taken for the next one's (the parent reads each once).
      if (record.completion === 'pending') return { delivering: record };
      const live = await trx
        .selectFrom('subagents')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('parent_session', '=', record.parentSession)
        .where('state', 'in', LIVE)
        .executeTakeFirstOrThrow();
      if (num(live.count) >= limits.maxLive) return { refused: { live: num(live.count) } };
      if (limits.call) await recordToolCall(trx, limits.call, now);
      const history = [...record.history, { state: 'pending' as const, at: now, diagnostic: 'follow-up task' }];
      const reopened = await trx
        .updateTable('subagents')
        .set({
          state: 'pending',
          waiting: 0,
          frozen_text: null,
          diagnostic: null,
          completion: null,
          settled_at: null,
          archived_at: null,
          history: json(history),
          updated_at: now,
        })
        .where('id', '=', id)
        .where('state', '=', record.state)
        .executeTakeFirst();
      if (Number(reopened.numUpdatedRows) !== 1) throw new Error(`sub-agent ${id} changed while it was reopened`);
      if (record.archivedAt !== null)
        await trx.updateTable('sessions').set({ state: 'idle', updated_at: now }).where('key', '=', record.sessionKey).execute();
      const { input } = await insertInput(trx, task, now);
      const subagent = (await getRow(trx, id))!;
      await appendEvent(trx, event(subagent, { reopened: true }), now);
      return { subagent, input, created: true, reopened: true };
    });
  }

  async markArchived(id: string, now: number): Promise<void> {
    await this.db.updateTable('subagents').set({ archived_at: now, updated_at: now }).where('id', '=', id).execute();
    const record = await getRow(this.db, id);
    if (record)
      await this.db.updateTable('sessions').set({ state: 'archived', updated_at: now }).where('key', '=', record.sessionKey).execute();
  }
}
