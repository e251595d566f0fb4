/** Publishes journal events to the live bus in order, once each, after they are committed. */
import type { Store } from '../ports.js';
import type { EventBus } from './event-bus.js';

export class JournalTail {
  private lastSeq = 0;
  private busy?: Promise<void>;
  private again = false;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    /** A failed read is reported here; the next kick reads on from where this one stopped. */
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Start after what is already in the journal. */
  async init(): Promise<void> {
    this.lastSeq = await this.store.events.latestSeq();
  }

  /** Read and publish what was appended since the last call. */
  kick(): Promise<void> {
    if (this.busy) {
      this.again = true;
      return this.busy;
    }
    this.busy = this.drain()
      .catch((error) => this.onError(error))
      .finally(() => {
        this.busy = undefined;
        if (this.again) {
          this.again = false;
          void this.kick();
        }
      });
    return this.busy;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const events = await this.store.events.list({ afterSeq: this.lastSeq, limit: 500 });
      for (const event of events) {
        this.lastSeq = event.seq;
        this.bus.publish({ type: 'journal', event });
      }
      if (events.length < 500) return;
    }
  }
}
