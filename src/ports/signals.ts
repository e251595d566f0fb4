/**
 * Wake-ups between the gateways sharing one database (PostgreSQL's LISTEN/NOTIFY). Best effort: nothing may depend on
 * a signal arriving; whoever listens also polls, and a signal only brings what the poll would have found sooner.
 */

/** `journal`: another gateway appended journal events (its commits, its recoveries, its board writes). */
export type SignalTopic = 'journal';

export interface Signals {
  /** Tells the other gateways that `topic` has news. Coalesced: many calls in a moment send one signal. */
  notify(topic: SignalTopic): void;
  /**
   * Calls `listener` when another gateway signalled `topic`, and after a lost connection to the signals came back
   * (what was signalled meanwhile is not known). Returns the unsubscribe.
   */
  listen(topic: SignalTopic, listener: () => void): () => void;
}
