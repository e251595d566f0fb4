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
  /**
   * The results of the step before, committed with this one: a step whose tools have no effects may leave its
   * results to the next step's commit (a crash before it runs them again, which changes nothing).
   */
  previous?: { step: number; results: StepToolResult[] };
}

export interface StepRecord extends Omit<NewStep, 'epoch' | 'previous'> {
  /** The step's tool results once committed, or some of them while `settledAt` is null; null while its tools run. */
  results: StepToolResult[] | null;
  answeredAt: number;
  settledAt: number | null;
}

/** A fork of a run (`switchboard runs fork`): a new session that starts from the state after the run's first steps. */
export interface ForkRequest {
  /** The run forked from. */
  fromRunId: string;
  /** How many of its steps the fork keeps (0 to step - 1, as `runs show` numbers them): its model is asked from `step` on. */
  step: number;
  /** The new session's key; refused when a session has it already. */
  sessionKey: string;
  /** The new run's id. */
  runId: string;
  /** The gateway that forks: the new run's owner until a gateway resumes it. */
  owner: string;
  /** An id for each input copied into the fork. */
  newId: () => string;
}

export interface ForkedRun {
  sessionKey: string;
  runId: string;
  /** The copied inputs, in the order they were copied: the run's own, then those steered into the kept steps. */
  inputIds: string[];
  /** The `run.forked` event, to publish. */
  event: EventRecord;
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
   * is. A step already settled keeps its first results. `partial`: the results of only some of its calls (the run
   * suspends while another of them waits): the step stays unsettled, and a later settle replaces them.
   */
  settle(
    step: { runId: string; epoch: number; step: number; results: StepToolResult[]; toolCalls: SettledToolCall[]; partial?: boolean },
    now: number,
  ): Promise<void>;
  /** The run's steps, in order. */
  list(runId: string): Promise<StepRecord[]>;
  /**
   * Forks a run at `step`, in one transaction: a new session of the run's agent (no parent, no route) holding the
   * transcript its session had before the run, and a new `suspended` run in it holding copies of the run's steps 0 to
   * `step` - 1 and of the inputs they read (queued for it, as a suspended run's are), so that the session's next run
   * resumes it: the kept steps are replayed and the model is asked from `step` on. Appends `run.forked`.
   *
   * Contract: the copied steps keep their answers, results, times and attempts, but not their usage (tokens and request
   * bytes are 0): a resume folds the usage of the steps it replays into its run's, and the fork spent nothing on them,
   * so no token is counted twice (the source run's rows keep what they cost; the resume still counts each replayed
   * step as one model call and one step of its run). The new run's row starts with no usage, and with the highest
   * attempt of the copied steps, so that the resume's (one more) marks them all as replayed.
   * A copied input is a new row (`fork:<runId>:<source input id>` its idempotency key) with the source's text, mode and
   * provenance and no note; the copied steps name the new rows.
   *
   * Refused with INVALID_REQUEST, writing nothing: a run with no committed step, a `step` beyond its committed steps, a
   * kept step whose results are not committed, a session key already taken; RUN_NOT_FOUND for an unknown run.
   */
  fork(request: ForkRequest, now: number): Promise<ForkedRun>;
}
