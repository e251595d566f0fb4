/**
 * The store ports over Kysely, in SQL that SQLite and PostgreSQL both accept: the concern stores assembled. An adapter
 * supplies the Kysely instance and its dialect object (sql/dialect.ts), which holds what differs between the engines,
 * the database clock among it (lease time comes from the database).
 */
import type { Kysely } from 'kysely';
import type {
  IdKind,
  A2ATaskStore,
  BoardStore,
  EventJournal,
  ExchangeStore,
  GatewayRegistry,
  Signals,
  InputStore,
  LeaseStore,
  OutboxStore,
  RunStore,
  SessionStore,
  Store,
  SubagentStore,
  TranscriptStore,
  ToolCallStore,
  RunStepStore,
  MemoryStore,
  MailboxStore,
  ChannelStore,
  ApprovalStore,
  BudgetStore,
  ScheduleStore,
} from '../../ports/index.js';
import { KyselyEventJournal, KyselyLeaseStore, KyselyOutboxStore } from '../journal/journal-stores.js';
import { KyselyRunStore, type RunFastPaths } from '../runs/run-store.js';
import { KyselyGatewayRegistry } from '../gateways/gateway-registry.js';
import { KyselySessionStore } from '../sessions/session-store.js';
import { KyselyInputStore, type InputFastPaths } from '../sessions/input-store.js';
import { KyselyTranscriptStore } from '../sessions/transcript-store.js';
import { leaseTaker, type Relax } from '../sql/writes.js';
import { KyselyExchangeStore } from '../exchanges/exchange-store.js';
import { KyselyA2ATaskStore } from '../a2a/a2a-task-store.js';
import { KyselyBoardStore, type OneStatementClaim } from '../board/board-store.js';
import { KyselySubagentStore } from '../subagents/subagent-store.js';
import type { Database } from '../schema/database.js';
import { KyselyMemoryStore } from '../memory/memory-store.js';
import { KyselyMailboxStore } from '../mailbox/mailbox-store.js';
import { KyselyChannelStore } from '../channels/channel-store.js';
import { KyselyApprovalStore } from '../gates/approval-store.js';
import { KyselyBudgetStore } from '../gates/budget-store.js';
import { KyselyScheduleStore } from '../schedules/schedule-store.js';
import { KyselyToolCallStore } from '../tool-calls/tool-call-store.js';
import { KyselyRunStepStore } from '../steps/step-store.js';
import { matchIds } from './match-ids.js';
import type { SqlDialect } from '../sql/dialect.js';
import { copyTables, firstNonEmpty, type TableCopy } from './store-copy.js';
import { SwitchboardError } from '../../core/errors.js';
import { NO_SIGNALS } from './no-signals.js';

export class KyselyStore implements Store {
  readonly toolCalls: ToolCallStore;
  readonly memory: MemoryStore;
  readonly mailbox: MailboxStore;
  readonly channels: ChannelStore;
  readonly approvals: ApprovalStore;
  readonly budgets: BudgetStore;
  readonly schedules: ScheduleStore;
  readonly subagents: SubagentStore;
  readonly a2aTasks: A2ATaskStore;
  readonly board: BoardStore;
  readonly sessions: SessionStore;
  readonly exchanges: ExchangeStore;
  readonly inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  readonly steps: RunStepStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;
  readonly gateways: GatewayRegistry;
  readonly signals: Signals = NO_SIGNALS;

  constructor(
    protected readonly db: Kysely<Database>,
    protected readonly dialect: SqlDialect,
    adapter: {
      /** An adapter's faster accept paths for inputs, where it has them. */
      inputPaths?: InputFastPaths;
      /** An adapter's own transcript store, where it can keep sessions' recent entries. */
      transcript?: (plain: KyselyTranscriptStore) => TranscriptStore;
      relax?: Relax;
      /** An adapter's faster start and commit of a run, where it has them. */
      runPaths?: RunFastPaths;
      /** An adapter's board claim in one statement. */
      boardClaim?: OneStatementClaim;
      /** A run's start answers with the session's history and what it reached out to (RunStore.start). */
      historyWithStart?: boolean;
    } = {},
  ) {
    const dbNowMs = () => dialect.nowMs();
    this.toolCalls = new KyselyToolCallStore(db);
    this.memory = new KyselyMemoryStore(db, dialect);
    this.mailbox = new KyselyMailboxStore(db, dialect);
    this.channels = new KyselyChannelStore(db);
    this.approvals = new KyselyApprovalStore(db, dbNowMs);
    this.budgets = new KyselyBudgetStore(db, dialect, dbNowMs);
    this.schedules = new KyselyScheduleStore(db);
    this.subagents = new KyselySubagentStore(db, dialect);
    this.a2aTasks = new KyselyA2ATaskStore(db, dialect);
    this.board = new KyselyBoardStore(db, dialect, undefined, adapter.boardClaim);
    this.sessions = new KyselySessionStore(db, dbNowMs, adapter.relax);
    this.exchanges = new KyselyExchangeStore(db, dialect);
    this.inputs = new KyselyInputStore(db, dialect, adapter.relax, adapter.inputPaths);
    this.transcript = adapter.transcript ? adapter.transcript(new KyselyTranscriptStore(db)) : new KyselyTranscriptStore(db);
    // One statement takes a lease, for the lease store and for a run's start.
    const takeLease = leaseTaker(dbNowMs);
    const startReads = adapter.historyWithStart
      ? async (sessionKey: string, limit: number) => ({
          history: await this.transcript.list(sessionKey, { limit }),
          reachedOut: await this.sessions.reachedOut(sessionKey),
        })
      : undefined;
    this.runs = new KyselyRunStore(db, dialect, dbNowMs, takeLease, adapter.relax, adapter.runPaths, startReads);
    this.steps = new KyselyRunStepStore(db, adapter.relax);
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
