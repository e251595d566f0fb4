/**
 * The task board's store port (ARCHITECTURE.md section 3: a front with state of its own gets its own port
 * and contract suite). Every method is one transaction. Times are milliseconds since the Unix epoch.
 */
import type { AttemptOutcome, BlockKind, BoardState } from '../core/board.js';
import type { Conversation } from '../core/hops.js';

export type { AttemptOutcome, BlockKind, BoardState } from '../core/board.js';

export interface BoardTaskRecord {
  id: string;
  board: string;
  title: string;
  body: string;
  /** An agent id of this gateway, an outside worker's name, a remote A2A agent id, or null (anyone). */
  assignee: string | null;
  /** Higher first. */
  priority: number;
  labels: string[];
  /** Who created it: `user`, a session key, or a worker name. */
  creator: string;
  idempotencyKey: string | null;
  state: BoardState;
  /** Why it is blocked (set while `blocked`). */
  blockKind: BlockKind | null;
  blockReason: string | null;
  maxAttempts: number;
  /** A claim held longer than this is taken back even while heartbeats arrive. */
  maxRuntimeMs: number | null;
  /** Claims so far (the number of the latest attempt). */
  attempts: number;
  /** Attempts that expired or failed since the task last became ready by hand. */
  failures: number;
  /** The fencing token: grows with every claim; the current claim's token while `running`. */
  token: number;
  claimWorker: string | null;
  claimedAt: number | null;
  claimExpiresAt: number | null;
  result: string | null;
  resultHash: string | null;
  /** The length of the whole result; `result` keeps at most the configured cap. */
  resultChars: number | null;
  createdAt: number;
  updatedAt: number;
  doneAt: number | null;
  /** The hop budget: the conversation the run that created it was in, one hop further; null when no run did. */
  conversation: Conversation | null;
  /** The W3C traceparent of the span that created it: its attempts' runs join that trace (docs/observability.md). */
  trace: string | null;
}

export interface NewBoardTask
  extends Pick<
    BoardTaskRecord,
    'id' | 'board' | 'title' | 'body' | 'assignee' | 'priority' | 'labels' | 'creator' | 'idempotencyKey' | 'maxAttempts' | 'maxRuntimeMs'
  > {
  dependsOn: string[];
  /** Start in `triage` instead of ready/todo. */
  triage: boolean;
  conversation?: Conversation | null;
}

export interface BoardClaim {
  taskId: string;
  attempt: number;
  token: number;
  worker: string;
  expiresAt: number;
}

export interface BoardAttemptRecord {
  taskId: string;
  attempt: number;
  token: number;
  worker: string;
  /** What the worker runs the attempt as: the input id of an agent's run, the message id sent to a remote A2A agent. */
  ref: string | null;
  startedAt: number;
  heartbeatAt: number;
  endedAt: number | null;
  outcome: AttemptOutcome | null;
  summary: string | null;
  error: string | null;
}

export interface BoardCommentRecord {
  seq: number;
  taskId: string;
  author: string;
  body: string;
  /** Set when a worker wrote it under its claim. */
  attempt: number | null;
  createdAt: number;
}

export interface BoardEventRecord {
  seq: number;
  taskId: string;
  board: string;
  type: string;
  actor: string;
  detail: unknown;
  createdAt: number;
}

export interface BoardTaskFilter {
  board?: string;
  states?: BoardState[];
  assignee?: string;
  /** Only tasks created at or after this time. */
  createdSince?: number;
  limit?: number;
}

export interface BoardClaimRequest {
  worker: string;
  board?: string;
  /** Only tasks assigned to this; without it, tasks assigned to nobody or to the worker itself. */
  assignee?: string;
  /** This task only. */
  taskId?: string;
  ttlMs: number;
  ref?: string | null;
}

export interface BoardTaskView {
  task: BoardTaskRecord;
  dependsOn: Pick<BoardTaskRecord, 'id' | 'title' | 'state' | 'result'>[];
  dependents: Pick<BoardTaskRecord, 'id' | 'title' | 'state'>[];
  comments: BoardCommentRecord[];
  /** An agent's attempt also names its session and the run that took it (null until one did). */
  attempts: (BoardAttemptRecord & { session?: string; runId?: string | null })[];
}

/** The dispatcher lease as one holder holds it: a later holder has a higher epoch. */
export interface DispatcherFence {
  owner: string;
  epoch: number;
}

/** An expired claim taken back: the attempt counted as failed, and where the task went. */
export interface BoardReclaim {
  taskId: string;
  attempt: number;
  worker: string;
  state: 'ready' | 'blocked';
}

export interface BoardStore {
  /**
   * A new task (ready, or todo while a task it depends on is not done). A repeated idempotency key returns
   * the existing task with `created: false` and writes nothing. Unknown dependencies are refused.
   */
  create(task: NewBoardTask, now: number): Promise<{ task: BoardTaskRecord; created: boolean }>;
  get(id: string): Promise<BoardTaskRecord | undefined>;
  view(id: string, options?: { comments?: number }): Promise<BoardTaskView | undefined>;
  /** Highest priority first, then oldest. */
  list(filter?: BoardTaskFilter): Promise<BoardTaskRecord[]>;
  /** Whether a worker of this name ever claimed a task of this store (an attempt names it). */
  workerSeen(worker: string): Promise<boolean>;
  /** The tasks each of these depends on; a task with none is left out. */
  dependencies(taskIds: readonly string[]): Promise<Record<string, string[]>>;
  /** `taskId` depends on `dependsOn` from now on; a cycle is refused with its path. A ready task goes back to todo. */
  link(taskId: string, dependsOn: string, actor: string, now: number): Promise<BoardTaskRecord>;
  /** A move by hand (core/board.ts `refuseMove`); to `cancelled` from running, the claim is fenced out. */
  move(id: string, to: BoardState, change: { actor: string; reason?: string }, now: number): Promise<BoardTaskRecord>;
  /**
   * With `token`, a worker's comment under its claim: refused with CLAIM_LOST unless the claim is current. With
   * `key` (a tool call's ledger key), a second call with the same key writes nothing and returns the first comment.
   */
  comment(id: string, comment: { author: string; body: string; token?: number; key?: string }, now: number): Promise<BoardCommentRecord>;
  /**
   * A reviewer's answer to a task in review, in one transaction: its comment, then done (approved) or ready
   * (changes requested). Refused with BOARD_MOVE_REFUSED unless the task is in review. With `key`, a second
   * call with the same key changes nothing and returns the task as it is.
   */
  review(id: string, review: { approve: boolean; actor: string; comment?: string; key?: string }, now: number): Promise<BoardTaskRecord>;
  /** Compare-and-set: the best ready task the worker may take, or undefined when there is none. */
  claim(request: BoardClaimRequest, now: number): Promise<BoardClaim | undefined>;
  /** Every call below carries the claim's token; a stale one is refused with CLAIM_LOST and changes nothing. */
  heartbeat(id: string, token: number, ttlMs: number, now: number): Promise<BoardClaim>;
  complete(
    id: string,
    token: number,
    outcome: { result: string; summary?: string; review?: boolean; maxResultChars: number },
    now: number,
  ): Promise<BoardTaskRecord>;
  block(id: string, token: number, why: { kind: BlockKind; reason: string }, now: number): Promise<BoardTaskRecord>;
  release(id: string, token: number, reason: string | undefined, now: number): Promise<BoardTaskRecord>;
  /** The worker's attempt failed (an agent's run ended without completing or blocking): counted, as an expiry is. */
  fail(id: string, token: number, error: string, now: number): Promise<BoardTaskRecord>;
  /** Records what the current attempt runs as (a remote A2A task's id, say), under the claim's token. */
  noteRef(id: string, token: number, ref: string, now: number): Promise<void>;
  /** Takes back claims that expired (or outran the task's max runtime) before `now`. */
  reclaimExpired(now: number, limit: number): Promise<BoardReclaim[]>;
  /** The board's events in seq order: of one task, of one board, after a seq. */
  events(filter: { taskId?: string; board?: string; afterSeq?: number; limit?: number }): Promise<BoardEventRecord[]>;
  /**
   * The board's dispatcher lease: one holder per store. Taken when free, expired or already `owner`'s; the fence
   * of `owner`'s hold while it holds it (its epoch grows each time the lease changes hands), else undefined.
   */
  holdDispatcher(owner: string, ttlMs: number, now: number): Promise<DispatcherFence | undefined>;
  /**
   * This store as the dispatcher holding `fence` writes to it: every write first checks, in its transaction, that
   * the lease is still held under the fence (holding the lease's row until it commits, so a takeover waits for it),
   * and is refused with DISPATCHER_LEASE_LOST, writing nothing, once another gateway took the lease.
   */
  fenced(fence: DispatcherFence): BoardStore;
}
