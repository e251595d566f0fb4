/** A session's inputs (the input store port) over Kysely, in SQL that SQLite and PostgreSQL both accept. */
import type { Kysely, Selectable } from 'kysely';
import type {
  InputRecord,
  InputStatus,
  InputStore,
  LimitReached,
  NewInput,
  NewToolCall,
  OpenedInput,
  RateLimit,
  SessionOpening,
} from '../../ports/index.js';
import { prepared } from '../sql/prepared.js';
import { toInput } from '../sql/rows.js';
import { takeRate } from '../sql/limits.js';
import { appendEvent, appendTranscript, insertInput, relaxed, type Relax } from '../sql/writes.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Database, InputsTable } from '../schema/database.js';
import { recordToolCall } from '../tool-calls/tool-call-store.js';
import { openSession } from './session-store.js';

const inputById = prepared<'id', Selectable<InputsTable>>((db, param) => db.selectFrom('inputs').selectAll().where('id', '=', param('id')));
const queuedInputs = prepared<'sessionKey', Selectable<InputsTable>>((db, param) =>
  db.selectFrom('inputs').selectAll().where('session_key', '=', param('sessionKey')).where('status', '=', 'queued').orderBy('seq'),
);

const queuedHead = prepared<'sessionKey' | 'limit', Selectable<InputsTable>>((db, param) =>
  db
    .selectFrom('inputs')
    .selectAll()
    .where('session_key', '=', param('sessionKey'))
    .where('status', '=', 'queued')
    .orderBy('seq')
    .limit(param('limit')),
);
/** The modes that act from anywhere in a queue (core/queue-mode.ts): stored at once, interrupting, or collected. */
const queuedActingAfter = prepared<'sessionKey' | 'after', Selectable<InputsTable>>((db, param) =>
  db
    .selectFrom('inputs')
    .selectAll()
    .where('session_key', '=', param('sessionKey'))
    .where('status', '=', 'queued')
    .where('seq', '>', param('after'))
    .where('mode', 'in', ['notify', 'interrupt', 'collect'])
    .orderBy('seq'),
);

/**
 * An engine's own accept paths, where it has faster ones; both write what the portable path writes. Contract: `insert`
 * stores a new input or returns the one holding its idempotency key (`unsynced` as InputStore.enqueueUnsynced);
 * `enqueueOpening` opens the session and stores the input in one round trip.
 */
export interface InputFastPaths {
  insert?(input: NewInput, now: number, unsynced: boolean): Promise<{ input: InputRecord; created: boolean }>;
  enqueueOpening?(session: SessionOpening, input: NewInput, now: number, options: { planHead?: number }): Promise<OpenedInput | 'missing'>;
}

export class KyselyInputStore implements InputStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    private readonly relax?: Relax,
    /** The engine's faster accept paths, where it has them. */
    private readonly fast: InputFastPaths = {},
  ) {}

  enqueueUnsynced(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }> {
    if (this.fast.insert) return this.fast.insert(input, now, true);
    return relaxed(this.db, this.relax, (db) => insertInput(db, input, now));
  }

  async enqueueOpening(
    session: SessionOpening,
    input: NewInput,
    now: number,
    options: { unsynced?: boolean; planHead?: number } = {},
  ): Promise<OpenedInput | 'missing'> {
    if (this.fast.enqueueOpening) return this.fast.enqueueOpening(session, input, now, options);
    if (!(await openSession(this.db, this.relax, session, now))) return 'missing';
    return options.unsynced ? this.enqueueUnsynced(input, now) : this.enqueue(input, now);
  }

  enqueue(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }>;
  enqueue(
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ input: InputRecord; created: boolean } | LimitReached>;
  enqueue(
    input: NewInput,
    now: number,
    guards?: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ input: InputRecord; created: boolean } | LimitReached> {
    if (!guards) return this.fast.insert ? this.fast.insert(input, now, false) : insertInput(this.db, input, now);
    return this.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom('inputs').selectAll().where('idempotency_key', '=', input.idempotencyKey).executeTakeFirst();
      if (existing) return { input: toInput(existing), created: false };
      const limited = await takeRate(trx, this.dialect, guards.rate, input.idempotencyKey, now);
      if (limited) return limited;
      if (guards.call) await recordToolCall(trx, guards.call, now);
      return insertInput(trx, input, now);
    });
  }

  async get(id: string): Promise<InputRecord | undefined> {
    const [row] = await inputById(this.db, { id });
    return row ? toInput(row) : undefined;
  }

  async getByIdempotencyKey(idempotencyKey: string): Promise<InputRecord | undefined> {
    const row = await this.db.selectFrom('inputs').selectAll().where('idempotency_key', '=', idempotencyKey).executeTakeFirst();
    return row ? toInput(row) : undefined;
  }

  async listQueued(sessionKey: string): Promise<InputRecord[]> {
    return (await queuedInputs(this.db, { sessionKey })).map(toInput);
  }

  async listQueuedForPlan(sessionKey: string, headLimit: number): Promise<InputRecord[]> {
    const head = await queuedHead(this.db, { sessionKey, limit: headLimit });
    if (head.length < headLimit) return head.map(toInput);
    const after = await queuedActingAfter(this.db, { sessionKey, after: head.at(-1)!.seq });
    return [...head, ...after].map(toInput);
  }

  async listByRun(runId: string): Promise<InputRecord[]> {
    const rows = await this.db.selectFrom('inputs').selectAll().where('run_id', '=', runId).orderBy('seq').execute();
    return rows.map(toInput);
  }

  async list(filter: { sessionKey?: string; status?: InputStatus; limit?: number }): Promise<InputRecord[]> {
    let query = this.db.selectFrom('inputs').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.status) query = query.where('status', '=', filter.status);
    return (
      await query
        .orderBy('seq')
        .limit(filter.limit ?? 100_000)
        .execute()
    ).map(toInput);
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
      // An internal write: the input is durable already, and one whose absorbing a power loss took back is still
      // queued, so the gateway's start absorbs it again (recovery wakes every session with queued inputs).
      this.relax?.();
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
