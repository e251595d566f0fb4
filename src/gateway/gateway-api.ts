/**
 * The one door into the gateway for fronts (control API, A2A server, the board, and later the mailbox and the
 * console): accept an input, wait for it, query, cancel, subscribe to events, and hand deliveries to the outbox.
 * Fronts are typed against this, never against the gateway's store; a front with state of its own (A2A tasks)
 * gets its own store port from the composition root. The Gateway implements it (gateway.ts).
 */
import type { SwitchboardConfig } from '../config/schema.js';
import type { NewEvent, NewOutboxRow, OutboxRecord, RecoveryReport } from '../ports/index.js';
import type { ConfigReload } from '../config/reload.js';
import type { LiveListener } from './event-bus.js';
import type { GatewayControl } from './gateway-control.js';
import type { LaneName, StalledLane } from './lanes.js';
import type { OutboxHandler } from './outbox.js';
import type { AgentRegistry } from './registry.js';
import type { GatewayView } from './presence.js';

export interface GatewayStatus {
  gatewayId: string;
  startedAt: number;
  uptimeMs: number;
  /** The newest journal event published (the console's overview starts its stream a few events before it). */
  journalSeq: number;
  agents: string[];
  lanes: Record<LaneName, { active: number; waiting: number; max: number }>;
  activeRuns: { sessionKey: string; runId: string | null }[];
  stalledLanes: StalledLane[];
  lastRecovery: RecoveryReport;
  /** Runs this gateway recovered after their leases expired (another gateway's, or its own renewed too late). */
  takenOver: { runs: number; lastAt: number | null };
}

export interface GatewayApi
  extends Pick<
    GatewayControl,
    // accept
    | 'send'
    | 'sendAs'
    | 'acceptA2AMessage'
    | 'acceptBoardTask'
    | 'acceptMailboxMessage'
    // wait
    | 'waitForInput'
    | 'inputOutcome'
    | 'inputRunId'
    // query
    | 'resolveId'
    | 'getExchange'
    | 'listSessions'
    | 'describeSession'
    | 'history'
    | 'journalAfter'
    | 'listRuns'
    | 'getRun'
    | 'runCompletions'
    | 'runToolCalls'
    | 'listExchanges'
    | 'listSubagents'
    | 'getSubagent'
    | 'offeredToolNames'
    | 'listA2ATasks'
    | 'getA2ATask'
    | 'listOutbox'
    | 'outboxBacklog'
    | 'annotateSession'
    | 'usageSince'
    | 'collaboration'
    | 'messagePath'
    // cancel
    | 'cancelInput'
    | 'cancelRun'
    | 'killSubagent'
  > {
  // configuration and the address book
  readonly config: SwitchboardConfig;
  /** This gateway's id: stable across its restarts, one per data directory. */
  readonly gatewayId: string;
  readonly agents: AgentRegistry;
  readonly stopping: boolean;
  status(): GatewayStatus;
  /** Every gateway on this database: alive or gone, its heartbeat, the sessions it holds, its journal lag. */
  gateways(): Promise<GatewayView[]>;
  ready(): Promise<boolean>;
  reloadConfig(next: SwitchboardConfig): ConfigReload;
  /** Takes the config's secrets (tokens, keys, header values) out of a text before it leaves the gateway. */
  redact(text: string): string;
  /** Resolves once everything the store committed so far is durable. */
  durable(): Promise<void>;
  /** A consistent copy of the store in a new file (SQLite; see Store.backup). */
  backupStore(path: string): Promise<{ path: string; bytes: number }>;
  // cancel
  settleDeadOutbox(id: string, action: 'retry' | 'drop'): Promise<OutboxRecord>;
  // events and deliveries
  subscribe(listener: LiveListener): () => void;
  publishJournal(): Promise<void>;
  /** Appends a front's own event to the journal (`a2a.refused`) and publishes it. */
  recordEvent(event: NewEvent): Promise<void>;
  watchDeltas(sessionKey?: string): () => void;
  registerDelivery(kind: string, handler: OutboxHandler): void;
  enqueueDelivery(row: NewOutboxRow): Promise<void>;
  /** Delivers now the outbox rows a front wrote through its own store (A2A pushes), rather than at the next poll. */
  kickDeliveries(): void;
}
