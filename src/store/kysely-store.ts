/**
 * The store ports over Kysely, in SQL that SQLite and PostgreSQL both accept. An adapter supplies the
 * Kysely instance and one expression for the database clock (lease time comes from the database).
 */
import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import { SwitchboardError } from '../core/errors.js';
import type { QueueMode } from '../core/queue-mode.js';
import type { RunStatus } from '../core/run-status.js';
import type {
  EventJournal, EventRecord, InputRecord, InputStatus, InputStore, LeaseStore, NewEvent, NewInput, NewOutboxRow,
  NewRun, NewSession, NewTranscriptEntry, OutboxRecord, OutboxStatus, OutboxStore, RecoveryReport, ReplyRoute,
  RunCommit, RunRecord, RunStore, SessionRecord, SessionState, SessionStore, Store, TranscriptEntry, TranscriptStore,
} from '../ports.js';
import type { Database, EventsTable, InputsTable, OutboxTable, RunsTable, SessionsTable, TranscriptTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const json = (value: unknown): string => JSON.stringify(value ?? null);
const parse = <T>(text: string | null): T => (text === null ? (null as T) : (JSON.parse(text) as T));
const num = (value: number | string | bigint | null): number => (value === null ? 0 : Number(value));
const numOrNull = (value: number | string | bigint | null): number | null => (value === null ? null : Number(value));

function toSession(row: Selectable<SessionsTable>): SessionRecord {
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

function toTranscript(row: Selectable<TranscriptTable>): TranscriptEntry {
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

function toRun(row: Selectable<RunsTable>): RunRecord {
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
    },
    preambleChars: num(row.preamble_chars),
    promptChars: num(row.prompt_chars),
    finalText: row.final_text,
    errorCode: row.error_code,
    errorMessage: row.error_message,
  };
}

function toOutbox(row: Selectable<OutboxTable>): OutboxRecord {
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
  };
}

function toEvent(row: Selectable<EventsTable>): EventRecord {
  return {
    seq: num(row.seq),
    type: row.type,
    sessionKey: row.session_key,
    runId: row.run_id,
    payload: parse(row.payload),
    createdAt: num(row.created_at),
  };
}

async function appendTranscript(db: Db, sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto('transcript')
    .values(
      entries.map((entry) => ({
        session_key: sessionKey,
        role: entry.role,
        content: json(entry.content),
        provenance: entry.provenance ? json(entry.provenance) : null,
        input_id: entry.inputId,
        run_id: entry.runId,
        created_at: now,
      })),
    )
    .execute();
}

async function appendEvent(db: Db, event: NewEvent, now: number): Promise<EventRecord> {
  const row = await db
    .insertInto('events')
    .values({
      type: event.type,
      session_key: event.sessionKey ?? null,
      run_id: event.runId ?? null,
      payload: json(event.payload ?? {}),
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toEvent(row);
}

async function insertOutbox(db: Db, row: NewOutboxRow, now: number): Promise<void> {
  // A row with the same idempotency key already exists: the effect it stands for is already on its way.
  await db
    .insertInto('outbox')
    .values({
      id: row.id,
      kind: row.kind,
      target: row.target,
      payload: json(row.payload),
      idempotency_key: row.idempotencyKey,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      delivered_at: null,
    })
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .execute();
}

async function currentEpoch(db: Db, sessionKey: string): Promise<number | undefined> {
  const lease = await db.selectFrom('session_lease').select('epoch').where('session_key', '=', sessionKey).executeTakeFirst();
  return lease ? num(lease.epoch) : undefined;
}

export class KyselyStore implements Store {
  readonly sessions: SessionStore;
  inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;

  constructor(
    protected readonly db: Kysely<Database>,
    /** The database clock in epoch milliseconds, as an SQL expression. */
    dbNowMs: () => RawBuilder<number>,
  ) {
    this.sessions = new KyselySessionStore(db);
    this.inputs = new KyselyInputStore(db);
    this.transcript = new KyselyTranscriptStore(db);
    this.runs = new KyselyRunStore(db);
    this.outbox = new KyselyOutboxStore(db);
    this.leases = new KyselyLeaseStore(db, dbNowMs);
    this.events = new KyselyEventJournal(db);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

class KyselySessionStore implements SessionStore {
  constructor(private readonly db: Kysely<Database>) {}

  async ensure(session: NewSession, now: number): Promise<SessionRecord> {
    await this.db
      .insertInto('sessions')
      .values({
        key: session.key,
        agent_id: session.agentId,
        label: session.label ?? null,
        parent_key: session.parentKey ?? null,
        depth: session.depth ?? 0,
        route: session.route ? json(session.route) : null,
        state: 'idle',
        created_at: now,
        updated_at: now,
        last_run_at: null,
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await this.db.selectFrom('sessions').selectAll().where('key', '=', session.key).executeTakeFirstOrThrow();
    return toSession(row);
  }

  async get(key: string): Promise<SessionRecord | undefined> {
    const row = await this.db.selectFrom('sessions').selectAll().where('key', '=', key).executeTakeFirst();
    return row ? toSession(row) : undefined;
  }

  async findByLabel(label: string, agentId?: string): Promise<SessionRecord[]> {
    let query = this.db.selectFrom('sessions').selectAll().where('label', '=', label);
    if (agentId) query = query.where('agent_id', '=', agentId);
    return (await query.orderBy('updated_at', 'desc').execute()).map(toSession);
  }

  async list(filter: { agentId?: string; limit?: number } = {}): Promise<SessionRecord[]> {
    let query = this.db.selectFrom('sessions').selectAll();
    if (filter.agentId) query = query.where('agent_id', '=', filter.agentId);
    const rows = await query.orderBy('updated_at', 'desc').orderBy('key').limit(filter.limit ?? 1000).execute();
    return rows.map(toSession);
  }

  async setState(key: string, state: SessionState, now: number): Promise<void> {
    const patch = state === 'running' ? { state, updated_at: now, last_run_at: now } : { state, updated_at: now };
    await this.db.updateTable('sessions').set(patch).where('key', '=', key).execute();
  }

  async setRoute(key: string, route: ReplyRoute, now: number): Promise<void> {
    await this.db.updateTable('sessions').set({ route: json(route), updated_at: now }).where('key', '=', key).execute();
  }

  async listWithQueuedInputs(): Promise<{ key: string; oldestQueuedAt: number }[]> {
    const rows = await this.db
      .selectFrom('inputs')
      .select(['session_key', (eb) => eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'queued')
      .groupBy('session_key')
      .orderBy('oldest')
      .execute();
    return rows.map((row) => ({ key: row.session_key, oldestQueuedAt: num(row.oldest as number) }));
  }
}

export class KyselyInputStore implements InputStore {
  constructor(private readonly db: Kysely<Database>) {}

  async enqueue(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }> {
    const inserted = await this.db
      .insertInto('inputs')
      .values({
        id: input.id,
        session_key: input.sessionKey,
        idempotency_key: input.idempotencyKey,
        mode: input.mode,
        status: 'queued',
        attempts: 0,
        text: input.text,
        provenance: json(input.provenance),
        run_id: null,
        note: null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('idempotency_key').doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return { input: toInput(inserted), created: true };
    const existing = await this.db
      .selectFrom('inputs')
      .selectAll()
      .where('idempotency_key', '=', input.idempotencyKey)
      .executeTakeFirstOrThrow();
    return { input: toInput(existing), created: false };
  }

  async get(id: string): Promise<InputRecord | undefined> {
    const row = await this.db.selectFrom('inputs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toInput(row) : undefined;
  }

  async listQueued(sessionKey: string): Promise<InputRecord[]> {
    const rows = await this.db
      .selectFrom('inputs')
      .selectAll()
      .where('session_key', '=', sessionKey)
      .where('status', '=', 'queued')
      .orderBy('seq')
      .execute();
    return rows.map(toInput);
  }

  async listByRun(runId: string): Promise<InputRecord[]> {
    const rows = await this.db.selectFrom('inputs').selectAll().where('run_id', '=', runId).orderBy('seq').execute();
    return rows.map(toInput);
  }

  async list(filter: { sessionKey?: string; status?: InputStatus; limit?: number }): Promise<InputRecord[]> {
    let query = this.db.selectFrom('inputs').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.status) query = query.where('status', '=', filter.status);
    return (await query.orderBy('seq').limit(filter.limit ?? 100_000).execute()).map(toInput);
  }

  async drop(inputIds: string[], note: string, now: number): Promise<string[]> {
    if (inputIds.length === 0) return [];
    const rows = await this.db
      .updateTable('inputs')
      .set({ status: 'dropped', note, updated_at: now })
      .where('id', 'in', inputIds)
      .where('status', '=', 'queued')
      .returning('id')
      .execute();
    return rows.map((row) => row.id);
  }

  async absorbNotify(inputId: string, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('inputs')
        .set({ status: 'consumed', updated_at: now })
        .where('id', '=', inputId)
        .where('status', '=', 'queued')
        .returningAll()
        .executeTakeFirst();
      if (!updated) return false;
      const input = toInput(updated);
      await appendTranscript(
        trx,
        input.sessionKey,
        [{ role: 'user', content: input.text, provenance: input.provenance, inputId: input.id, runId: null }],
        now,
      );
      await appendEvent(trx, { type: 'input.stored', sessionKey: input.sessionKey, payload: { inputId } }, now);
      return true;
    });
  }
}

class KyselyTranscriptStore implements TranscriptStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    let query = this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey).orderBy('seq', 'desc');
    if (options.limit !== undefined) query = query.limit(options.limit);
    const rows = await query.execute();
    return rows.reverse().map(toTranscript);
  }

  async append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    await appendTranscript(this.db, sessionKey, entries, now);
  }
}

class KyselyRunStore implements RunStore {
  constructor(private readonly db: Kysely<Database>) {}

  async start(run: NewRun, now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if ((await currentEpoch(trx, run.sessionKey)) !== run.epoch) return false;
      const claimed = await trx
        .updateTable('inputs')
        .set((eb) => ({ status: 'claimed', run_id: run.id, attempts: eb('attempts', '+', 1), updated_at: now }))
        .where('id', 'in', run.inputIds)
        .where('status', '=', 'queued')
        .returning('id')
        .execute();
      if (claimed.length !== run.inputIds.length) {
        // Someone else took an input first; undo by throwing inside the transaction.
        throw new StartConflict();
      }
      await trx
        .insertInto('runs')
        .values({
          id: run.id,
          session_key: run.sessionKey,
          agent_id: run.agentId,
          status: 'running',
          owner: run.owner,
          epoch: run.epoch,
          model: run.model,
          started_at: now,
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
        })
        .execute();
      await trx.updateTable('sessions').set({ state: 'running', updated_at: now, last_run_at: now }).where('key', '=', run.sessionKey).execute();
      await appendEvent(trx, { type: 'run.started', sessionKey: run.sessionKey, runId: run.id, payload: { inputIds: run.inputIds, model: run.model } }, now);
      return true;
    }).catch((error: unknown) => {
      if (error instanceof StartConflict) return false;
      throw error;
    });
  }

  async claimMore(runId: string, sessionKey: string, epoch: number, inputIds: string[], now: number): Promise<string[]> {
    if (inputIds.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      if ((await currentEpoch(trx, sessionKey)) !== epoch) return [];
      const rows = await trx
        .updateTable('inputs')
        .set((eb) => ({ status: 'claimed', run_id: runId, attempts: eb('attempts', '+', 1), updated_at: now }))
        .where('id', 'in', inputIds)
        .where('session_key', '=', sessionKey)
        .where('status', '=', 'queued')
        .returning('id')
        .execute();
      return rows.map((row) => row.id);
    });
  }

  async commit(commit: RunCommit, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const epoch = await currentEpoch(trx, commit.sessionKey);
      const run = await trx.selectFrom('runs').select(['status', 'epoch']).where('id', '=', commit.runId).executeTakeFirst();
      if (epoch !== commit.epoch || !run || run.status !== 'running' || num(run.epoch) !== commit.epoch) {
        throw new SwitchboardError(
          'LEASE_LOST',
          `run ${commit.runId} lost its lease on ${commit.sessionKey} (epoch ${commit.epoch}, now ${epoch ?? 'none'}); its results were not committed`,
        );
      }
      const { outcome } = commit;
      await appendTranscript(trx, commit.sessionKey, commit.transcript, now);
      if (commit.consumedInputIds.length > 0) {
        await trx
          .updateTable('inputs')
          .set({ status: 'consumed', updated_at: now })
          .where('id', 'in', commit.consumedInputIds)
          .where('run_id', '=', commit.runId)
          .execute();
      }
      await trx
        .updateTable('runs')
        .set({
          status: outcome.status,
          ended_at: now,
          input_tokens: outcome.usage.inputTokens,
          output_tokens: outcome.usage.outputTokens,
          model_calls: outcome.usage.modelCalls,
          steps: outcome.usage.steps,
          preamble_chars: outcome.preambleChars,
          prompt_chars: outcome.promptChars,
          final_text: outcome.finalText,
          error_code: outcome.errorCode ?? null,
          error_message: outcome.errorMessage ?? null,
        })
        .where('id', '=', commit.runId)
        .execute();
      await trx.updateTable('sessions').set({ state: 'idle', updated_at: now }).where('key', '=', commit.sessionKey).execute();
      // The run is over: its lease goes with the commit, saving the scheduler a write of its own.
      await trx.deleteFrom('session_lease').where('session_key', '=', commit.sessionKey).where('epoch', '=', commit.epoch).execute();
      for (const row of commit.outbox) await insertOutbox(trx, row, now);
      for (const event of commit.events) await appendEvent(trx, event, now);
    });
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const row = await this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRun(row) : undefined;
  }

  async list(filter: { sessionKey?: string; status?: RunStatus; limit?: number } = {}): Promise<RunRecord[]> {
    let query = this.db.selectFrom('runs').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.status) query = query.where('status', '=', filter.status);
    return (await query.orderBy('started_at', 'desc').orderBy('id').limit(filter.limit ?? 1000).execute()).map(toRun);
  }

  async recoverOrphans(owner: string, diagnostic: string, maxRetries: number, now: number): Promise<RecoveryReport> {
    return this.db.transaction().execute(async (trx) => {
      const report: RecoveryReport = { interruptedRuns: [], requeuedInputs: [], droppedInputs: [] };
      // Only this owner's runs: another gateway sharing the database may still be running its own.
      const runs = await trx.selectFrom('runs').selectAll().where('status', '=', 'running').where('owner', '=', owner).execute();
      for (const run of runs) {
        await trx
          .updateTable('runs')
          .set({ status: 'interrupted', ended_at: now, error_code: 'INTERRUPTED', error_message: diagnostic })
          .where('id', '=', run.id)
          .execute();
        await trx.updateTable('sessions').set({ state: 'idle', updated_at: now }).where('key', '=', run.session_key).execute();
        await trx.deleteFrom('session_lease').where('session_key', '=', run.session_key).where('owner', '=', owner).execute();
        const inputs = await trx.selectFrom('inputs').selectAll().where('run_id', '=', run.id).where('status', '=', 'claimed').execute();
        for (const input of inputs) {
          const exhausted = num(input.attempts) > maxRetries;
          await trx
            .updateTable('inputs')
            .set({
              status: exhausted ? 'dropped' : 'queued',
              run_id: exhausted ? run.id : null,
              note: exhausted
                ? `dropped after ${num(input.attempts)} interrupted attempts (recovery.retryInterrupted = ${maxRetries})`
                : `previous attempt was interrupted: ${diagnostic}`,
              updated_at: now,
            })
            .where('id', '=', input.id)
            .execute();
          (exhausted ? report.droppedInputs : report.requeuedInputs).push(input.id);
        }
        report.interruptedRuns.push(run.id);
        await appendEvent(
          trx,
          { type: 'run.interrupted', sessionKey: run.session_key, runId: run.id, payload: { diagnostic, inputIds: inputs.map((i) => i.id) } },
          now,
        );
      }
      return report;
    });
  }
}

class StartConflict extends Error {}

class KyselyOutboxStore implements OutboxStore {
  constructor(private readonly db: Kysely<Database>) {}

  async add(row: NewOutboxRow, now: number): Promise<OutboxRecord> {
    await insertOutbox(this.db, row, now);
    const stored = await this.db.selectFrom('outbox').selectAll().where('idempotency_key', '=', row.idempotencyKey).executeTakeFirstOrThrow();
    return toOutbox(stored);
  }

  async listDue(now: number, limit: number): Promise<OutboxRecord[]> {
    const rows = await this.db
      .selectFrom('outbox')
      .selectAll()
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .orderBy('next_attempt_at')
      .orderBy('created_at')
      .limit(limit)
      .execute();
    return rows.map(toOutbox);
  }

  async markDelivered(id: string, now: number): Promise<void> {
    await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: 'delivered', delivered_at: now, attempts: eb('attempts', '+', 1), last_error: null }))
      .where('id', '=', id)
      .execute();
  }

  async markFailed(id: string, error: string, nextAttemptAt: number, dead: boolean): Promise<void> {
    await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: dead ? 'dead' : 'pending', attempts: eb('attempts', '+', 1), last_error: error, next_attempt_at: nextAttemptAt }))
      .where('id', '=', id)
      .execute();
  }

  async get(id: string): Promise<OutboxRecord | undefined> {
    const row = await this.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toOutbox(row) : undefined;
  }

  async list(filter: { status?: OutboxStatus; limit?: number } = {}): Promise<OutboxRecord[]> {
    let query = this.db.selectFrom('outbox').selectAll();
    if (filter.status) query = query.where('status', '=', filter.status);
    return (await query.orderBy('created_at').limit(filter.limit ?? 1000).execute()).map(toOutbox);
  }
}

class KyselyLeaseStore implements LeaseStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dbNowMs: () => RawBuilder<number>,
  ) {}

  async acquire(sessionKey: string, owner: string, ttlMs: number): Promise<{ epoch: number } | undefined> {
    const now = this.dbNowMs();
    // One statement decides: insert a fresh lease, or take over one that is ours or has expired. The
    // epoch only ever grows, so a writer holding an older epoch is fenced off.
    const row = await this.db
      .insertInto('session_lease')
      .values({ session_key: sessionKey, owner, epoch: 1, expires_at: sql<number>`${now} + ${ttlMs}` })
      .onConflict((oc) =>
        oc
          .column('session_key')
          .doUpdateSet({ owner, epoch: sql<number>`session_lease.epoch + 1`, expires_at: sql<number>`${now} + ${ttlMs}` })
          .where((eb) => eb.or([eb('session_lease.owner', '=', owner), eb('session_lease.expires_at', '<', now)])),
      )
      .returning('epoch')
      .executeTakeFirst();
    return row ? { epoch: num(row.epoch) } : undefined;
  }

  async renew(sessionKey: string, owner: string, epoch: number, ttlMs: number): Promise<boolean> {
    const result = await this.db
      .updateTable('session_lease')
      .set({ expires_at: sql<number>`${this.dbNowMs()} + ${ttlMs}` })
      .where('session_key', '=', sessionKey)
      .where('owner', '=', owner)
      .where('epoch', '=', epoch)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async release(sessionKey: string, owner: string, epoch: number): Promise<void> {
    await this.db.deleteFrom('session_lease').where('session_key', '=', sessionKey).where('owner', '=', owner).where('epoch', '=', epoch).execute();
  }

  async get(sessionKey: string): Promise<{ owner: string; epoch: number; expiresAt: number } | undefined> {
    const row = await this.db.selectFrom('session_lease').selectAll().where('session_key', '=', sessionKey).executeTakeFirst();
    return row ? { owner: row.owner, epoch: num(row.epoch), expiresAt: num(row.expires_at) } : undefined;
  }
}

class KyselyEventJournal implements EventJournal {
  constructor(private readonly db: Kysely<Database>) {}

  append(event: NewEvent, now: number): Promise<EventRecord> {
    return appendEvent(this.db, event, now);
  }

  async latestSeq(): Promise<number> {
    const row = await this.db.selectFrom('events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst();
    return num((row?.seq as number | null) ?? 0);
  }

  async list(filter: { afterSeq?: number; sessionKey?: string; runId?: string; limit?: number } = {}): Promise<EventRecord[]> {
    let query = this.db.selectFrom('events').selectAll();
    if (filter.afterSeq !== undefined) query = query.where('seq', '>', filter.afterSeq);
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.runId) query = query.where('run_id', '=', filter.runId);
    return (await query.orderBy('seq').limit(filter.limit ?? 1000).execute()).map(toEvent);
  }
}
