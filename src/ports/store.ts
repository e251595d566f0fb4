/** The whole store: every port, as one adapter provides them. Times are milliseconds since the Unix epoch. */
import type { A2ATaskStore } from './a2a.js';
import type { BoardStore } from './board.js';
import type { ExchangeStore } from './exchanges.js';
import type { GatewayRegistry } from './gateways.js';
import type { EventJournal, OutboxStore } from './journal.js';
import type { LeaseStore, RunStore } from './runs.js';
import type { InputStore, SessionStore, TranscriptStore } from './sessions.js';
import type { Signals } from './signals.js';
import type { RunStepStore } from './steps.js';
import type { SubagentStore } from './subagents.js';
import type { ToolCallStore } from './tool-calls.js';
import type { MemoryStore } from './memory.js';
import type { MailboxStore } from './mailbox.js';
import type { ChannelStore } from './channels.js';
import type { ApprovalStore, BudgetStore } from './gates.js';
import type { ScheduleStore } from './schedules.js';

/** The records whose ids a person may shorten (`runs show bd29b5f4`, as git does). */
export type IdKind = 'run' | 'subagent' | 'outbox' | 'exchange' | 'a2a_task' | 'input' | 'board_task' | 'approval';

export interface Store {
  /** Ids of `kind` that start with `prefix`, at most `limit`, in id order; an id equal to `prefix` alone. */
  matchIds(kind: IdKind, prefix: string, limit: number): Promise<string[]>;
  readonly toolCalls: ToolCallStore;
  /** Agents' memory and its full-text index (docs/memory.md). */
  readonly memory: MemoryStore;
  /** The file mailbox's reservations (docs/mailbox.md). */
  readonly mailbox: MailboxStore;
  /** Chat channels' senders and the parts of replies sent (docs/channels.md). */
  readonly channels: ChannelStore;
  /** Approval requests of gated tool calls (docs/gates.md). */
  readonly approvals: ApprovalStore;
  /** What each budget key spent and holds reserved (docs/gates.md). */
  readonly budgets: BudgetStore;
  /** Schedules' slots, claimed once across gateways (docs/schedules.md). */
  readonly schedules: ScheduleStore;
  readonly subagents: SubagentStore;
  readonly a2aTasks: A2ATaskStore;
  /** The task board's own port (src/board). */
  readonly board: BoardStore;
  readonly sessions: SessionStore;
  readonly exchanges: ExchangeStore;
  readonly inputs: InputStore;
  readonly transcript: TranscriptStore;
  readonly runs: RunStore;
  /** A run's committed steps (ARCHITECTURE.md 4.7). */
  readonly steps: RunStepStore;
  readonly outbox: OutboxStore;
  readonly leases: LeaseStore;
  readonly events: EventJournal;
  /** The gateways sharing this store, and the secrets they share. */
  readonly gateways: GatewayRegistry;
  /** Wake-ups between the gateways sharing this store (none where one gateway has it to itself). */
  readonly signals: Signals;
  /**
   * A consistent copy of the whole store, made while it runs, in a new file at `path` (which must not exist), checked
   * whole before it answers. SQLite only: PostgreSQL is backed up with the server's own tools (pg_dump), and refused.
   */
  backup(path: string): Promise<{ path: string; bytes: number }>;
  /** Resolves once every write committed before the call is durable (at once where each commit already is). */
  durable(): Promise<void>;
  close(): Promise<void>;
}
