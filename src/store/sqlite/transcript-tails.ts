/**
 * The recent transcript of the sessions that ran lately, kept in memory: a run reads its session's history
 * (up to 200 entries) every time, and reading and parsing them again cost more than the rest of a short run's
 * reads together. Each read still asks the database for the entries after the last one kept, so a write
 * from any path is seen. Safe on SQLite only: its writes are serial, so entries become visible in the order
 * of their `seq`, and none can appear later behind the last one read. The transcript is append-only.
 */
import type { NewTranscriptEntry, TranscriptEntry, TranscriptStore } from '../../ports/index.js';
import type { KyselyTranscriptStore } from '../sessions/transcript-store.js';

interface Tail {
  /** The session's last entries, oldest first, frozen. */
  entries: readonly TranscriptEntry[];
  /** Each entry's size in characters of JSON, to bound the memory kept. */
  sizes: readonly number[];
  bytes: number;
  /** True when `entries` is the session's whole transcript. */
  whole: boolean;
}

export class TranscriptTails implements TranscriptStore {
  /** Least recently used first. */
  private readonly tails = new Map<string, Tail>();
  private bytes = 0;

  constructor(
    private readonly plain: KyselyTranscriptStore,
    /** How many sessions are kept. */
    private readonly maxSessions = 2000,
    /** How many entries a session keeps: reads of more go to the database. */
    private readonly maxEntries = 200,
    /** How much is kept in all, in characters of JSON (about 64 MB): tool results can be large. */
    private readonly maxBytes = 64 * 1024 * 1024,
  ) {}

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    const limit = options.limit;
    if (limit === undefined || limit > this.maxEntries) return this.plain.list(sessionKey, options);
    const kept = this.tails.get(sessionKey);
    let tail: Tail;
    if (kept && (kept.whole || kept.entries.length >= limit)) {
      const newer = await this.plain.listAfter(sessionKey, kept.entries.at(-1)?.seq ?? 0);
      tail =
        newer.length === 0 ? kept : this.tail([...kept.entries, ...newer.map(frozen)], [...kept.sizes, ...newer.map(sizeOf)], kept.whole);
    } else {
      const entries = await this.plain.list(sessionKey, { limit: this.maxEntries });
      tail = this.tail(entries.map(frozen), entries.map(sizeOf), entries.length < this.maxEntries);
    }
    this.keep(sessionKey, tail);
    return limit === 0 ? [] : tail.entries.slice(-limit);
  }

  listByRun(sessionKey: string, runId: string): Promise<TranscriptEntry[]> {
    return this.plain.listByRun(sessionKey, runId);
  }

  append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    return this.plain.append(sessionKey, entries, now);
  }

  private tail(entries: TranscriptEntry[], sizes: number[], whole: boolean): Tail {
    const cut = Math.max(0, entries.length - this.maxEntries);
    const keptSizes = sizes.slice(cut);
    return {
      entries: entries.slice(cut),
      sizes: keptSizes,
      bytes: keptSizes.reduce((sum, size) => sum + size, 0),
      whole: whole && cut === 0,
    };
  }

  /** Kept as the most recently used; the least recently used go while there are too many or too much. */
  private keep(sessionKey: string, tail: Tail): void {
    const old = this.tails.get(sessionKey);
    if (old) {
      this.bytes -= old.bytes;
      this.tails.delete(sessionKey);
    }
    this.tails.set(sessionKey, tail);
    this.bytes += tail.bytes;
    while (this.tails.size > this.maxSessions || (this.bytes > this.maxBytes && this.tails.size > 0)) {
      const [oldest, dropped] = this.tails.entries().next().value!;
      this.tails.delete(oldest);
      this.bytes -= dropped.bytes;
    }
  }
}

const sizeOf = (entry: TranscriptEntry): number => JSON.stringify(entry.content ?? null).length + JSON.stringify(entry.provenance).length;

/** Entries are shared between reads: frozen, so a reader that changed one would fail loudly instead of changing the next run's history. */
function frozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}
