/**
 * What the sub-agent objects share: who is spawning, the dependencies the assembly hands them, and the limits a
 * sub-agent lives under. The answer types (spawn requests and results, views, waits) are the door's, in ports/gateway.ts.
 */
import type { SwitchboardConfig } from '../../config/schema.js';
import { resolveLimits } from '../../core/subagent.js';
import { parseSessionKey } from '../../core/session-key.js';
import type { Clock, IdGenerator, InputRecord, NewEvent, NewInput, NewToolCall, Store } from '../../ports/index.js';
import type { AgentRegistry } from '../agents/registry.js';
import type { Wakeups } from '../../kit/wait-until.js';

export interface Spawner {
  sessionKey: string;
  agentId: string;
  /** Dedupes a spawn without a correlationId: the tool call's ledger key. */
  idempotencyKey: string;
  /** The tool call spawning, recorded in the ledger in the spawn's transaction. */
  call?: NewToolCall;
}

export interface SubagentDeps {
  config: SwitchboardConfig;
  store: Store;
  agents: AgentRegistry;
  clock: Clock;
  ids: IdGenerator;
  /** Signs handles; kept in the data directory so handles outlive a restart. */
  secret: string;
  /** Where worktrees are made (`<dataDir>/worktrees`); without it `worktree: true` is refused. */
  worktreeRoot?: string;
  accept: (input: NewInput) => Promise<InputRecord>;
  wake: (sessionKey: string) => void;
  /** Aborts the run wherever it runs (on another gateway through the journal). */
  abortRun: (runId: string) => Promise<boolean>;
  /** The names of the tools a session is offered now. */
  toolNames: (sessionKey: string) => Promise<string[]>;
  checkModel: (model: string) => void;
  validateMessage: (message: unknown) => string;
  /** What waits sleep on (see waitUntil). */
  wakeups: Wakeups;
  isStopping: () => boolean;
  journal: (event: NewEvent) => Promise<unknown>;
  /** Publishes what the store just wrote: its journal events, and its outbox rows for delivery. */
  afterWrite: () => void;
  log: (message: string) => void;
}

/**
 * The limits a sub-agent lives under: those of the agent that spawned it (the agent of its parent
 * session), or the defaults once that agent is no longer configured.
 */
export function spawnerLimits(config: SwitchboardConfig, agents: AgentRegistry, parentSession: string) {
  const agentId = parseSessionKey(parentSession)?.agentId ?? '';
  return resolveLimits(config.agents.defaults.subagents, agents.has(agentId) ? agents.get(agentId).config.subagents : undefined, agentId);
}
