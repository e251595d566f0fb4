/**
 * What crosses between the gateway's thread and the store's worker thread (worker-store.ts, store-worker.ts): calls,
 * answers, errors, and the callbacks a few port methods take.
 */
import { SwitchboardError, type ErrorCode } from '../../core/errors.js';

/** A step from the Store to the object a method is called on: a property name, or the board's `fenced(fence)`. */
export type PathStep = string | { fenced: unknown };

export interface Call {
  id: number;
  path: PathStep[];
  method: string;
  args: unknown[];
}

/** A function argument, kept on the gateway's thread and called from the worker by its number. */
export interface CallbackRef {
  [CALLBACK]: number;
}
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

/** The methods of each object the Store holds, named by the worker once it has opened the store. */
export interface StoreShape {
  top: string[];
  parts: Record<string, string[]>;
}

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
