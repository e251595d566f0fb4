/**
 * The recent transcript of the sessions that ran lately, kept in memory: a run reads its session's history
 * (up to 200 entries) every time, and reading and parsing them again cost more than the rest of a short run's
 * reads together. Each read still asks the database for the entries after the last one kept, so a write
 * from any path is seen. Safe on SQLite only: its writes are serial, so entries become visible in the order
 * of their `seq`, and none can appear later behind the last one read. The transcript is append-only.
 */
import type { NewTranscriptEntry, TranscriptEntry, TranscriptStore } from '../../ports.js';
import type { KyselyTranscriptStore } from '../kysely-store.js';

interface Tail {
  /** The session's last entries, oldest first. */
  entries: readonly TranscriptEntry[];
  /** True when `entries` is the session's whole transcript. */
  whole: boolean;
}

export class TranscriptTails implements TranscriptStore {
  /** Least recently used first. */
  private readonly tails = new Map<string, Tail>();

  constructor(
    private readonly plain: KyselyTranscriptStore,
    /** How many sessions are kept. */
    private readonly maxSessions = 2000,
    /** How many entries a session keeps: reads of more go to the database. */
    private readonly maxEntries = 200,
  ) {}

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    const limit = options.limit;
    if (limit === undefined || limit > this.maxEntries) return this.plain.list(sessionKey, options);
    let tail = this.tails.get(sessionKey);
    if (tail && (tail.whole || tail.entries.length >= limit)) {
      const newer = await this.plain.listAfter(sessionKey, tail.entries.at(-1)?.seq ?? 0);
      if (newer.length > 0) {
        const entries = [...tail.entries, ...newer.map(frozen)];
        const cut = Math.max(0, entries.length - this.maxEntries);
        tail = { entries: entries.slice(cut), whole: tail.whole && cut === 0 };
      }
      this.tails.delete(sessionKey);
    } else {
      const entries = await this.plain.list(sessionKey, { limit: this.maxEntries });
      tail = { entries: entries.map(frozen), whole: entries.length < this.maxEntries };
    }
    this.tails.set(sessionKey, tail);
    if (this.tails.size > this.maxSessions) this.tails.delete(this.tails.keys().next().value!);
    return limit === 0 ? [] : tail.entries.slice(-limit);
  }

  append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    return this.plain.append(sessionKey, entries, now);
  }
}

/** Entries are shared between reads: frozen, so a reader that changed one would fail loudly instead of changing the next run's history. */
function frozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}
