/** How a front plugs into the gateway beside the door: its tools, the outbox kinds it delivers, and a life of its own. */
import type { SwitchboardConfig } from '../config/schema.js';
import type { GatewayApi, OutboxHandler } from './gateway.js';
import type { Clock, NewOutboxRow, RecoveryReport } from './index.js';
import type { ExternalRuntimes, HeldResultSource } from './runtimes.js';
import type { GatewayTool } from './tools.js';

/**
 * What an extension (a front beside the gateway: A2A's client, the board, the mailbox, memory, runtimes) is built on.
 * Not the store: the composition root hands each front its own store port.
 */
export interface ExtensionParts {
  config: SwitchboardConfig;
  clock: Clock;
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
