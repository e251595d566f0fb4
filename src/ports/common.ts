/** Clocks, ids and the guarded-write window that every port shares. Times are milliseconds since the Unix epoch. */

/** Guarded writes are counted against a sliding window in the write's own transaction (core/rate-limit.ts has the rule). */
export type { LimitReached, RateLimit } from '../core/rate-limit.js';

export interface Clock {
  now(): number;
}

export interface IdGenerator {
  /** A new unique id (UUID-length). */
  next(): string;
}
