/**
 * Gates (docs/gates.md): a tool call a person must approve, and the budgets model calls draw on. An approval request is
 * a durable wait of the run that made the call (ARCHITECTURE.md 4.7); a budget is reserved before each model call and
 * settled after it. Times are milliseconds since the Unix epoch; costs are in millionths of a US dollar.
 */
import type { EventRecord } from './journal.js';
import type { APPROVAL_STATUSES } from '../core/gates.js';

export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
/** `tool`: a call under an `ask` policy; `budget`: a model call past a budget, asking to raise it. */
export type ApprovalKind = 'tool' | 'budget';

export interface NewApproval {
  /** The same for the same call at the same place of the same run: a resumed run finds its request again. */
  id: string;
  kind: ApprovalKind;
  agentId: string;
  sessionKey: string;
  runId: string;
  step: number;
  /** The call's index in its step (-1 for a budget's model call). */
  index: number;
  toolCallId: string | null;
  /** The tool (`tool`), or the budget's key (`budget`). */
  subject: string;
  args: unknown;
  /** What a person needs to decide: the command and folder of an exec, the diff of a file edit, the budget's figures. */
  details: Record<string, unknown>;
  /** The policy pattern that asked, with its key (`tools.ask`, `agents.list[coder].tools.ask`). */
  reason: string;
  /** Whether approve may give other arguments (they are checked against the tool's schema). */
  editable: boolean;
  /** Milliseconds from the request until it expires, on the database's clock. */
  ttlMs: number;
  /** What an expired request means. */
  onExpiry: 'deny' | 'allow';
}

export interface ApprovalRecord extends Omit<NewApproval, 'ttlMs'> {
  status: ApprovalStatus;
  requestedAt: number;
  expiresAt: number;
  decidedAt: number | null;
  /** Who answered, as they named themselves (`cli:<user>`, `console`, `acp:<agent>`, `api`), or `expiry`. */
  decidedBy: string | null;
  /** The reason the approver gave. */
  note: string | null;
  /** The arguments an approver gave instead of the model's, when edited. */
  editedArgs: unknown;
}

export interface ApprovalDecision {
  approve: boolean;
  by: string;
  note?: string;
  /** Approve with these arguments instead (only where the request is `editable`). */
  editedArgs?: unknown;
}

export interface ApprovalStore {
  /**
   * Records the request unless one with its id exists, with an `approval.requested` event in the same transaction;
   * answers the row as it is (a resumed run gets its earlier request, answered or not).
   */
  request(approval: NewApproval, now: number): Promise<{ approval: ApprovalRecord; event?: EventRecord }>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  list(filter: { status?: ApprovalStatus; sessionKey?: string; limit?: number }): Promise<ApprovalRecord[]>;
  /**
   * Answers a pending request (a compare-and-set on `pending`, before its expiry on the database's clock, while its run
   * is live, with an `approval.decided` event): undefined otherwise, so that two answers never both take effect and none
   * takes effect late.
   */
  decide(
    id: string,
    decision: ApprovalDecision,
    now: number,
    /** An approved budget request raises its cap in the same transaction (never on a refusal or a late answer). */
    raise?: { key: string; limit: Partial<BudgetAmount> },
  ): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined>;
  /**
   * Ends a pending request nobody needs any more (its run went on without it, or cannot trust its clock): `expired` by
   * `withdrawn` with `why`, whatever the clock; undefined when it was not pending.
   */
  withdraw(id: string, why: string, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined>;
  /** Marks a pending request whose time has passed on the database's clock `expired`; undefined when it is not (yet). */
  expire(id: string, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined>;
  /** How many requests are pending. */
  pendingCount(): Promise<number>;
}

/** One budget a model call draws on: its key (`agent:coder:2026-12-05`), its limits, and where the limits come from. */
export interface BudgetCap {
  key: string;
  /** The config key that sets it (`budgets.agents.coder`), for messages. */
  source: string;
  tokens?: number;
  costMicros?: number;
}

export interface BudgetAmount {
  tokens: number;
  costMicros: number;
}

export type BudgetReservation =
  | { ok: true }
  /** The cap that refused, what it has spent and holds reserved, and its limit (raised ones included). */
  | { ok: false; cap: BudgetCap; spent: BudgetAmount; reserved: BudgetAmount; limit: BudgetAmount };

export interface BudgetSpend {
  key: string;
  spent: BudgetAmount;
  /** Reserved by model calls under way (a reservation its call never settled lapses at its expiry). */
  reserved: BudgetAmount;
  /** Raised limits an approval gave, when any. */
  raised: Partial<BudgetAmount>;
  updatedAt: number;
}

export interface BudgetStore {
  /**
   * Reserves `amount` on every cap at once, or on none: each cap's spent, live reservations and `amount` must stay
   * within its limit (a raised one where an approval raised it). Caps are held (one writer per key) in key order.
   */
  reserve(id: string, runId: string, caps: readonly BudgetCap[], amount: BudgetAmount, ttlMs: number): Promise<BudgetReservation>;
  /** Ends reservation `id` and adds what the call spent to each key it held (once: a second settle of `id` adds nothing). */
  settle(id: string, spent: BudgetAmount, now: number): Promise<void>;
  /** Raises the limit of `key` (an approved "raise budget"): never lowers it. */
  raise(key: string, limit: Partial<BudgetAmount>, now: number): Promise<void>;
  /** Spend on these keys (those never drawn on are left out). */
  spend(keys: readonly string[]): Promise<BudgetSpend[]>;
  /** Spend on keys starting with `prefix`, newest first. */
  spendLike(prefix: string, limit: number): Promise<BudgetSpend[]>;
}
