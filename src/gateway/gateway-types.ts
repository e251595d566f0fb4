/** What the gateway is built from: its dependencies and the extensions the composition root plugs in. */
import type { SwitchboardConfig } from '../config/schema.js';
import type { ExtensionParts, GatewayExtension } from '../ports/extensions.js';
import type { Clock, IdGenerator, InputRecord, NewInput, Store, Tracing } from '../ports/index.js';
import type { GatewayLog } from '../ports/gateway.js';
import type { Models } from '../ports/models.js';
import type { AgentMessaging } from './messaging/messaging.js';
import type { Subagents } from './subagents/subagents.js';

export interface GatewayDeps {
  config: SwitchboardConfig;
  store: Store;
  /** The model providers (src/models' ModelRegistry, built by the composition root). */
  models: Models;
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
  log?: GatewayLog;
  /** Where spans go (src/telemetry); without it they go nowhere. */
  tracing?: Tracing;
  /** This build's version, shown in the gateways' registry (`switchboard status`). */
  version?: string;
  /** Benchmarks only, to measure what the tool-call ledger costs: calls are keyed by tool-call id and not recorded. */
  withoutToolLedger?: boolean;
}

/** The parts the composition root builds the gateway's own tools from (src/app.ts), beside what every extension gets. */
export interface GatewayParts extends ExtensionParts {
  store: Store;
  /**
   * Stores an input the gateway's own kind of delivery makes (the A2A client's late result into the session that sent
   * it) and wakes its session: unchecked, so only the composition root hands it on; a front's message goes through
   * Intake.accept.
   */
  accept: (input: NewInput) => Promise<InputRecord>;
  messaging: AgentMessaging;
  subagents: Subagents;
}
