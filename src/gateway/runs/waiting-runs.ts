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

/** Journal events of a run going on, which answer no wait (a watched session's `run.step` among them). */
const PROGRESS = new Set(['run.started', 'run.step', 'run.resumed', 'run.suspended', 'run.forked', 'runtime.update', 'approval.requested']);

/** How often the store is read for deadlines passed and for runs other gateways suspended. */
export const WAIT_SWEEP_MS = 1000;

export interface WaitingRunsDeps {
  store: Pick<RunStore, 'wake' | 'waiting' | 'requestAbort'>;
  bus: Pick<EventBus, 'subscribeKeys'>;
  clock: Clock;
  /** The session's lane looks again: it resumes the run. */
  wake: (sessionKey: string) => void;
  /** The gateways whose heartbeats stopped: a run one of them suspended may have missed its event while nobody listened. */
  gone: () => readonly string[];
  log: GatewayLog;
}

export class WaitingRuns {
  private readonly listening = new Map<string, { wait: RunWait; stop: () => void }>();
  /** Runs woken once because the gateway that suspended them is gone. */
  private readonly rechecked = new Set<string>();
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

  /** A cancel or an interrupt that came while the run was suspending: it is woken, and aborted as it resumes. */
  async abort(wait: RunWait, reason: 'cancel' | 'interrupt'): Promise<void> {
    this.forget(wait.runId);
    const sessionKey = await this.deps.store.requestAbort(wait.runId, reason);
    if (sessionKey) this.deps.wake(sessionKey);
  }

  private listen(wait: RunWait): void {
    if (this.listening.has(wait.runId)) return;
    const stop = this.deps.bus.subscribeKeys(wait.keys, (event) => {
      // A run's own progress on a watched session is no answer to a wait; its end, a reply or a settling may be.
      if (event.type === 'journal' && PROGRESS.has(event.event.type)) return;
      void this.wakeRun(wait).catch((error) => this.failed(wait, error));
    });
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
    const gone = new Set(this.deps.gone());
    for (const runId of this.rechecked) if (!current.has(runId)) this.rechecked.delete(runId);
    for (const wait of waiting) {
      if (wait.until <= now) await this.wakeRun(wait);
      else if (wait.owner && gone.has(wait.owner) && !this.rechecked.has(wait.runId)) {
        // Its gateway died: an event may have come before anyone else listened. It looks once more.
        this.rechecked.add(wait.runId);
        await this.wakeRun(wait);
      } else this.listen(wait);
    }
  }
}
