/**
 * The port for sub-agents run by something other than a model in this gateway (docs/runtimes.md): an ACP agent or a
 * CLI child process. The session runner hands such a run to the runtime its sub-agent record names, and commits what
 * comes back exactly as it commits a model run: the transcript, the frozen result, the completion to the parent.
 */
import type { RuntimeKind } from '../core/session-key.js';
import type { SubagentRecord } from '../ports/index.js';
import type { ExecutedRun } from './run-executor.js';

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

/** `acp:<name>` / `process:<name>` as stored on the sub-agent record. */
export function parseRuntime(runtime: string): { kind: RuntimeKind; name: string } | undefined {
  const at = runtime.indexOf(':');
  const kind = runtime.slice(0, at);
  if (at < 0 || (kind !== 'acp' && kind !== 'process')) return undefined;
  return { kind, name: runtime.slice(at + 1) };
}
