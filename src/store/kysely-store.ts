/**
 * The store ports over Kysely, in SQL that SQLite and PostgreSQL both accept. An adapter supplies the
 * Kysely instance and one expression for the database clock (lease time comes from the database).
 */
import type { OneStatementClaim } from './kysely-board-edits.js';
import type { Kysely, RawBuilder, Selectable, SelectQueryBuilder } from 'kysely';
import type {
  IdKind,
  A2ATaskStore,
  BoardStore,
  EventJournal,
  ExchangeStore,
  GatewayRegistry,
  Signals,
  InputRecord,
  InputStatus,
  InputStore,
  LeaseStore,
  NewInput,
  OpenedInput,
  NewTranscriptEntry,
  OutboxStore,
  RunStore,
  SessionOpening,
  SessionStore,
  Store,
  SubagentStore,
  TranscriptEntry,
  TranscriptStore,
  ToolCallStore,
  MemoryStore,
  MailboxStore,
  RateLimit,
  LimitReached,
  NewToolCall,
} from '../ports/index.js';
import { KyselyEventJournal, KyselyLeaseStore, KyselyOutboxStore } from './kysely-journal-stores.js';
import { KyselyRunStore } from './kysely-run-store.js';
import { KyselyGatewayRegistry } from './kysely-gateway-registry.js';
import { KyselySessionStore, openSession } from './kysely-session-store.js';
import { toInput, toTranscript } from './kysely-rows.js';
import { appendEvent, appendTranscript, insertInput, leaseTaker, relaxed, type Relax } from './kysely-writes.js';
import { KyselyExchangeStore } from './kysely-exchange-store.js';
import { KyselyA2ATaskStore } from './kysely-a2a-store.js';
import { KyselyBoardStore } from './kysely-board-store.js';
import { KyselySubagentStore } from './kysely-subagent-store.js';
import type { Database, InputsTable, TranscriptTable } from './schema.js';
import { KyselyMemoryStore } from './kysely-memory-store.js';
import { KyselyMailboxStore } from './kysely-mailbox-store.js';
import { KyselyToolCallStore, recordToolCall } from './kysely-tool-call-store.js';
import { takeRate } from './kysely-limits.js';
import { matchIds } from './kysely-ids.js';
import type { SqlDialectName } from './sql-dialect.js';
import { prepared } from './kysely-prepared.js';
import { copyTables, firstNonEmpty, type TableCopy } from './store-copy.js';
import { SwitchboardError } from '../core/errors.js';

/** One gateway per database (SQLite holds its file exclusively): nobody else to tell. */
const NO_SIGNALS: Signals = { notify: () => {}, listen: () => () => {} };

const inputById = prepared<'id', Selectable<InputsTable>>((db, param) => db.selectFrom('inputs').selectAll().where('id', '=', param('id')));
const transcriptTail = prepared<'sessionKey' | 'limit', Selectable<TranscriptTable>>((db, param) =>
  db.selectFrom('transcript').selectAll().where('session_key', '=', param('sessionKey')).orderBy('seq', 'desc').limit(param('limit')),
);
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

export class KyselyStore implements Store {
  readonly toolCalls: ToolCallStore;
  readonly memory: MemoryStore;
  readonly mailbox: MailboxStore;
  readonly subagents: SubagentStore;
  readonly a2aTasks: A2ATaskStore;
  readonly board: BoardStore;
  readonly sessions: SessionStore;
  readonly exchanges: ExchangeStore;
  readonly inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;
  readonly gateways: GatewayRegistry;
  readonly signals: Signals = NO_SIGNALS;

  constructor(
    protected readonly db: Kysely<Database>,
    protected readonly dialect: SqlDialectName,
    /** The database clock in epoch milliseconds, as an SQL expression. */
    dbNowMs: () => RawBuilder<number>,
    adapter: {
      /** An adapter's own input store, where it has a faster accept path. */
      inputs?: InputStore;
      /** An adapter's own transcript store, where it can keep sessions' recent entries. */
      transcript?: (plain: KyselyTranscriptStore) => TranscriptStore;
      relax?: Relax;
      /** An adapter's own run store, where it has a faster start and commit. */
      runStore?: typeof KyselyRunStore;
      /** An adapter's board claim in one statement. */
      boardClaim?: OneStatementClaim;
    } = {},
  ) {
    this.toolCalls = new KyselyToolCallStore(db);
    this.memory = new KyselyMemoryStore(db, dialect);
    this.mailbox = new KyselyMailboxStore(db, dialect);
    this.subagents = new KyselySubagentStore(db, dialect);
    this.a2aTasks = new KyselyA2ATaskStore(db, dialect);
    this.board = new KyselyBoardStore(db, dialect, undefined, adapter.boardClaim);
    this.sessions = new KyselySessionStore(db, dbNowMs, adapter.relax);
    this.exchanges = new KyselyExchangeStore(db, dialect);
    this.inputs = adapter.inputs ?? new KyselyInputStore(db, dialect, adapter.relax);
    this.transcript = adapter.transcript ? adapter.transcript(new KyselyTranscriptStore(db)) : new KyselyTranscriptStore(db);
    // One statement takes a lease, for the lease store and for a run's start.
    const takeLease = leaseTaker(dbNowMs);
    this.runs = new (adapter.runStore ?? KyselyRunStore)(db, dialect, dbNowMs, takeLease, adapter.relax);
    this.outbox = new KyselyOutboxStore(db, dialect);
    this.leases = new KyselyLeaseStore(db, dbNowMs, takeLease, adapter.relax);
    this.events = new KyselyEventJournal(db, dialect);
    this.gateways = new KyselyGatewayRegistry(db, dbNowMs, adapter.relax);
  }

  matchIds(kind: IdKind, prefix: string, limit: number): Promise<string[]> {
    return matchIds(this.db, kind, prefix, limit);
  }

  async durable(): Promise<void> {}

  async backup(_path: string): Promise<{ path: string; bytes: number }> {
    throw new SwitchboardError(
      'INVALID_REQUEST',
      "the store is PostgreSQL: back it up with the server's own tools (pg_dump); switchboard store backup copies a SQLite store",
    );
  }

  /**
   * Copies every table of this store (SQLite) into `target`, which must hold nothing yet (switchboard store copy);
   * answers each table's rows in both, counted after the copy.
   */
  async copyInto(target: KyselyStore, progress?: (copy: TableCopy) => void): Promise<TableCopy[]> {
    const taken = await firstNonEmpty(target.db);
    if (taken) {
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `the target store is not empty (its ${taken.table} table holds ${taken.rows} row(s)): copy into a new database or schema (--schema)`,
      );
    }
    return copyTables(this.db, target.db, target.dialect, progress);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

export class KyselyInputStore implements InputStore {
  constructor(
    protected readonly db: Kysely<Database>,
    private readonly dialect: SqlDialectName,
    protected readonly relax?: Relax,
  ) {}

  enqueueUnsynced(input: NewInput, now: number): Promise<{ input: InputRecord; created: boolean }> {
    return relaxed(this.db, this.relax, (db) => insertInput(db, input, now));
  }

  async enqueueOpening(
    session: SessionOpening,
    input: NewInput,
    now: number,
    options: { unsynced?: boolean; planHead?: number } = {},
  ): Promise<OpenedInput | 'missing'> {
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
    if (!guards) return insertInput(this.db, input, now);
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

type TranscriptQuery = SelectQueryBuilder<Database, 'transcript', Selectable<TranscriptTable>>;

export class KyselyTranscriptStore implements TranscriptStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The session's entries after `seq`, oldest first. */
  listAfter(sessionKey: string, seq: number): Promise<TranscriptEntry[]> {
    return this.entries(sessionKey, (query) => query.where('seq', '>', seq));
  }

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    // The history a run reads: the session's newest `limit` entries.
    const rows =
      options.limit === undefined
        ? await this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey).orderBy('seq', 'desc').execute()
        : await transcriptTail(this.db, { sessionKey, limit: options.limit });
    return rows.reverse().map(toTranscript);
  }

  listByRun(sessionKey: string, runId: string): Promise<TranscriptEntry[]> {
    return this.entries(sessionKey, (query) => query.where('run_id', '=', runId));
  }

  /** The session's entries that `narrow` keeps, oldest first. */
  private async entries(sessionKey: string, narrow: (query: TranscriptQuery) => TranscriptQuery): Promise<TranscriptEntry[]> {
    const rows = await narrow(this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey))
      .orderBy('seq')
      .execute();
    return rows.map(toTranscript);
  }

  async append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    await appendTranscript(this.db, sessionKey, entries, now);
  }
}
