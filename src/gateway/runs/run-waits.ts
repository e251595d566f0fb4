/**
 * The waits of one run with durable steps (ARCHITECTURE.md 4.7): each tool call's waits run in a scope that lets them
 * suspend the run instead of sleeping on (kit/wait-until.ts). Once one wait suspends, every other wait of the run
 * suspends too, and the calls that do not wait finish; then (at the step's end, run-executor.ts) the results the step
 * has are committed and the run is aborted with `suspend`. What the waits wait on (each call's deadline, the journal
 * keys) is what the run is suspended with.
 */
import type { RunWait, WaitDeadlines } from '../../ports/index.js';
import type { WaitScope, WaitSuspended, WaitWatch } from '../../kit/wait-until.js';
import type { RunWaits } from '../tooling/run-tools.js';

const placeOf = (position: { step: number; index: number }) => `${position.step}:${position.index}`;

export class RunSuspension implements RunWaits {
  private readonly deadlines: WaitDeadlines = {};
  private readonly keys = new Set<string>();
  private readonly watches: WaitWatch[] = [];

  constructor(
    private readonly deps: {
      /** The deadlines of the calls the run was suspended waiting in, when it resumed from a wait. */
      resumed: WaitDeadlines;
      /** How long a wait sleeps in memory before it suspends the run (`lanes.suspendWaitsAfterMs`). */
      suspendAfterMs: number;
      watch: (keys: readonly string[]) => WaitWatch;
      /** Aborts the run with `suspend`. */
      abort: () => void;
    },
  ) {}

  get suspending(): boolean {
    return this.keys.size > 0;
  }

  scope(position: { step: number; index: number }): WaitScope {
    const deadline = this.deps.resumed[placeOf(position)];
    return {
      // A wait resumed looks once and suspends again at once if it is not over.
      suspendAfterMs: deadline === undefined ? this.deps.suspendAfterMs : 0,
      deadline,
      suspending: () => this.suspending,
      watch: this.deps.watch,
    };
  }

  suspended(position: { step: number; index: number }, suspension: WaitSuspended): void {
    this.deadlines[placeOf(position)] = suspension.deadline;
    for (const key of suspension.keys) this.keys.add(key);
    this.watches.push(suspension.watch);
  }

  /** The step's calls are done: the run is aborted with `suspend`. */
  abortNow(): void {
    this.deps.abort();
  }

  /** What the run is suspended with: it wakes at its first deadline or on an event on any of its keys. */
  wait(runId: string, sessionKey: string): RunWait & { deadlines: WaitDeadlines } {
    return { runId, sessionKey, until: Math.min(...Object.values(this.deadlines)), keys: [...this.keys], deadlines: { ...this.deadlines } };
  }

  /** Whether an event on its keys came since its waits last looked. */
  seen(): boolean {
    return this.watches.some((watch) => watch.seen());
  }

  stopWatching(): void {
    for (const watch of this.watches) watch.stop();
  }
}
