/** Runs: what one model-tool loop used and sent, its commit, its lease, and recovery. Times are milliseconds since the Unix epoch. */
import type { RunRequestSize } from '../core/request-size.js';
import type { RunStatus, TerminalRunStatus } from '../core/run-status.js';

export type { RunRequestSize };
import type { EventRecord, NewEvent, NewOutboxRow } from './journal.js';
import type { InputRecord, NewTranscriptEntry, SessionRecord, TranscriptEntry } from './sessions.js';
import type { SettledToolCall } from './tool-calls.js';
import type { StepToolResult } from './steps.js';

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  steps: number;
  /** Input tokens the provider read from its prompt cache (0 when it has none or does not say). */
  cachedInputTokens?: number;
}

/** Runs' usage summed for one agent on one model. */
export interface UsageTotal {
  agentId: string;
  model: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
}

/** Runs' usage summed for one agent on one model over the runs started in one slice of time, `[at, at + bucketMs)`. */
export interface UsageSlice extends UsageTotal {
  at: number;
}

export interface RunRecord {
  id: string;
  sessionKey: string;
  agentId: string;
  status: RunStatus;
  owner: string;
  epoch: number;
  model: string;
  startedAt: number;
  endedAt: number | null;
  usage: RunUsage;
  preambleChars: number;
  promptChars: number;
  /** The request bodies the model calls actually sent. */
  request: RunRequestSize;
  finalText: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** 1, and one more each time the run resumed from its last committed step (after a crash, a lost lease or a wait). */
  attempt: number;
  /** While the run is suspended in a wait (ARCHITECTURE.md 4.7): the wait's deadline; null otherwise. */
  waitingUntil: number | null;
}

export interface NewRun {
  id: string;
  sessionKey: string;
  agentId: string;
  owner: string;
  /** How long the lease the run takes lasts, unless renewed. */
  leaseTtlMs: number;
  model: string;
  inputIds: string[];
  /** Set when the session is a sub-agent's: its first run marks it running, in the same transaction. */
  subagentId?: string;
  /** The history the run will read: a store may hand back the session's newest entries with the start (StartedRun.history). */
  historyLimit?: number;
}

/** Each waiting tool call's deadline, by its place in the run (`<step>:<index>`): a resumed wait goes on to its own. */
export type WaitDeadlines = Record<string, number>;

/** A run suspended in a wait: it resumes when an event with one of `keys` comes, or at `until` (its first deadline). */
export interface RunWait {
  runId: string;
  sessionKey: string;
  until: number;
  keys: string[];
  /** The gateway that suspended it (it listened for its events from then; another listens from its next sweep). */
  owner?: string;
}

export interface ResumeRun {
  runId: string;
  sessionKey: string;
  owner: string;
  leaseTtlMs: number;
  /** Set when the session is a sub-agent's: it stays running under the same run. */
  subagentId?: string;
}

export interface RunOutcome {
  status: TerminalRunStatus;
  usage: RunUsage;
  preambleChars: number;
  promptChars: number;
  request?: RunRequestSize;
  finalText: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
}

export interface RunCommit {
  runId: string;
  sessionKey: string;
  epoch: number;
  outcome: RunOutcome;
  transcript: NewTranscriptEntry[];
  /** Every input the run claimed (including steered ones); all become consumed. */
  consumedInputIds: string[];
  outbox: NewOutboxRow[];
  events: NewEvent[];
  /** Set when the run's session is a sub-agent's: the store settles it (or freezes its answer) in the same transaction. */
  subagent?: { id: string; error: string | null; maxResultChars: number };
  /** The run's side-effecting tool calls and their results, recorded in the ledger. */
  toolCalls?: SettledToolCall[];
  /** Results of the run's steps that it left to its commit (their tools had no effects: ports/steps.ts). */
  stepResults?: { step: number; results: StepToolResult[] }[];
  /**
   * The W3C traceparent of the run's span: each outbox row the commit writes (its own and a sub-agent's completion)
   * names it as the delivery's parent, unless its payload names one (docs/observability.md).
   */
  trace?: string;
}

export interface RunStore {
  /**
   * Takes the session's lease for `run.owner` (as `LeaseStore.acquire` does) and, in the same transaction,
   * creates the run, claims its inputs and marks the session running. Writes nothing and answers `leased` when another
   * owner holds an unexpired lease, `taken` when an input is no longer queued, or `missing` when the session does not
   * exist.
   */
  start(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'>;
  /**
   * Resumes a `suspended` run under its own id (ARCHITECTURE.md 4.7): takes the session's lease, marks the run running
   * at the new epoch with its attempt one more, and claims again the inputs queued for it, in one transaction. Answers
   * as `start` does: `taken` when the run is no longer suspended (another gateway resumed it), `waiting` while it is
   * suspended in a wait not yet woken (`wake`).
   */
  resume(run: ResumeRun, now: number): Promise<ResumedRun | 'leased' | 'taken' | 'missing' | 'waiting'>;
  /**
   * Suspends a running run in a wait (ARCHITECTURE.md 4.7), fenced by its epoch as a commit is: the run becomes
   * `suspended` with the wait's deadline and wake keys, its inputs queued again for it, its lease let go and its
   * session idle, with a `run.suspended` event. Throws LEASE_LOST (writing nothing) if the epoch moved.
   */
  suspend(wait: RunWait & { epoch: number; deadlines: WaitDeadlines }, now: number): Promise<Journaled>;
  /** Ends a suspended run's wait (an event it waits for came, or its deadline): answers its session when this call did. */
  wake(runId: string): Promise<string | undefined>;
  /**
   * Asks a suspended run to end (`cancel`, `interrupt`): it is woken, and aborted as soon as it resumes, on whichever
   * gateway resumes it (ResumedRun.abortRequested). Answers its session, or undefined when it is not suspended.
   */
  requestAbort(runId: string, reason: 'cancel' | 'interrupt'): Promise<string | undefined>;
  /** The runs suspended in waits, each with its deadline and wake keys. */
  waiting(): Promise<RunWait[]>;
  /** Ends a suspended run that can never resume (its agent or session is gone): `interrupted`, with `why`. */
  abandon(runId: string, why: string, now: number): Promise<void>;
  /** Claims more queued inputs into a running run (steering). Returns the ids actually claimed. */
  claimMore(runId: string, sessionKey: string, epoch: number, inputIds: string[], now: number): Promise<string[]>;
  /**
   * A run commits atomically: transcript, inputs consumed, outcome, outbox rows and events in one
   * transaction, guarded by the lease epoch, and releases the lease. Throws LEASE_LOST (writing
   * nothing) if the epoch moved. Returns the run as committed.
   */
  commit(commit: RunCommit, now: number): Promise<CommittedRun>;
  get(id: string): Promise<RunRecord | undefined>;
  list(filter?: { sessionKey?: string; status?: RunStatus; limit?: number }): Promise<RunRecord[]>;
  /** The usage of the runs started at or after `since`, summed per agent and model. */
  usageSince(since: number): Promise<UsageTotal[]>;
  /**
   * The same, in slices of `bucketMs` from `since` (both whole milliseconds): one row per slice, agent and model that
   * had runs, oldest slice first (the console's charts).
   */
  usageByTime(since: number, bucketMs: number): Promise<UsageSlice[]>;
  /**
   * Crash recovery and takeover (`OrphanRecovery`): each orphan is `interrupted` with its diagnostic, in a
   * compare-and-set of its own, and its claimed inputs are queued again, or dropped with a note once they have been
   * interrupted more than `maxRetries` times. Its lease's epoch grows on the way, so an owner that still lives is
   * fenced off. Of several callers recovering one run, one does; the report lists what this call recovered.
   */
  recoverOrphans(recovery: OrphanRecovery, now: number): Promise<RecoveryReport>;
}

/**
 * The journal events a write appended, as committed. The writer hands them to the journal's tail, which
 * publishes them without reading them back.
 */
export interface Journaled {
  events: EventRecord[];
}

/** A run as it started: its lease's fencing epoch, and the inputs it claimed, oldest first. */
export interface StartedRun extends Journaled {
  epoch: number;
  inputs: InputRecord[];
  /** The run's session as the start left it (running): the run reads its route from here, not again. */
  session: SessionRecord;
  /**
   * With `historyLimit`, where the store reads it with the start (PostgreSQL in the same round trip, SQLite right after
   * its transaction): the session's newest that many transcript entries, oldest first, as `transcript.list(key, { limit })`
   * gives them. Undefined elsewhere.
   */
  history?: TranscriptEntry[];
  /** Read with the history, where it is: whether the session has spawned anyone, and whether a reply is still to come to it (SessionStore.reachedOut). */
  reachedOut?: { spawned: boolean; sent: boolean };
}

/** A run as it resumed: its row (attempt counted) and the inputs it claimed again, oldest first. */
export interface ResumedRun extends StartedRun {
  run: RunRecord;
  /** The deadlines of the calls it was suspended waiting in (none after a crash). */
  waitDeadlines: WaitDeadlines;
  /** Set when a cancel or an interrupt came while it was suspended: the run is aborted at once. */
  abortRequested?: 'cancel' | 'interrupt';
}

export interface CommittedRun extends Journaled {
  run: RunRecord;
  /**
   * Whether the session still holds queued inputs, as the commit saw them once it held the session's lease: an input
   * whose own start found the lease still held (another gateway's) is among them, so a lane that ends its run with
   * `false` and took no new input since need not read the queue again.
   */
  queued: boolean;
}

/** Which runs a recovery takes as orphans. */
export interface OrphanRecovery {
  /** The gateway recovering: it takes each orphan's lease and lets it go at once, its epoch grown. */
  recoverer: string;
  /**
   * `own`: every run `recoverer` left running, whatever its lease says (its previous process is gone: the data
   * directory's lock says so). `expired`: every running run whose lease expired or moved on to a later epoch, whoever
   * owned it, judged by the database clock (a lease renewed meanwhile keeps its run).
   */
  scope: 'own' | 'expired';
  /** The diagnostic recorded on a run, given its owner. */
  diagnostic: (owner: string) => string;
  maxRetries: number;
}

export interface RecoveryReport {
  interruptedRuns: string[];
  /** Runs that had committed a step: they resume from it (their inputs are queued again for them). */
  suspendedRuns: string[];
  requeuedInputs: string[];
  droppedInputs: string[];
  /** The sessions of the interrupted runs: each has inputs to run again or a drop to tell. */
  sessionKeys: string[];
}

export interface LeaseStore {
  /**
   * Takes the session's lease for `owner` if it is free, expired, or already `owner`'s, bumping the
   * fencing epoch. Expiry is judged by the database clock. A session's epoch only ever grows, across
   * releases too, so a writer holding an older one is fenced off for good.
   */
  acquire(sessionKey: string, owner: string, ttlMs: number): Promise<{ epoch: number } | undefined>;
  renew(sessionKey: string, owner: string, epoch: number, ttlMs: number): Promise<boolean>;
  /** Lets the lease go (it keeps its epoch, so the next holder's is higher). */
  release(sessionKey: string, owner: string, epoch: number): Promise<void>;
  /** The lease while it is held (expired or not); undefined once released or never taken. */
  get(sessionKey: string): Promise<{ owner: string; epoch: number; expiresAt: number } | undefined>;
}
