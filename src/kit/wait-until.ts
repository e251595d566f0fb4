/**
 * The one wait. Everything that waits in the gateway (a waited send, sessions_wait, a sub-agent wait, an
 * API request waiting for its input's reply) checks a condition, sleeps until the journal says something
 * it cares about happened (polling once a second is the backstop), and gives up at its deadline.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../ports/index.js';

/**
 * Where a wait may suspend its run instead of sleeping (a tool call of a run with durable steps, ARCHITECTURE.md 4.7):
 * a wait on keyed events that has slept `suspendAfterMs` and has longer than that to go throws `WaitSuspended`, and
 * the run lets go of its lane slot and its memory until an event with one of the keys comes or the deadline passes.
 */
export interface WaitScope {
  suspendAfterMs: number;
  /** A resumed wait's deadline: the one it was suspended with, so that a wait resumed goes on to it, not a new one. */
  deadline?: number;
  /** True once the run is suspending (another of its calls suspended): every wait of it suspends too, at once. */
  suspending(): boolean;
  /** Starts noting events on `keys`, before the wait's last look: one that comes before the run has suspended wakes it. */
  watch(keys: readonly string[]): WaitWatch;
}

export interface WaitWatch {
  seen(): boolean;
  stop(): void;
}

export const waitScope = new AsyncLocalStorage<WaitScope>();

/** Thrown by a wait in a `WaitScope` instead of sleeping on: the run suspends until an event with one of `keys`, or `deadline`. */
export class WaitSuspended extends Error {
  constructor(
    readonly deadline: number,
    readonly keys: readonly string[],
    /** Events on the keys since the wait's last look (the run is woken at once if one came). */
    readonly watch: WaitWatch,
  ) {
    super(`the wait suspends its run until ${new Date(deadline).toISOString()} or an event on ${keys.join(', ')}`);
  }
}

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
  /** Suspends the run after this long instead of its scope's (0: at once, for a wait on a person). */
  suspendAfterMs?: number;
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
  given: number,
  check: () => Promise<T | undefined>,
  wakeups: Wakeups,
  wakeOn: WakeOn | KeyedWake,
  signal?: AbortSignal,
): Promise<T | undefined> {
  // In a run that may suspend, a keyed wait suspends it rather than sleep long; a resumed one keeps its deadline.
  const scope = typeof wakeOn === 'object' ? waitScope.getStore() : undefined;
  const deadline = scope?.deadline ?? given;
  const began = wakeups.clock.now();
  for (let attempt = 0; ; attempt += 1) {
    const answer = await check();
    if (answer !== undefined) return answer;
    const now = wakeups.clock.now();
    const left = deadline - now;
    if (left <= 0) return undefined;
    if (scope && typeof wakeOn === 'object') {
      const after = Math.min(scope.suspendAfterMs, wakeOn.suspendAfterMs ?? scope.suspendAfterMs);
      if (scope.suspending() || (now - began >= after && left > after)) {
        // Watched from before the last look: what comes after it is not missed while the run suspends.
        const watch = scope.watch(wakeOn.keys);
        const last = await check();
        if (last !== undefined) {
          watch.stop();
          return last;
        }
        throw new WaitSuspended(deadline, wakeOn.keys, watch);
      }
    }
    if (signal?.aborted || wakeups.stopping()) return undefined;
    await wakeups.pause(Math.min(left, wakeups.sleepMs?.(attempt) ?? MAX_SLEEP_MS), wakeOn, signal);
  }
}
