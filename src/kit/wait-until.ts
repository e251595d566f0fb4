/**
 * The one wait. Everything that waits in the gateway (a waited send, sessions_wait, a sub-agent wait, an
 * API request waiting for its input's reply) checks a condition, sleeps until the journal says something
 * it cares about happened (polling once a second is the backstop), and gives up at its deadline.
 */
import type { Clock } from '../ports/index.js';

/** Which journal events may have changed the answer: their payload, session and type (`settled` for a commit's). */
export type WakeOn = (payload: Record<string, unknown>, sessionKey: string | null, type: string) => boolean;

/**
 * A wait on events about some keys only (event-bus.ts `eventKeys`: `input:<id>`, `session:<key>`,
 * `exchange:<id>`, `subagent:<id>`), checked further by `test`. The bus hands such a wait only the events
 * with one of its keys, so many waits do not each look at every event.
 */
export interface KeyedWake {
  keys: readonly string[];
  test: WakeOn;
}

export interface Wakeups {
  clock: Clock;
  /** Resolves after `ms`, or earlier on a journal event `wakeOn` matches, on abort, or when the gateway stops. */
  pause(ms: number, wakeOn: WakeOn | KeyedWake, signal?: AbortSignal): Promise<void>;
  stopping(): boolean;
  /** How long to sleep before check `attempt + 1` (default one second: the journal wakes waits sooner). */
  sleepMs?(attempt: number): number;
}

const MAX_SLEEP_MS = 1000;

/**
 * Contract: `check` runs at least once, and its first answer (anything but `undefined`) is returned.
 * `undefined` means the deadline passed, `signal` aborted or the gateway began to stop before an answer;
 * the caller decides what that means (a detached reply, a timeout status).
 */
export async function waitUntil<T>(
  deadline: number,
  check: () => Promise<T | undefined>,
  wakeups: Wakeups,
  wakeOn: WakeOn | KeyedWake,
  signal?: AbortSignal,
): Promise<T | undefined> {
  for (let attempt = 0; ; attempt += 1) {
    const answer = await check();
    if (answer !== undefined) return answer;
    const left = deadline - wakeups.clock.now();
    if (left <= 0 || signal?.aborted || wakeups.stopping()) return undefined;
    await wakeups.pause(Math.min(left, wakeups.sleepMs?.(attempt) ?? MAX_SLEEP_MS), wakeOn, signal);
  }
}
