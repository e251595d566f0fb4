/** Agent-to-agent exchanges (sessions_send): the request, its reply, the turns and the announce. Times are milliseconds since the Unix epoch. */
import type { LimitReached, RateLimit } from '../core/rate-limit.js';
import type { NewEvent } from './journal.js';
import type { Journaled } from './runs.js';
import type { InputRecord, NewInput } from './sessions.js';
import type { NewToolCall } from './tool-calls.js';

/**
 * How the first reply of an exchange reaches its requester:
 * awaiting: a live waiter (a tool call or an API request) will take it when it comes;
 * held: the run that sent it (`waiterRunId`) did not wait, or stopped waiting, and is still running: a
 *   sessions_wait of that run may take the reply; if it does not, the reply is delivered when the run ends;
 * reply_held: the reply came while `held`; it is kept for that run in the same way;
 * detached: nobody waits; it will be delivered into the requester's session as an input;
 * replied: a waiter took it; it counts as delivered once the waiter's run commits successfully;
 * delivered: it is in the requester's session (or was handed to the API caller that waited).
 */
export type ExchangeReplyState = 'awaiting' | 'held' | 'reply_held' | 'detached' | 'replied' | 'delivered';
export type ExchangePhase = 'request' | 'ping_pong' | 'announce' | 'done';

/** One sessions_send: the request, its first reply, the ping-pong turns and the announce step. */
export interface ExchangeRecord {
  id: string;
  conversationId: string;
  hop: number;
  requesterSession: string;
  requesterAgent: string;
  targetSession: string;
  targetAgent: string;
  requestInputId: string;
  maxTurns: number;
  phase: ExchangePhase;
  /** The last ping-pong turn started, 0 before the first. */
  turn: number;
  replyState: ExchangeReplyState;
  /** The run (or null for an API caller) that waits for the reply while `awaiting`/`replied`. */
  waiterRunId: string | null;
  replyRunId: string | null;
  replyStatus: string | null;
  replyText: string | null;
  createdAt: number;
  updatedAt: number;
}

export type NewExchange = Omit<
  ExchangeRecord,
  'phase' | 'turn' | 'replyRunId' | 'replyStatus' | 'replyText' | 'createdAt' | 'updatedAt' | 'requestInputId'
>;

export type ExchangeChanges = Partial<
  Pick<ExchangeRecord, 'phase' | 'turn' | 'replyState' | 'waiterRunId' | 'replyRunId' | 'replyStatus' | 'replyText'>
>;

export interface ExchangeFilter {
  replyStates?: ExchangeReplyState[];
  requesterSession?: string;
  targetSession?: string;
  waiterRunId?: string;
  limit?: number;
  newest?: boolean;
}

export interface ExchangeStore {
  /**
   * Stores the request input and its exchange in one transaction. A repeated idempotency key returns
   * the existing pair with `created: false` and writes nothing.
   */
  open(exchange: NewExchange, input: NewInput, now: number): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean }>;
  /**
   * With `rate`: a new exchange is opened only while the window allows one more (a repeat is never
   * counted). With `call`: the tool call that opens it is recorded in the ledger in the same transaction.
   */
  open(
    exchange: NewExchange,
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean } | LimitReached>;
  get(id: string): Promise<ExchangeRecord | undefined>;
  /**
   * Compare-and-set: applies `changes` only while the row still has one of the `from` reply states
   * (and, when given, one of the `phases` and the `waiterRunId`). Returns the row as it is afterwards and whether it changed.
   * With `journal`, a move that lands appends the event `journal` makes of the exchange as moved (none when it answers
   * undefined) in the same transaction, and answers it in `events`; a move that does not land appends nothing.
   */
  transition(
    id: string,
    from: { replyStates?: ExchangeReplyState[]; phases?: ExchangePhase[]; waiterRunId?: string },
    changes: ExchangeChanges,
    now: number,
    journal?: (moved: ExchangeRecord) => NewEvent | undefined,
  ): Promise<{ exchange: ExchangeRecord; changed: boolean } & Journaled>;
  /** Oldest first; with `newest: true`, the newest `limit` rows, newest first. */
  list(filter?: ExchangeFilter): Promise<ExchangeRecord[]>;
}
