/**
 * Live fan-out of journal events and of ephemeral run deltas. Durable events are in the store's
 * journal first; this bus only tells listeners in this process that they happened.
 */
import type { RunRecord } from '../../ports/index.js';
import type { Wakeups } from '../../kit/wait-until.js';
import type { LiveEvent, LiveListener } from '../../ports/gateway.js';
import { outsideTrace } from '../../kit/trace-context.js';

/**
 * What an event is about, as keys a listener can subscribe to (`subscribeKeys`): its session, and the inputs,
 * exchange, sub-agent and target session its payload names. A live delta is about nothing.
 */
export function eventKeys(event: LiveEvent): string[] {
  if (event.type === 'delta') return [];
  if (event.type === 'settled') return [`session:${event.sessionKey}`, ...event.inputIds.map((id) => `input:${id}`)];
  const keys: string[] = [];
  if (event.event.sessionKey !== null) keys.push(`session:${event.event.sessionKey}`);
  const payload = (event.event.payload ?? {}) as Record<string, unknown>;
  if (typeof payload.inputId === 'string') keys.push(`input:${payload.inputId}`);
  if (Array.isArray(payload.inputIds)) for (const id of payload.inputIds) if (typeof id === 'string') keys.push(`input:${id}`);
  if (typeof payload.exchangeId === 'string') keys.push(`exchange:${payload.exchangeId}`);
  if (typeof payload.subagentId === 'string') keys.push(`subagent:${payload.subagentId}`);
  if (typeof payload.approvalId === 'string') keys.push(`approval:${payload.approvalId}`);
  if (typeof payload.budgetKey === 'string') keys.push(`budget:${payload.budgetKey}`);
  if (typeof payload.targetSession === 'string') keys.push(`session:${payload.targetSession}`);
  return keys;
}

export class EventBus {
  private readonly listeners = new Set<LiveListener>();
  /** How many watch each session's deltas ('*': every session's). */
  private readonly deltaWatchers = new Map<string, number>();
  private readonly settledListeners = new Map<string, Set<(run: RunRecord) => void>>();
  /** Listeners by the keys they asked for: an event reaches only those of its own keys (`eventKeys`). */
  private readonly keyed = new Map<string, Set<LiveListener>>();

  /**
   * Asks runs of this session (without one: of every session) to stream their text as `delta` events.
   * A run that starts with nobody watching makes the cheaper, unstreamed model call; its text still
   * arrives with its reply. Returns the function that stops watching.
   */
  watchDeltas(sessionKey = '*'): () => void {
    this.deltaWatchers.set(sessionKey, (this.deltaWatchers.get(sessionKey) ?? 0) + 1);
    let watching = true;
    return () => {
      if (!watching) return;
      watching = false;
      const left = this.deltaWatchers.get(sessionKey)! - 1;
      if (left === 0) this.deltaWatchers.delete(sessionKey);
      else this.deltaWatchers.set(sessionKey, left);
    };
  }

  wantsDeltas(sessionKey: string): boolean {
    return this.deltaWatchers.size > 0 && (this.deltaWatchers.has('*') || this.deltaWatchers.has(sessionKey));
  }

  /**
   * Calls `listener` with the committed run when a commit consumes this input. Kept by input id, so that a
   * thousand waits cost a commit a lookup each, not a call each.
   */
  onSettled(inputId: string, listener: (run: RunRecord) => void): () => void {
    let listeners = this.settledListeners.get(inputId);
    if (!listeners) this.settledListeners.set(inputId, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.settledListeners.get(inputId) === listeners) this.settledListeners.delete(inputId);
    };
  }

  subscribe(listener: LiveListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Calls `listener` with the journal and settled events about any of `keys` (`eventKeys`), once per event.
   * A thousand waits on their own inputs cost an event a lookup per key it has, not a call per wait.
   */
  subscribeKeys(keys: readonly string[], listener: LiveListener): () => void {
    for (const key of keys) {
      let listeners = this.keyed.get(key);
      if (!listeners) this.keyed.set(key, (listeners = new Set()));
      listeners.add(listener);
    }
    return () => {
      for (const key of keys) {
        const listeners = this.keyed.get(key);
        if (!listeners) continue;
        listeners.delete(listener);
        if (listeners.size === 0) this.keyed.delete(key);
      }
    };
  }

  /** Listeners run outside the publisher's trace scope: what they start (a dispatcher pass, a wake) is not its work. */
  publish(event: LiveEvent): void {
    outsideTrace(() => this.dispatch(event));
  }

  private dispatch(event: LiveEvent): void {
    if (event.type === 'settled') {
      for (const inputId of event.inputIds) for (const listener of this.settledListeners.get(inputId) ?? []) listener(event.run);
    }
    for (const listener of this.listeners) deliver(listener, event);
    if (this.keyed.size === 0) return;
    const called = new Set<LiveListener>();
    for (const key of eventKeys(event)) {
      for (const listener of this.keyed.get(key) ?? []) {
        if (called.has(listener)) continue;
        called.add(listener);
        deliver(listener, event);
      }
    }
  }
}

function deliver(listener: LiveListener, event: LiveEvent): void {
  try {
    listener(event);
  } catch {
    // A listener's failure must not stop delivery to the others.
  }
}

/**
 * The gateway's pause: resolves after `ms`, when a journal event matching `wakeOn` is published, on
 * abort, or when the gateway stops (`waiters` are all woken by its stop).
 */
export function journalPause(bus: EventBus, waiters: Set<() => void>, stopping: () => boolean): Wakeups['pause'] {
  return (ms, wakeOn, signal) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const test = typeof wakeOn === 'function' ? wakeOn : wakeOn.test;
      const listener = (event: LiveEvent) => {
        if (
          event.type === 'journal' &&
          test((event.event.payload ?? {}) as Record<string, unknown>, event.event.sessionKey, event.event.type)
        )
          done();
        else if (event.type === 'settled' && test({ inputIds: event.inputIds }, event.sessionKey, 'settled')) done();
      };
      const unsubscribe = typeof wakeOn === 'function' ? bus.subscribe(listener) : bus.subscribeKeys(wakeOn.keys, listener);
      waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
      if (stopping() || signal?.aborted) done();
    });
}
