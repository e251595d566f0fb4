/**
 * The one limiter rule: a sliding window that allows `max` takes in the last `windowMs`. The store
 * applies it to marks it keeps in a table, inside the transaction of the write it guards (so that
 * parallel calls and restarts cannot get past it); a front that must answer before touching the store
 * (the A2A peer guard) applies it to marks held in memory. Both decide and explain a refusal here.
 */

/** A sliding-window limit: at most `max` takes under `bucket` in any `windowMs`. */
export interface RateLimit {
  bucket: string;
  windowMs: number;
  max: number;
}

/** Why a take was refused: `count` takes in the window already, the oldest at `oldestAt`. */
export interface LimitReached {
  limited: { count: number; oldestAt: number };
}

/** The decision on the marks still inside the window: refused when they already reach `max`. */
export function limitReached(rate: RateLimit, count: number, oldestAt: number): LimitReached | undefined {
  return count >= rate.max ? { limited: { count, oldestAt } } : undefined;
}

/** How long until the oldest mark leaves the window and one more take is allowed. */
export function retryAfterMs(rate: RateLimit, limited: LimitReached['limited'], now: number): number {
  return Math.max(0, limited.oldestAt + rate.windowMs - now);
}

/** The same rule over marks held in memory (lost on restart: for limits that guard a process, not data). */
export class MemoryRateLimiter {
  private readonly marks = new Map<string, number[]>();

  take(rate: RateLimit, now: number): LimitReached | undefined {
    const recent = (this.marks.get(rate.bucket) ?? []).filter((at) => at > now - rate.windowMs);
    const reached = limitReached(rate, recent.length, recent[0] ?? now);
    if (!reached) recent.push(now);
    if (recent.length > 0) this.marks.set(rate.bucket, recent);
    else this.marks.delete(rate.bucket);
    return reached;
  }
}
