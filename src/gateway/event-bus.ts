/**
 * Live fan-out of journal events and of ephemeral run deltas. Durable events are in the store's
 * journal first; this bus only tells listeners in this process that they happened.
 */
import type { EventRecord, RunRecord } from '../ports.js';

export type LiveEvent =
  | { type: 'journal'; event: EventRecord }
  /**
   * Streamed model text, only from runs that started while someone watched (`watchDeltas`). Not
   * journalled: replay a run's text from its transcript instead.
   */
  | { type: 'delta'; sessionKey: string; runId: string; text: string }
  /**
   * A run committed and consumed these inputs. Published straight from the commit, so that whoever waits
   * on them wakes at once, with the run as committed, and reads nothing back (the journal's events follow).
   */
  | { type: 'settled'; sessionKey: string; inputIds: string[]; run: RunRecord };

export type LiveListener = (event: LiveEvent) => void;

export class EventBus {
  private readonly listeners = new Set<LiveListener>();
  /** How many watch each session's deltas ('*': every session's). */
  private readonly deltaWatchers = new Map<string, number>();
  private readonly settledListeners = new Map<string, Set<(run: RunRecord) => void>>();

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

  publish(event: LiveEvent): void {
    if (event.type === 'settled') {
      for (const inputId of event.inputIds) for (const listener of this.settledListeners.get(inputId) ?? []) listener(event.run);
    }
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not stop delivery to the others.
      }
    }
  }

}
