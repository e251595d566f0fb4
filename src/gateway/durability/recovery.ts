/**
 * Crash = replay, never loss (ARCHITECTURE.md section 4.4), for one gateway and for several on one database.
 *
 * - At start, this gateway's own runs that its previous process left `running` are recovered at once: the data
 *   directory's lock says that process is gone, so nothing needs to expire first.
 * - Every `SWEEP_MS`, the takeover sweep recovers every run whose lease expired or moved on, whoever owned it (a
 *   gateway that died, or was paused or cut off past its lease), judged by the database clock; and it wakes the
 *   sessions whose queued inputs wait past a lease's lifetime with no lease held (their gateway died before it ran
 *   them). Of several gateways sweeping, each run is recovered by one (a compare-and-set in the store). The outbox
 *   rows a gateway held mid-delivery when its heartbeat stopped are due again at once (delivery is at least once: a
 *   gateway that was only paused has its late mark refused, and the receiver dedupes by the row's key).
 *
 * After each recovery, what the interrupted runs held is settled as their ends would have: dropped inputs are told
 * to their exchanges, results a run took while it waited are delivered as messages, sub-agents are settled and
 * their parents told, and the extensions (the A2A client's followers) take up what the runs waited for.
 */
import type { GatewayLog } from '../../ports/gateway.js';
import { errorMessage } from '../../core/errors.js';
import type { Clock, RecoveryReport, Store } from '../../ports/index.js';
import type { HeldResults } from '../runs/held-results.js';
import { SerialTask } from '../../kit/serial-task.js';

/** How often the takeover sweep looks: a dead gateway's runs are taken over within a lease's lifetime and this. */
export const SWEEP_MS = 1000;
const STRANDED_BATCH = 100;

export function emptyReport(): RecoveryReport {
  return { interruptedRuns: [], suspendedRuns: [], requeuedInputs: [], droppedInputs: [], sessionKeys: [] };
}

export interface RunRecoveryDeps {
  store: Store;
  clock: Clock;
  gatewayId: string;
  leaseTtlMs: number;
  maxRetries: () => number;
  wake: (sessionKey: string) => void;
  heldResults: HeldResults;
  /** Settles the sub-agents whose runs ended without a commit (and tells their parents). */
  recoverSubagents: () => Promise<void>;
  /** After an input was dropped: journalled, and an exchange waiting on it told. */
  onInputDropped: (inputId: string) => Promise<void>;
  /** The extensions' part (GatewayExtension.afterRecovery). */
  afterRecovery: readonly ((report: RecoveryReport) => Promise<void>)[];
  /** The gateways whose heartbeats stopped (GatewayPresence.gone). */
  goneGateways: () => readonly string[];
  /** Publishes what the recovery journalled. */
  publish: () => Promise<void>;
  log: GatewayLog;
}

export class RunRecovery {
  /** What the start's recovery found (`switchboard status`). */
  lastAtStart: RecoveryReport = emptyReport();
  /** Runs this gateway took over from others (or from itself, after renewals came too late), and when last. */
  readonly takenOver = { runs: 0, lastAt: null as number | null };
  private timer?: NodeJS.Timeout;
  private readonly sweeps: SerialTask;

  constructor(private readonly deps: RunRecoveryDeps) {
    this.sweeps = new SerialTask(
      () => this.sweep(),
      (error) => deps.log('error', `takeover sweep: ${errorMessage(error)}`),
    );
  }

  /**
   * This gateway's own runs, left by its previous process, and whatever a crash left unsettled; then every session
   * with queued inputs is scheduled. (The extensions start after this and take up what they follow themselves.)
   */
  async atStart(): Promise<void> {
    const { store, clock, gatewayId } = this.deps;
    const at = new Date(clock.now()).toISOString();
    this.lastAtStart = await store.runs.recoverOrphans(
      {
        recoverer: gatewayId,
        scope: 'own',
        diagnostic: () => `gateway ${gatewayId} stopped while the run was active; recovered at ${at}`,
        maxRetries: this.deps.maxRetries(),
      },
      clock.now(),
    );
    if (this.lastAtStart.sessionKeys.length > 0) this.deps.log('warn', 'recovered interrupted runs', { ...this.lastAtStart });
    for (const inputId of this.lastAtStart.droppedInputs) await this.deps.onInputDropped(inputId);
    // Every held result whose run is over, these runs' and any a crash left between a run's end and its settling.
    await this.deps.heldResults.recover();
    await this.deps.recoverSubagents();
    await this.deps.publish();
    for (const { key } of await store.sessions.listWithQueuedInputs()) this.deps.wake(key);
  }

  /** At a clean stop, after the lanes stopped: the runs they aborted are interrupted and settled, for whoever runs next. */
  async atStop(): Promise<void> {
    this.stopSweeps();
    await this.sweeps.idle();
    await this.recover('own', () => 'gateway shut down while the run was active');
  }

  startSweeps(): void {
    this.timer = setInterval(() => void this.sweeps.kick(), SWEEP_MS);
    this.timer.unref();
  }

  private stopSweeps(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sweep now (tests; the timer's are the same); settles once it has ended. */
  sweep(): Promise<void> {
    return this.takeOver();
  }

  private async takeOver(): Promise<void> {
    const { store, clock, gatewayId, leaseTtlMs } = this.deps;
    const now = clock.now();
    const at = new Date(now).toISOString();
    const report = await this.recover('expired', (owner) =>
      owner === gatewayId
        ? `this gateway lost the session's lease while the run was active (its renewals came too late); recovered at ${at}`
        : `gateway ${owner} stopped renewing the session's lease (it died, or was paused or cut off); gateway ${gatewayId} took the run over at ${at}`,
    );
    if (report.sessionKeys.length > 0) {
      this.takenOver.runs += report.interruptedRuns.length + report.suspendedRuns.length;
      this.takenOver.lastAt = now;
      this.deps.log('warn', 'took over runs whose leases expired', { ...report });
      for (const key of report.sessionKeys) this.deps.wake(key);
    }
    for (const key of await store.sessions.listStranded(now - leaseTtlMs, STRANDED_BATCH)) this.deps.wake(key);
    // Outbox rows a gateway that died held mid-delivery are due again now, not when their claims end (outbox.claimMs).
    for (const gone of this.deps.goneGateways()) await store.outbox.releaseClaims(gone, now);
  }

  /** Recovers the orphans of `scope` and settles what their runs held. */
  private async recover(scope: 'own' | 'expired', diagnostic: (owner: string) => string): Promise<RecoveryReport> {
    const { store, clock, gatewayId } = this.deps;
    const report = await store.runs.recoverOrphans(
      { recoverer: gatewayId, scope, diagnostic, maxRetries: this.deps.maxRetries() },
      clock.now(),
    );
    if (report.sessionKeys.length === 0) return report;
    for (const inputId of report.droppedInputs) await this.deps.onInputDropped(inputId);
    for (const runId of report.interruptedRuns) await this.deps.heldResults.afterRun(runId, 'interrupted');
    await this.deps.recoverSubagents();
    for (const after of this.deps.afterRecovery) await after(report);
    await this.deps.publish();
    return report;
  }
}
