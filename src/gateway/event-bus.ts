/**
 * Live fan-out of journal events and of ephemeral run deltas. Durable events are in the store's
 * journal first; this bus only tells listeners in this process that they happened.
 */
import type { EventRecord } from '../ports.js';

export type LiveEvent =
  | { type: 'journal'; event: EventRecord }
  /** Streamed model text. Not journalled: replay a run's text from its transcript instead. */
  | { type: 'delta'; sessionKey: string; runId: string; text: string }
  /**
   * A run committed and consumed these inputs. Published straight from the commit, so that whoever waits
   * on them wakes at once rather than when the journal has been read back (its events follow).
   */
  | { type: 'settled'; sessionKey: string; inputIds: string[] };

export type LiveListener = (event: LiveEvent) => void;

export class EventBus {
  private readonly listeners = new Set<LiveListener>();

  subscribe(listener: LiveListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(event: LiveEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not stop delivery to the others.
      }
    }
  }

}
