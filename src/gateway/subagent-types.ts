/** The shapes the sub-agent module speaks in: spawn requests and results, views, waits, and its dependencies. */
import type { SwitchboardConfig } from '../config/schema.js';
import type { SubagentHandle, SubagentRole } from '../core/subagent.js';
import type { Clock, IdGenerator, InputRecord, NewEvent, NewInput, NewToolCall, Store, SubagentRecord } from '../ports/index.js';
import type { AgentRegistry } from './registry.js';
import type { Wakeups } from '../kit/wait-until.js';

export interface Spawner {
  sessionKey: string;
  agentId: string;
  /** Dedupes a spawn without a correlationId: the tool call's ledger key. */
  idempotencyKey: string;
  /** The tool call spawning, recorded in the ledger in the spawn's transaction. */
  call?: NewToolCall;
}

export interface SpawnRequest {
  task: unknown;
  context?: string;
  agentId?: string;
  label?: string;
  model?: string;
  role?: SubagentRole;
  tools?: string[];
  timeoutSeconds?: number;
  correlationId?: string;
  cwd?: string;
  worktree?: boolean;
  /** An external runtime instead of a model in this gateway (docs/runtimes.md); `agent` names it. */
  runtime?: 'model' | 'acp' | 'process';
  /** The runtime's name under `acp.agents` (runtime acp) or `runtimes` (runtime process). */
  agent?: string;
}

export interface SpawnResult {
  status: 'accepted';
  runId: string;
  childSessionKey: string;
  handle: SubagentHandle;
  /** Set when the correlationId was used before: this is that sub-agent, not a new one. */
  existing?: true;
}

export interface SubagentView {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  agentId: string;
  label: string | null;
  depth: number;
  role: SubagentRole;
  state: SubagentRecord['state'];
  /** Its run ended while its own sub-agents still worked; it will be woken when they are done. */
  waitingForSubagents: boolean;
  elapsedMs: number;
  tokens: { input: number; output: number };
  diagnostic: string | null;
  runId: string | null;
  history: SubagentRecord['history'];
  resultChars: number | null;
  worktree: { path: string; branch: string } | null;
  /** The external runtime it runs on (`acp:<name>`, `process:<name>`), or null for a model in the gateway. */
  runtime: string | null;
  /** The model it was spawned with; null when it runs on its agent's own. */
  model: string | null;
}

export interface WaitOutcome {
  /** ok: all succeeded; partial: some failed, within maxFailures; failed: more failed than maxFailures; timeout: not all were done in time. */
  status: 'ok' | 'partial' | 'failed' | 'timeout';
  children: (SubagentView & { resultPreview: string | null })[];
  succeeded: number;
  running: number;
  failed: { childSessionKey: string; label: string | null; state: string; why: string | null }[];
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
