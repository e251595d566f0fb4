/**
 * Runs an async task one at a time. A call that arrives while the task runs does not start a second
 * one beside it: it queues exactly one more run after it, shared by every call that arrives meanwhile.
 * Contract: the promise `kick()` returns settles after a run that started after the call has ended, so
 * whatever the caller wrote before kicking has been seen. Failures go to `onError`; the promise never
 * rejects.
 */
import { outsideTrace } from './trace-context.js';

export class SerialTask {
  private running?: Promise<void>;
  private queued?: Promise<void>;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  kick(): Promise<void> {
    if (!this.running) return (this.running = this.start());
    this.queued ??= this.running.then(() => {
      this.queued = undefined;
      return (this.running = this.start());
    });
    return this.queued;
  }

  /** Settles when nothing is running or queued. */
  async idle(): Promise<void> {
    while (this.queued ?? this.running) await (this.queued ?? this.running);
  }

  private start(): Promise<void> {
    // A pass serves whatever is due, not the caller that kicked it: it runs outside the caller's trace.
    return outsideTrace(() => this.task())
      .catch((error) => this.onError(error))
      .finally(() => {
        // With a run queued, the queued callback takes over `running`; otherwise the task is idle.
        if (!this.queued) this.running = undefined;
      });
  }
}

/** A SerialTask run every `intervalMs` and whenever it is kicked, until it is stopped: a poll with wake-ups. */
export class PeriodicTask {
  private readonly serial: SerialTask;
  private timer?: NodeJS.Timeout;
  /** The one run asked for at a time of its own (`kickAt`), sooner than the next interval's. */
  private later?: { at: number; timer: NodeJS.Timeout };
  private halted = false;

  constructor(
    task: () => Promise<void>,
    onError: (error: unknown) => void,
    private readonly intervalMs: number,
    /** What `kickAt`'s times are read against: the caller's clock (default the system's). */
    private readonly clock: { now(): number } = { now: () => Date.now() },
  ) {
    this.serial = new SerialTask(task, onError);
  }

  /** True once `stop` was called: a run under way checks it between its steps. */
  get stopped(): boolean {
    return this.halted;
  }

  /** The timer, and a first run beside the caller (not awaited). */
  start(): void {
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    this.kick();
  }

  kick(): void {
    if (!this.halted) void this.serial.kick();
  }

  /** A run at `at` (epoch ms), unless one is due sooner already: the earliest time asked for wins. */
  kickAt(at: number): void {
    if (this.halted || (this.later && this.later.at <= at)) return;
    if (this.later) clearTimeout(this.later.timer);
    const timer = setTimeout(
      () => {
        this.later = undefined;
        this.kick();
      },
      // A millisecond more: the timer and the clock round differently, and what is due at `at` must be due by then.
      Math.max(0, at - this.clock.now()) + 1,
    );
    timer.unref();
    this.later = { at, timer };
  }

  /** Settles once a run that started after the call has ended (tests, benchmarks). */
  settle(): Promise<void> {
    return this.serial.kick();
  }

  async stop(): Promise<void> {
    this.halted = true;
    if (this.timer) clearInterval(this.timer);
    if (this.later) clearTimeout(this.later.timer);
    await this.serial.idle();
  }
}
