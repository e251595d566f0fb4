/**
 * This gateway among the others on its database (docs/deploy.md "Several gateways"): its row in the registry with its
 * heartbeat (presence.ts), crash recovery and the takeover sweep (recovery.ts), aborts requested through the journal
 * for runs on whichever gateway runs them, and the signals that tell the others to read the journal now.
 */
import { errorMessage } from '../../core/errors.js';
import type { Clock, EventRecord, NewEvent, RecoveryReport, Store } from '../../ports/index.js';
import type { EventBus } from '../events/event-bus.js';
import type { HeldResults } from '../runs/held-results.js';
import type { LaneScheduler } from '../runs/lanes.js';
import { GatewayPresence } from './presence.js';
import type { GatewayLog, GatewayView } from '../../ports/gateway.js';
import { RunRecovery } from './recovery.js';

export interface GatewayClusterDeps {
  store: Store;
  clock: Clock;
  gatewayId: string;
  leaseTtlMs: number;
  version: string;
  maxRetries: () => number;
  lanes: LaneScheduler;
  bus: EventBus;
  heldResults: HeldResults;
  recoverSubagents: () => Promise<void>;
  onInputDropped: (inputId: string) => Promise<void>;
  afterRecovery: RecoveryDeps['afterRecovery'];
  /** This gateway's journal: its own writes published, the others' caught up with. */
  journal: { kick(): Promise<void>; catchUp(): Promise<void>; readonly publishedSeq: number };
  journalEvent: (event: NewEvent) => Promise<EventRecord>;
  log: GatewayLog;
}

type RecoveryDeps = ConstructorParameters<typeof RunRecovery>[0];

export class GatewayCluster {
  readonly recovery: RunRecovery;
  private readonly presence: GatewayPresence;
  private readonly unlisten: () => void;
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: GatewayClusterDeps) {
    const { store, clock, gatewayId, leaseTtlMs, lanes } = deps;
    this.presence = new GatewayPresence({
      registry: store.gateways,
      clock,
      gatewayId,
      version: deps.version,
      leaseTtlMs,
      report: () => ({ activeRuns: lanes.activeRuns().length, lanes: lanes.stats(), publishedSeq: deps.journal.publishedSeq }),
      log: (message) => deps.log('warn', message),
    });
    this.recovery = new RunRecovery({
      store,
      clock,
      gatewayId,
      leaseTtlMs,
      maxRetries: deps.maxRetries,
      wake: (sessionKey) => lanes.wake(sessionKey),
      heldResults: deps.heldResults,
      recoverSubagents: deps.recoverSubagents,
      onInputDropped: deps.onInputDropped,
      afterRecovery: deps.afterRecovery,
      publish: () => deps.journal.kick(),
      goneGateways: () => this.presence.gone,
      log: deps.log,
    });
    this.unlisten = store.signals.listen('journal', () => void deps.journal.catchUp());
    // A request to abort a run that another gateway received: the gateway running it aborts it.
    this.unsubscribe = deps.bus.subscribe((live) => {
      if (live.type !== 'journal' || live.event.type !== 'run.abort_requested') return;
      const reason = (live.event.payload as { reason?: string }).reason === 'interrupt' ? 'interrupt' : 'cancel';
      if (live.event.runId) lanes.abortRun(live.event.runId, reason);
      else if (live.event.sessionKey) lanes.abortSession(live.event.sessionKey, reason);
    });
  }

  /** Registered in the registry before anything else, so that `status` on any gateway shows it starting. */
  start(): Promise<void> {
    return this.presence.start();
  }

  /** Whether another gateway may be alive on the database (until the first heartbeat looked, yes). */
  get shared(): boolean {
    return this.presence.othersMayBeAlive;
  }

  /** This gateway wrote to the journal: the others are told, if any may be alive (alone, the round trip is saved). */
  announce(): void {
    if (this.shared) this.deps.store.signals.notify('journal');
  }

  /** An `interrupt` message for a session whose run another gateway holds: that gateway is asked to abort it. */
  interruptElsewhere(sessionKey: string): void {
    this.deps
      .journalEvent({ type: 'run.abort_requested', sessionKey, payload: { reason: 'interrupt', by: this.deps.gatewayId } })
      .catch((error) => this.deps.log('error', `interrupt of ${sessionKey}: ${errorMessage(error)}`));
  }

  /** Its control API listens at `url`: the other gateways' `status` shows it. */
  listening(url: string): Promise<void> {
    return this.presence.listening(url);
  }

  /** Every gateway on this database (this one included): alive or gone, its heartbeat, the sessions it holds, its lag. */
  async gateways(): Promise<GatewayView[]> {
    return this.presence.list((await this.deps.store.events.settled()).seq);
  }

  /** The gateways whose heartbeats stopped. */
  get gone(): readonly string[] {
    return this.presence.gone;
  }

  get lastRecovery(): RecoveryReport {
    return this.recovery.lastAtStart;
  }

  /** After the lanes stopped: their aborted runs are interrupted and settled, and the registry says it stopped. */
  async stop(): Promise<void> {
    await this.recovery.atStop();
    this.unlisten();
    this.unsubscribe();
  }

  async stopped(): Promise<void> {
    await this.presence.stop();
  }
}
