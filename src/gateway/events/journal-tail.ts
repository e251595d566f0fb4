/**
 * Publishes journal events to the live bus in order, once each, after they are committed. This gateway's own writes
 * kick it (and are announced to the other gateways on the database, `announce`); the others' are caught up with when
 * they announce theirs, and by a poll as the backstop.
 */
import type { EventRecord, Store } from '../../ports/index.js';
import type { EventBus } from './event-bus.js';
import { SerialTask } from '../../kit/serial-task.js';

const UNSETTLED_RETRY_MS = 5;
/**
 * With other gateways on the database, drains come at most this often: under load, the kicks that arrive meanwhile
 * share the next one. A commit's own events then rarely follow on from the last published (the others' come between),
 * so each commit would otherwise cost a drain of three queries. A run's waiter is woken by the commit itself
 * (`settled`), not by this. Alone, a gateway drains at once.
 */
const SHARED_DRAIN_GAP_MS = 10;

export class JournalTail {
  private lastSeq = 0;
  private readonly drainer: SerialTask;
  private timer?: NodeJS.Timeout;
  private retry?: NodeJS.Timeout;
  private lastDrainAt = 0;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    /** A failed read is reported here; the next kick reads on from where this one stopped. */
    onError: (error: unknown) => void = () => {},
    /** Tells the other gateways on the database that this one wrote to the journal. */
    private readonly announce: () => void = () => {},
    /** Whether other gateways may be writing to the journal too. */
    private readonly shared: () => boolean = () => false,
  ) {
    this.drainer = new SerialTask(() => this.drain(), onError);
  }

  /** Start after what is already in the journal. */
  async init(): Promise<void> {
    this.lastSeq = await this.store.events.latestSeq();
  }

  /** This gateway appended events: read and publish them (settles once they are), and tell the other gateways. */
  kick(): Promise<void> {
    this.announce();
    return this.drainer.kick();
  }

  /** Another gateway appended events (it said so, or the poll looks): read and publish what is new. */
  catchUp(): Promise<void> {
    return this.drainer.kick();
  }

  /**
   * Events a commit just wrote, handed over by their writer. When they follow straight on from the last
   * event published, they are published at once, without reading them back; otherwise (another writer's
   * events come between them and are not published yet) the journal is read from where it was left.
   */
  committed(events: readonly EventRecord[]): void {
    this.announce();
    const follows = events.every((event, index) => event.seq === this.lastSeq + 1 + index);
    if (events.length === 0 || !follows) {
      void this.kick();
      return;
    }
    for (const event of events) this.publish(event);
  }

  private publish(event: EventRecord): void {
    this.lastSeq = event.seq;
    this.bus.publish({ type: 'journal', event });
  }

  /**
   * Reads on up to the journal's settled point only: on PostgreSQL a later sequence number can commit before an
   * earlier one, and a tail that moved past the earlier one would never publish it. While some are unsettled it
   * looks again shortly (the transactions holding them are committing).
   */
  private async drain(): Promise<void> {
    const wait = this.shared() ? this.lastDrainAt + SHARED_DRAIN_GAP_MS - Date.now() : 0;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    this.lastDrainAt = Date.now();
    for (;;) {
      const settled = await this.store.events.settled();
      const events = await this.store.events.list({ afterSeq: this.lastSeq, upToSeq: settled.seq, limit: 500 });
      // Events handed over by their writer while the read was under way are published already.
      for (const event of events) if (event.seq > this.lastSeq) this.publish(event);
      if (events.length === 500) continue;
      if (settled.unsettled && !this.retry) {
        this.retry = setTimeout(() => {
          this.retry = undefined;
          void this.catchUp();
        }, UNSETTLED_RETRY_MS);
      }
      return;
    }
  }

  /** The newest event published: everything at or below it has been (a reader of the journal stops here). */
  get publishedSeq(): number {
    return this.lastSeq;
  }

  /**
   * Reads the journal every `pollMs` as well: the backstop for other gateways' events whose signal was lost, and for
   * any write here that published nothing; `stop` ends it.
   */
  poll(pollMs: number): void {
    this.timer = setInterval(() => void this.catchUp(), pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.retry) clearTimeout(this.retry);
  }
}
