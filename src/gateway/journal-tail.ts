/** Publishes journal events to the live bus in order, once each, after they are committed. */
import type { Store } from '../ports.js';
import type { EventBus } from './event-bus.js';
import { SerialTask } from './serial-task.js';

export class JournalTail {
  private lastSeq = 0;
  private readonly drainer: SerialTask;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    /** A failed read is reported here; the next kick reads on from where this one stopped. */
    onError: (error: unknown) => void = () => {},
  ) {
    this.drainer = new SerialTask(() => this.drain(), onError);
  }

  /** Start after what is already in the journal. */
  async init(): Promise<void> {
    this.lastSeq = await this.store.events.latestSeq();
  }

  /** Read and publish what was appended before this call; settles once it is published. */
  kick(): Promise<void> {
    return this.drainer.kick();
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
