/**
 * The port for sub-agents run by something other than a model in this gateway (src/runtimes: an ACP agent or a CLI
 * child process): the gateway hands such a run to its runtime and commits what comes back as it commits a model run.
 * Also the results an extension holds for a waiting run (held-results.ts settles them).
 */
import type { ModelMessage } from 'ai';
import type { TerminalRunStatus } from '../core/run-status.js';
import type { RuntimeKind } from '../core/session-key.js';
import type { NewInput, RunRequestSize, RunUsage, SubagentRecord } from './index.js';

export interface ExternalRunRequest {
  runId: string;
  sessionKey: string;
  agentId: string;
  subagent: SubagentRecord;
  /** The runtime's name under `acp.agents` or `runtimes`. */
  name: string;
  /** The run's inputs' text: the task (and the parent's context) on the first run. */
  prompt: string;
  /** Where the child works and what its file and terminal requests are confined to. */
  workdir: string;
  /** Aborted with an `AbortReason`: a kill (`cancel`), the timeout, a shutdown. */
  signal: AbortSignal;
  /** What a timed-out run's error says (which limit applied). */
  timeoutMessage: string;
  /** Journals what the child reported (`runtime.update` events on the child's session), in order. */
  report: (updates: readonly RuntimeUpdate[]) => Promise<void>;
  /** Streams the child's message text to whoever watches the session, as a model run's deltas are. */
  delta?: (text: string) => void;
  /** Why a write to this absolute path is refused to the agent now (the mailbox's reservations), or undefined. */
  writeRefusal: (path: string) => Promise<string | undefined>;
  /**
   * Asks a person (an approval request, docs/gates.md) and waits for the answer: for a permission whose kind the config
   * sets to `ask`. The n-th question of the run is its `index`, so that the same question asked again finds its request.
   */
  askApproval: (question: RuntimeQuestion) => Promise<{ approved: boolean; why: string }>;
}

/** What a runtime asks a person about: the tool and its arguments as the child gave them, and why it asks. */
export interface RuntimeQuestion {
  index: number;
  subject: string;
  args: unknown;
  details: Record<string, unknown>;
  reason: string;
}

/** One thing a child reported: an ACP `session/update` (as the agent sent it), a CLI's line, or what the gateway did for it. */
export interface RuntimeUpdate {
  /** `message`, `thought`, `tool_call`, `tool_call_update`, `plan`, `permission`, `file`, `terminal`, `line`, `stderr`, ... */
  kind: string;
  [field: string]: unknown;
}

export interface ExternalRuntime {
  /** Never throws for the child's failures: a crash, a refusal or a timeout is the run's outcome. */
  run(request: ExternalRunRequest): Promise<ExecutedRun>;
}

export type ExternalRuntimes = Partial<Record<RuntimeKind, ExternalRuntime>>;

export interface ExecutedRun {
  status: TerminalRunStatus;
  finalText: string | null;
  /** What the run adds to the transcript, in order: assistant and tool messages, and steered inputs. */
  messages: ModelMessage[];
  usage: RunUsage;
  promptChars: number;
  /** The request bodies its model calls sent. */
  request: RunRequestSize;
  /** Tool calls the run started (finished or not). */
  toolCalls: number;
  error?: { code: string; message: string };
}

/** A result a run took while it waited, not settled yet. */
export interface HeldResult {
  /** The run that took it (null when no run holds it any more). */
  runId: string | null;
  /** The message the session gets if the run does not commit; none when there is nothing to give (no reply came yet). */
  redelivery?: Omit<NewInput, 'id'>;
  /** Records the outcome: `redelivered` once the message is accepted, otherwise kept by the run or let go. */
  settle(redelivered: boolean): Promise<void>;
}

/** Where held results are kept: exchanges (sessions_send replies) and remote tasks (a2a_send results). */
export interface HeldResultSource {
  /** The results `runId` holds, or with no run, every unsettled one (recovery). */
  held(runId?: string): Promise<HeldResult[]>;
}
