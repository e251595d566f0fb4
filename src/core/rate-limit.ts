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

/** A bucket's marks, oldest first; those before `head` have left the window. */
interface MemoryMarks {
  times: number[];
  head: number;
  windowMs: number;
}

/**
 * The same rule over marks held in memory (lost on restart: for limits that guard a process, not data).
 * Marks are kept in the order taken, so a take drops the ones that left the window from the front and
 * costs the same whatever the window holds (a busy peer's minute holds tens of thousands). A clock that
 * steps back only keeps an older mark counted a little longer: stricter, never looser.
 */
export class MemoryRateLimiter {
  private readonly marks = new Map<string, MemoryMarks>();
  private takes = 0;

  /** Buckets held (one per peer or address that took within its window, and any not yet swept). */
  get buckets(): number {
    return this.marks.size;
  }

  take(rate: RateLimit, now: number): LimitReached | undefined {
    // Now and then, buckets whose last mark has left the window are let go: callers that came once and left.
    this.takes += 1;
    if (this.takes % 1024 === 0) this.sweep(now);
    let marks = this.marks.get(rate.bucket);
    if (!marks) this.marks.set(rate.bucket, (marks = { times: [], head: 0, windowMs: rate.windowMs }));
    marks.windowMs = rate.windowMs;
    const { times } = marks;
    while (marks.head < times.length && times[marks.head]! <= now - rate.windowMs) marks.head += 1;
    // The dropped marks are let go once they are half the array, so a bucket holds at most twice its window.
    if (marks.head > 64 && marks.head * 2 > times.length) {
      marks.times = times.slice(marks.head);
      marks.head = 0;
    }
    const count = marks.times.length - marks.head;
    const reached = limitReached(rate, count, count > 0 ? marks.times[marks.head]! : now);
    if (!reached) marks.times.push(now);
    else if (count === 0) this.marks.delete(rate.bucket);
    return reached;
  }

  private sweep(now: number): void {
    for (const [bucket, marks] of this.marks) {
      const last = marks.times[marks.times.length - 1];
      if (last === undefined || last <= now - marks.windowMs) this.marks.delete(bucket);
    }
  }
}
