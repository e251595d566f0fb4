/**
 * What crosses between the gateway's thread and the store's worker thread (worker-store.ts, store-worker.ts): calls,
 * answers, errors, and the callbacks a few port methods take.
 */
import { SwitchboardError, type ErrorCode } from '../../core/errors.js';
import type { Store } from '../../ports/index.js';

/** A step from the Store to the object a method is called on: a property name, or the board's `fenced(fence)`. */
export type PathStep = string | { fenced: unknown };

export interface Call {
  id: number;
  path: PathStep[];
  method: string;
  args: unknown[];
}

/** Marks a function argument, kept on the gateway's thread and called from the worker by its number. */
export const CALLBACK = '\u0000sb-callback';

export type Answer = { id: number; value: unknown } | { id: number; error: WireError };

/** The worker asks the gateway's thread to run a callback; the worker waits for the answer on `shared`. */
export interface CallbackCall {
  callback: number;
  args: unknown[];
}

export interface WireError {
  name: string;
  message: string;
  code?: unknown;
  details?: unknown;
  stack?: string;
  cause?: WireError;
}

/** The Store's own methods. */
export const TOP = ['matchIds', 'backup', 'durable', 'close'] as const satisfies readonly (keyof Store)[];

/** The Store's parts: each an object of async methods (the board also has `fenced`). */
export const PARTS = [
  'toolCalls',
  'memory',
  'mailbox',
  'channels',
  'approvals',
  'budgets',
  'schedules',
  'subagents',
  'a2aTasks',
  'board',
  'sessions',
  'exchanges',
  'inputs',
  'transcript',
  'runs',
  'steps',
  'outbox',
  'leases',
  'events',
  'gateways',
] as const satisfies readonly (keyof Store)[];

// Every member of the Store is listed, but `signals` (one gateway per SQLite file: there is nobody to signal).
const _everyMember: Exclude<keyof Store, (typeof TOP)[number] | (typeof PARTS)[number] | 'signals'> = undefined as never;
void _everyMember;

/** The methods of each part, named by the worker once it has opened the store (the port's types are not there to read). */
export type StoreShape = Record<(typeof PARTS)[number], string[]>;

export function toWire(error: unknown, depth = 0): WireError {
  if (error instanceof Error) {
    const { code, details } = error as { code?: unknown; details?: unknown };
    // The cause (a driver's own error behind a STORE_FAILED) goes to the log: it crosses too, a few levels deep.
    const cause = error.cause !== undefined && depth < 3 ? toWire(error.cause, depth + 1) : undefined;
    return { name: error.name, message: error.message, code, details, stack: error.stack, ...(cause ? { cause } : {}) };
  }
  return { name: 'Error', message: String(error) };
}

/** The error as the caller would have had it in one thread: a SwitchboardError stays one, with its code and details. */
export function fromWire(wire: WireError): Error {
  const error =
    wire.name === 'SwitchboardError'
      ? new SwitchboardError(wire.code as ErrorCode, wire.message, wire.details as Record<string, unknown> | undefined)
      : Object.assign(new Error(wire.message), { name: wire.name }, wire.code === undefined ? {} : { code: wire.code });
  if (wire.stack) error.stack = wire.stack;
  if (wire.cause) error.cause = fromWire(wire.cause);
  return error;
}

/**
 * The callback shared buffer: an Int32 state (0 waiting, 1 answered, 2 failed), an Int32 length, then the answer's
 * JSON in UTF-8.
 */
export const SHARED_BYTES = 4 * 1024 * 1024;
export const HEADER_BYTES = 8;
