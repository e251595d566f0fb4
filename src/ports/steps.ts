/**
 * A run's committed steps (ARCHITECTURE.md section 4.7): one model call and the tool calls it asked for. The model's
 * answer is committed before its tools run, their results before the next model call, so that a run a crash cut
 * resumes from its last committed step instead of asking the model again. Times are milliseconds since the Unix epoch.
 */
import type { RunRequestSize } from '../core/request-size.js';
import type { EventRecord } from './journal.js';
import type { SettledToolCall } from './tool-calls.js';

export interface StepUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
}

/** What one of a step's tool calls answered: its output, or the error it threw. */
export interface StepToolResult {
  toolCallId: string;
  toolName: string;
  output?: unknown;
  error?: string;
}

export interface NewStep {
  runId: string;
  sessionKey: string;
  /** The run's lease epoch: a step of a run fenced off is refused (LEASE_LOST). */
  epoch: number;
  /** The step's place in the run, from 0; the ledger keys its calls by it. */
  step: number;
  /** The run's attempt that made the call (1, then one more per resume). */
  attempt: number;
  model: string;
  /** The model's answer as the provider gave it (content parts, finish reason, response metadata): replayed on resume. */
  response: unknown;
  /** The names of the tools it asked for, in order (what `runs show` and the journal say). */
  toolNames: string[];
  /** The inputs the model read first at this step: the run's own at step 0, those steered in before a later one. */
  inputIds: string[];
  usage: StepUsage;
  request: RunRequestSize;
  /** When the model call began; `now` is when it answered. */
  startedAt: number;
}

export interface StepRecord extends Omit<NewStep, 'epoch'> {
  /** The step's tool results once committed; null while its tools run (or when a crash cut them). */
  results: StepToolResult[] | null;
  answeredAt: number;
  settledAt: number | null;
}

/** The step store: written by a run as it goes, read by its resume, `runs show` and `runs fork`. */
export interface RunStepStore {
  /**
   * Commits a model call's answer as the run's step, with its usage added to the run's (so a crash never hides what
   * was spent) and a `run.step` event, in one transaction, only while the run is `running` at `epoch`: else it writes
   * nothing and throws LEASE_LOST.
   */
  record(step: NewStep, now: number): Promise<EventRecord>;
  /**
   * Commits the results of a step's tool calls, and the ledger's rows of its side-effecting ones, fenced as `record`
   * is. A step already settled keeps its first results.
   */
  settle(
    step: { runId: string; epoch: number; step: number; results: StepToolResult[]; toolCalls: SettledToolCall[] },
    now: number,
  ): Promise<void>;
  /** The run's steps, in order. */
  list(runId: string): Promise<StepRecord[]>;
}
