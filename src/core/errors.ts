/**
 * One table of error codes. Codes map to HTTP status, JSON-RPC code and tool results only at the edges.
 * Contract: `code` is stable and machine-readable; `message` says what went wrong and how to fix it.
 */
export const ERROR_SPECS = {
  CONFIG_INVALID: { http: 400 },
  CONFIG_NOT_FOUND: { http: 404 },
  AGENT_NOT_FOUND: { http: 404 },
  AGENT_EXISTS: { http: 409 },
  SESSION_NOT_FOUND: { http: 404 },
  RUN_NOT_FOUND: { http: 404 },
  TASK_NOT_FOUND: { http: 404 },
  BOARD_TASK_NOT_FOUND: { http: 404 },
  BOARD_MOVE_REFUSED: { http: 409 },
  DEPENDENCY_CYCLE: { http: 409 },
  CLAIM_LOST: { http: 409 },
  DISPATCHER_LEASE_LOST: { http: 409 },
  MESSAGE_TOO_LARGE: { http: 413 },
  MESSAGE_EMPTY: { http: 400 },
  INVALID_REQUEST: { http: 400 },
  INVALID_JSON: { http: 400 },
  IDEMPOTENCY_KEY_REUSED: { http: 409 },
  METHOD_NOT_ALLOWED: { http: 405 },
  UNAUTHORIZED: { http: 401 },
  FORBIDDEN: { http: 403 },
  NOT_FOUND: { http: 404 },
  LANE_QUEUE_FULL: { http: 429 },
  VISIBILITY_DENIED: { http: 403 },
  A2A_POLICY_DENIED: { http: 403 },
  A2A_CARD_INVALID: { http: 502 },
  TOOL_DENIED: { http: 403 },
  MAILBOX_RECIPIENT_UNKNOWN: { http: 404 },
  MAILBOX_MESSAGE_INVALID: { http: 400 },
  PATH_RESERVED: { http: 409 },
  HOP_LIMIT_EXCEEDED: { http: 429 },
  RATE_LIMITED: { http: 429 },
  LABEL_AMBIGUOUS: { http: 409 },
  ID_AMBIGUOUS: { http: 409 },
  SPAWN_DENIED: { http: 403 },
  SUBAGENT_LIMIT: { http: 429 },
  SUBAGENT_NOT_FOUND: { http: 404 },
  SUBAGENT_NOT_RUNNING: { http: 409 },
  CAPABILITY_INVALID: { http: 403 },
  WORKTREE_FAILED: { http: 400 },
  RUNTIME_UNAVAILABLE: { http: 400 },
  RUNTIME_FAILED: { http: 502 },
  LEASE_LOST: { http: 409 },
  APPROVAL_NOT_FOUND: { http: 404 },
  APPROVAL_ANSWERED: { http: 409 },
  APPROVAL_CLOSED: { http: 409 },
  BUDGET_EXCEEDED: { http: 429 },
  MODEL_PROVIDER_NOT_FOUND: { http: 400 },
  MODEL_PROVIDER_ERROR: { http: 502 },
  GATEWAY_UNREACHABLE: { http: 503 },
  GATEWAY_STOPPING: { http: 503 },
  GATEWAY_LOCKED: { http: 409 },
  STORE_FAILED: { http: 503 },
  INTERNAL: { http: 500 },
} as const satisfies Record<string, { http: number }>;

export type ErrorCode = keyof typeof ERROR_SPECS;

export class SwitchboardError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'SwitchboardError';
    this.code = code;
    this.details = details;
  }

  get httpStatus(): number {
    return ERROR_SPECS[this.code].http;
  }

  static isInstance(error: unknown): error is SwitchboardError {
    return error instanceof SwitchboardError;
  }

  toJSON(): { code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * Error codes of the store's drivers that mean the database could not take a write, not a bug here: SQLite's, and
 * PostgreSQL's SQLSTATEs that end the transaction without keeping it: class 08 (connection), 53 (resources), 57P01-03
 * and 57P05 (shutdown, a backend terminated, idle session timeout), 57014 (a statement cancelled), 25P03 (the
 * transaction sat idle past idle_in_transaction_session_timeout, as a gateway paused past its lease does), 40001 and
 * 40P01 (a serialization failure, a deadlock) and 55P03 (a lock not available). Network codes such as ECONNREFUSED
 * are left out: a remote agent's refusal reaches the same edges and is no store failure (the PostgreSQL adapter
 * reports its own failures to connect as STORE_FAILED itself).
 */
const STORE_CODES =
  /^(SQLITE_(FULL|IOERR|BUSY|LOCKED|READONLY|CANTOPEN|CORRUPT|NOTADB)|57P0[1-35]$|57014$|25P03$|40001$|40P01$|55P03$|53[0-9A-Z]{3}$|08[0-9A-Z]{3}$)/;

/**
 * node-postgres's own failures of a connection carry no SQLSTATE (nor any code): they are known by their messages,
 * which are its API. Each means a statement did not reach the database or its answer did not come back, so the
 * transaction it was part of was not committed (the one exception, a COMMIT whose answer was lost, is why a client
 * that must not do a thing twice sends an idempotency key).
 */
const PG_CONNECTION_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Query read timeout',
  'Cannot use a pool after calling end on the pool',
];

/**
 * Why `error` is a failure of the store to take a request (a driver code or node-postgres's message), found on the
 * error or the errors that caused it; undefined when it is something else.
 */
export function storeFailureCause(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause && typeof cause === 'object' && depth < 5; depth += 1) {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && STORE_CODES.test(code)) return code;
    if (code === undefined && typeof message === 'string' && PG_CONNECTION_MESSAGES.includes(message)) return message;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A STORE_FAILED for a request the store did not take because of `cause`: nothing was kept, so it can be sent again. */
export function storeFailed(cause: string): SwitchboardError {
  return new SwitchboardError(
    'STORE_FAILED',
    `the store could not take this request (${cause}): nothing was changed by it; try again, and check the gateway's log and disk`,
    { cause },
  );
}

/**
 * What a client is told of an error that reached an edge (a request handler, a tool result): a
 * SwitchboardError as it is; a store or disk failure as STORE_FAILED (retry later), without the paths its
 * message may carry; anything else as INTERNAL.
 */
export function toSwitchboardError(error: unknown): SwitchboardError {
  if (SwitchboardError.isInstance(error)) return error;
  const failure = storeFailureCause(error);
  if (failure !== undefined) return storeFailed(failure);
  const code = (error as { code?: unknown } | null)?.code ?? (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  // PostgreSQL's data exceptions (class 22: a value too long, out of range, badly encoded) come from what was sent.
  if (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)) {
    return new SwitchboardError(
      'INVALID_REQUEST',
      `a value in the request is not one the store can keep (${code}: too long, out of range or badly encoded); nothing was changed by it`,
      { cause: code },
    );
  }
  return new SwitchboardError('INTERNAL', errorMessage(error));
}
