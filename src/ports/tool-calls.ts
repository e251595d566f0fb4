/** The tool-call ledger's rows (ARCHITECTURE.md 4.6). Times are milliseconds since the Unix epoch. */

export type ToolCallState = 'started' | 'completed';

/**
 * Where a tool call sits, in terms a retried run keeps: `scope` is the run's first input id, `step` the
 * model step and `index` the call's place among that step's calls.
 */
export interface ToolCallPosition {
  scope: string;
  step: number;
  index: number;
}

export interface NewToolCall extends ToolCallPosition {
  /** The effect key: the position, the tool and a hash of its arguments. */
  key: string;
  tool: string;
  argsHash: string;
  sessionKey: string;
  runId: string;
}

export interface ToolCallRecord extends ToolCallPosition {
  key: string;
  tool: string;
  argsHash: string;
  sessionKey: string;
  /** The run that first made the call, and the latest run that made it again. */
  firstRunId: string;
  runId: string;
  state: ToolCallState;
  result: unknown;
  /** The key of an earlier call at the same position with another tool or other arguments. */
  divergedFrom: string | null;
  /** How often it was made: 1, plus one per retried run that made it again. */
  calls: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * The tool-call ledger (ARCHITECTURE.md section 4.6). Rows are written inside transactions that happen
 * anyway: a call with an effect in the store is recorded in the effect's own transaction (the input, the
 * exchange, the spawn), and every call's result in the run's commit (`RunCommit.toolCalls`). The effect
 * itself is written under the call's key as its idempotency key, so a retry at the same position finds
 * it and causes no second effect.
 */
export interface ToolCallStore {
  get(key: string): Promise<ToolCallRecord | undefined>;
  /**
   * For an effect outside the store (a file written, a command run): records the call as `started`, with
   * `intent` as its result until the run's commit settles it, in a transaction of its own before the effect.
   * Answers the row, and whether it was there already (a crashed run made the call: the tool decides from the
   * recorded intent whether the effect happened, never doing it twice).
   */
  begin(call: NewToolCall, intent: unknown, now: number): Promise<{ record: ToolCallRecord; earlier: boolean }>;
  /** Oldest first. */
  list(filter: { sessionKey?: string; runId?: string; limit?: number }): Promise<ToolCallRecord[]>;
}

/** A call's outcome, written with the run's commit. `rerun`: an earlier run had made the same call. */
export interface SettledToolCall {
  call: NewToolCall;
  result: unknown;
  rerun: boolean;
}
