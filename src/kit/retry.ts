/** Retry with backoff: the one delay rule every retry path uses (the outbox, the A2A client, the board's remote follow). */

/** A delivery that can never succeed (a refused target, say): the row goes dead at once, not after retries. */
export class PermanentDeliveryError extends Error {
  override readonly name = 'PermanentDeliveryError';
}

/**
 * A delivery refused for now with a time to come back (a platform's 429 and its retry-after): the next attempt waits
 * at least that long, whatever the backoff says.
 */
export class RetryLaterError extends Error {
  override readonly name = 'RetryLaterError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/** Delay before attempt `attempts + 1`: base * 2^attempts, capped, with jitter in [50%, 100%]. */
export function backoffDelay(attempts: number, options: { baseDelayMs: number; maxDelayMs: number }, random: number): number {
  const raw = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempts);
  return Math.round(raw * (0.5 + random / 2));
}

/** Resolves after `ms`; rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
