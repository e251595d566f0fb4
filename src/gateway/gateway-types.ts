/** What the gateway is built from: its dependencies and the extensions the composition root plugs in. */
import type { SwitchboardConfig } from '../config/schema.js';
import type { Clock, IdGenerator, InputRecord, NewInput, NewOutboxRow, RecoveryReport, Store } from '../ports/index.js';
import type { AgentMessaging } from './messaging.js';
import type { HeldResultSource } from './held-results.js';
import type { OutboxHandler } from './outbox.js';
import type { Subagents } from './subagents.js';
import type { GatewayTool } from './tool-contract.js';
import type { GatewayApi } from './gateway-api.js';
import type { ExternalRuntimes } from './external-run.js';

export interface GatewayDeps {
  config: SwitchboardConfig;
  store: Store;
  /** Stable across restarts of the same gateway (persisted in the data directory). */
  gatewayId: string;
  clock?: Clock;
  ids?: IdGenerator;
  /**
   * What the composition root (src/app.ts) plugs in: the tools agents get and the services beside the
   * gateway (the A2A client), built from the gateway's own parts. Without it, agents get no tools.
   */
  extensions?: (parts: GatewayParts) => GatewayExtension[];
  /** Signs sub-agent handles; the data directory keeps it so handles outlive a restart (default: a new one per process). */
  capabilitySecret?: string;
  /** The data directory, for sub-agent worktrees (`<dataDir>/worktrees`). */
  dataDir?: string;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** This build's version, shown in the gateways' registry (`switchboard status`). */
  version?: string;
  /** Benchmarks only, to measure what the tool-call ledger costs: calls are keyed by tool-call id and not recorded. */
  withoutToolLedger?: boolean;
}

/** The gateway's parts an extension may be built on. */
export interface GatewayParts {
  config: SwitchboardConfig;
  store: Store;
  clock: Clock;
  messaging: AgentMessaging;
  subagents: Subagents;
  /** Stores an input produced by the extension and wakes its session. */
  accept: (input: NewInput) => Promise<InputRecord>;
  /** Adds an outbox row and has it delivered soon. */
  enqueueDelivery: (row: NewOutboxRow) => Promise<void>;
  log: (message: string) => void;
  gatewayId: string;
  /** The data directory, when the gateway has one (the file mailbox's default folder is in it). */
  dataDir?: string;
  /** The gateway's one door (GatewayApi), for services that use it once the gateway is built: from `start()` on. */
  api: () => GatewayApi;
}

/**
 * Something that works beside the gateway: tools for agents, outbox kinds it delivers, and a service
 * with a life of its own (started after recovery, stopped first).
 */
export interface GatewayExtension {
  tools?: readonly GatewayTool[];
  /** Tools given to one agent, asked at each run (MCP servers' tools, which are known only once a server is up). */
  agentTools?: (agentId: string) => Promise<readonly GatewayTool[]>;
  deliveries?: Record<string, OutboxHandler>;
  /** Results its tools hand to waiting runs, settled by the gateway's one redelivery path when a run commits. */
  heldResults?: HeldResultSource;
  /** After runs were recovered (taken over, or interrupted at a stop): take up what they waited for. */
  afterRecovery?: (report: RecoveryReport) => Promise<void>;
  /** Why the workspace tools may not write this absolute path for the agent now (the mailbox's reservations), or undefined. */
  writeGuard?: (agentId: string, path: string) => Promise<string | undefined>;
  /** External runtimes sub-agents may run on (the ACP agents and CLI processes of src/runtimes). */
  runtimes?: ExternalRuntimes;
  start?: () => Promise<void>;
  /** Stops taking up new work; settles once the work under way has ended (the gateway's stop waits for it). */
  stop?: () => void | Promise<void>;
}
