/**
 * Runs suspended in waits (ARCHITECTURE.md 4.7): a run that waits for a reply, a sub-agent or a session holds no lane
 * slot and no memory while it waits. It is a row (`suspended`, with its deadline and the journal keys it waits on);
 * this keeps a listener on those keys, and when an event on one of them comes, or the deadline passes, the run is
 * woken (a compare-and-set in the store: of several gateways, one wakes it) and its session's lane resumes it. The
 * resumed run looks once more and, if its wait is not over, suspends again at once.
 *
 * Every gateway listens for every waiting run, whoever suspended it: it learns of the others' from the store at each
 * sweep. At start, each run found waiting is woken once: events may have come while no gateway was listening.
 */
import { errorMessage } from '../../core/errors.js';
import { PeriodicTask } from '../../kit/serial-task.js';
import type { Clock, RunStore, RunWait } from '../../ports/index.js';
import type { GatewayLog } from '../../ports/gateway.js';
import type { EventBus } from '../events/event-bus.js';

/** How often the store is read for deadlines passed and for runs other gateways suspended. */
export const WAIT_SWEEP_MS = 1000;

export interface WaitingRunsDeps {
  store: Pick<RunStore, 'wake' | 'waiting'>;
  bus: Pick<EventBus, 'subscribeKeys'>;
  clock: Clock;
  /** The session's lane looks again: it resumes the run. */
  wake: (sessionKey: string) => void;
  log: GatewayLog;
}

export class WaitingRuns {
  private readonly listening = new Map<string, { wait: RunWait; stop: () => void }>();
  private readonly sweeps: PeriodicTask;

  constructor(private readonly deps: WaitingRunsDeps) {
    this.sweeps = new PeriodicTask(
      () => this.sweep(),
      (error) => deps.log('error', `waiting runs: ${errorMessage(error)}`),
      WAIT_SWEEP_MS,
      deps.clock,
    );
  }

  /** How many runs wait, as this gateway knows them. */
  get count(): number {
    return this.listening.size;
  }

  /** At start: every run waiting is woken once, to look again; then the sweeps begin. */
  async start(): Promise<void> {
    for (const wait of await this.deps.store.waiting()) await this.wakeRun(wait);
    this.sweeps.start();
  }

  stop(): void {
    this.sweeps.stop();
    for (const { stop } of this.listening.values()) stop();
    this.listening.clear();
  }

  /**
   * A run this gateway just suspended: listened for from now, and woken at once when an event it waits on came while it
   * suspended (`seen`, asked once this listens, so that nothing falls between the two).
   */
  async suspended(wait: RunWait, seen: () => boolean): Promise<void> {
    this.listen(wait);
    if (seen()) await this.wakeRun(wait);
  }

  private listen(wait: RunWait): void {
    if (this.listening.has(wait.runId)) return;
    const stop = this.deps.bus.subscribeKeys(wait.keys, () => void this.wakeRun(wait).catch((error) => this.failed(wait, error)));
    this.listening.set(wait.runId, { wait, stop });
  }

  private async wakeRun(wait: RunWait): Promise<void> {
    this.forget(wait.runId);
    const sessionKey = await this.deps.store.wake(wait.runId);
    if (sessionKey) this.deps.wake(sessionKey);
  }

  private forget(runId: string): void {
    this.listening.get(runId)?.stop();
    this.listening.delete(runId);
  }

  private failed(wait: RunWait, error: unknown): void {
    // Its deadline, or the next sweep, wakes it yet.
    this.deps.log('error', `waking run ${wait.runId} on ${wait.sessionKey}: ${errorMessage(error)}`);
  }

  /** Deadlines passed are woken; waits suspended elsewhere are listened for; those woken elsewhere are let go. */
  private async sweep(): Promise<void> {
    const now = this.deps.clock.now();
    const waiting = await this.deps.store.waiting();
    const current = new Set(waiting.map((wait) => wait.runId));
    for (const runId of this.listening.keys()) if (!current.has(runId)) this.forget(runId);
    for (const wait of waiting) {
      if (wait.until <= now) await this.wakeRun(wait);
      else this.listen(wait);
    }
  }
}
