/**
 * The gateway: owns the store, the lanes, the outbox and the journal, and is the one API every front
 * (HTTP, CLI, tools, A2A) goes through, by the narrower GatewayApi.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { SwitchboardConfig } from '../config/schema.js';
import { ModelRegistry } from '../models/model-registry.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  NewEvent,
  NewInput,
  NewOutboxRow,
  OutboxRecord,
  InputRecord,
  RecoveryReport,
  Store,
} from '../ports/index.js';
import type { GatewayTool } from './tool-contract.js';
import { PromptFileCache } from './context.js';
import { EventBus, type LiveListener } from './event-bus.js';
import { JournalTail } from './journal-tail.js';
import { LaneScheduler, laneOptions, type StalledLane } from './lanes.js';
import { OutboxDispatcher, type OutboxHandler } from './outbox.js';
import { AgentRegistry } from './registry.js';
import { redactor, secretsOf } from '../config/secrets.js';
import { applyReload, describeReload, planReload, type ConfigReload } from './config-reload.js';
import { createSessionRunner, type RunOutcomeReport } from './session-runner.js';
import { EXCHANGE_STEP_KIND, ExchangeFlow, exchangeStepRow } from './exchanges.js';
import { AgentMessaging } from './messaging.js';
import { Subagents } from './subagents.js';
import { HeldResults } from './held-results.js';
import { RunRecovery } from './recovery.js';
import { GatewayPresence, type GatewayView } from './presence.js';
import { journalPause, type Wakeups } from './wait-until.js';
import type { GatewayApi, GatewayStatus } from './gateway-api.js';
import { GatewayControl } from './gateway-control.js';
import type { GatewayDeps, GatewayExtension, GatewayParts } from './gateway-types.js';

export type { WaitResult } from './gateway-queries.js';
import { COMPLETION_KIND } from '../core/subagent.js';

export type { GatewayDeps, GatewayExtension, GatewayParts } from './gateway-types.js';
export type { SendRequest, SendResult } from './send-request.js';

export const systemClock: Clock = { now: () => Date.now() };
export const uuidIds: IdGenerator = { next: () => randomUUID() };

/** The backstop: other gateways' events come sooner by their signal (LISTEN/NOTIFY). */
const JOURNAL_POLL_MS = 1000;

export class Gateway extends GatewayControl implements GatewayApi {
  readonly config: SwitchboardConfig;
  readonly store: Store;
  readonly agents: AgentRegistry;
  /** Agent-to-agent messaging: the session tools and `send --from` go through it. */
  readonly messaging: AgentMessaging;
  readonly bus = new EventBus();
  readonly gatewayId: string;
  readonly startedAt: number;
  lastStalls: StalledLane[] = [];
  protected readonly clock: Clock;
  protected readonly ids: IdGenerator;
  protected readonly lanes: LaneScheduler;
  private readonly outbox: OutboxDispatcher;
  private readonly journal: JournalTail;
  private readonly exchanges: ExchangeFlow;
  private readonly extensions: GatewayExtension[];
  /** Results runs took while they waited: kept if the run commits, delivered as messages if not. */
  private readonly heldResults: HeldResults;
  /** Sub-agents: spawning, completion delivery, waits, kills, recovery and archiving. */
  readonly subagents: Subagents;
  /** Crash recovery at start and the takeover sweep (recovery.ts). */
  private readonly recovery: RunRecovery;
  /** How long a run's lease holds without renewal (lanes.leaseTtlSeconds). */
  private readonly leaseTtlMs: number;
  /** This gateway in the registry every gateway on the database shares. */
  private readonly presence: GatewayPresence;
  private readonly models: ModelRegistry;
  /** Takes the config's secrets out of a text; made again when a reload brings new ones. */
  redact: (text: string) => string;
  protected readonly tools: readonly GatewayTool[];
  private readonly log: NonNullable<GatewayDeps['log']>;
  private watchdog?: NodeJS.Timeout;
  /** Ends listening for the other gateways' journal signals. */
  private readonly unlisten: () => void;
  private stopped = false;
  private started = false;
  private readonly waiters = new Set<() => void>();
  /** What every wait sleeps on: journal events, the clock and the gateway stopping. */
  protected readonly wakeups: Wakeups = {
    clock: { now: () => this.clock.now() },
    pause: journalPause(this.bus, this.waiters, () => this.stopped),
    stopping: () => this.stopped,
  };

  private constructor(deps: GatewayDeps) {
    super();
    this.config = deps.config;
    this.store = deps.store;
    this.gatewayId = deps.gatewayId;
    this.clock = deps.clock ?? systemClock;
    this.ids = deps.ids ?? uuidIds;
    this.log = deps.log ?? (() => {});
    this.startedAt = this.clock.now();
    this.leaseTtlMs = deps.config.lanes.leaseTtlSeconds * 1000;
    this.agents = new AgentRegistry(deps.config);
    this.models = new ModelRegistry(deps.config.models.providers);
    this.redact = redactor(secretsOf(deps.config));
    this.journal = new JournalTail(
      this.store,
      this.bus,
      (error) => this.log('error', `journal: ${errorMessage(error)}`),
      // Only another gateway needs telling; alone on the database, the round trip is saved.
      () => {
        if (this.presence.othersMayBeAlive) this.store.signals.notify('journal');
      },
    );
    this.unlisten = this.store.signals.listen('journal', () => void this.journal.catchUp());
    this.outbox = new OutboxDispatcher(
      this.store,
      this.clock,
      { ...deps.config.outbox, owner: deps.gatewayId },
      (row, outcome, error) => this.onOutboxSettled(row, outcome, error),
      (error) => this.log('error', `outbox: ${errorMessage(error)}`),
    );
    this.exchanges = new ExchangeFlow({
      store: this.store,
      clock: this.clock,
      ids: this.ids,
      accept: (input) => this.accept(input),
      journal: (event) => this.journalEvent(event),
    });
    this.outbox.register(EXCHANGE_STEP_KIND, (row) => this.exchanges.onStep(row));
    this.messaging = this.newMessaging();
    this.subagents = this.newSubagents(deps);
    this.outbox.register(COMPLETION_KIND, (row) => this.subagents.deliverCompletion(row));
    this.extensions = deps.extensions?.(this.parts()) ?? [];
    for (const extension of this.extensions)
      for (const [kind, handler] of Object.entries(extension.deliveries ?? {})) this.outbox.register(kind, handler);
    this.heldResults = new HeldResults({ store: this.store, newId: () => this.ids.next(), accept: (input) => this.accept(input) }, [
      this.exchanges,
      ...this.extensions.flatMap((extension) => extension.heldResults ?? []),
    ]);
    this.tools = this.extensions.flatMap((extension) => extension.tools ?? []);
    this.lanes = new LaneScheduler(
      this.store,
      this.clock,
      laneOptions(deps.config, this.gatewayId, this.leaseTtlMs),
      this.newSessionRunner(deps),
      (error, sessionKey) => this.log('error', `lane ${sessionKey}: ${error instanceof Error ? error.stack : String(error)}`),
      () => void this.journal.kick(),
      (sessionKey) =>
        void this.journalEvent({ type: 'run.abort_requested', sessionKey, payload: { reason: 'interrupt', by: this.gatewayId } }).catch(
          (error) => this.log('error', `interrupt of ${sessionKey}: ${errorMessage(error)}`),
        ),
    );
    // A request to abort a run another gateway received: the gateway running it aborts it.
    this.bus.subscribe((live) => {
      if (live.type !== 'journal' || live.event.type !== 'run.abort_requested') return;
      const reason = (live.event.payload as { reason?: string }).reason === 'interrupt' ? 'interrupt' : 'cancel';
      if (live.event.runId) this.lanes.abortRun(live.event.runId, reason);
      else if (live.event.sessionKey) this.lanes.abortSession(live.event.sessionKey, reason);
    });
    this.recovery = new RunRecovery({
      store: this.store,
      clock: this.clock,
      gatewayId: this.gatewayId,
      leaseTtlMs: this.leaseTtlMs,
      maxRetries: () => this.config.recovery.retryInterrupted,
      wake: (sessionKey) => this.lanes.wake(sessionKey),
      heldResults: this.heldResults,
      recoverSubagents: () => this.subagents.recover(),
      onInputDropped: (inputId) => this.onInputDropped(inputId),
      afterRecovery: this.extensions.flatMap((extension) => (extension.afterRecovery ? [extension.afterRecovery] : [])),
      publish: () => this.journal.kick(),
      goneGateways: () => this.presence.gone,
      log: this.log,
    });
    this.presence = new GatewayPresence({
      registry: this.store.gateways,
      clock: this.clock,
      gatewayId: this.gatewayId,
      version: deps.version ?? 'unknown',
      leaseTtlMs: this.leaseTtlMs,
      report: () => ({ activeRuns: this.lanes.activeRuns().length, lanes: this.lanes.stats(), publishedSeq: this.journal.publishedSeq }),
      log: (message) => this.log('warn', message),
    });
  }

  private newMessaging(): AgentMessaging {
    return new AgentMessaging({
      config: this.config,
      store: this.store,
      agents: this.agents,
      clock: this.clock,
      ids: this.ids,
      openSession: (sessionKey, agentId) => this.openSession(sessionKey, agentId),
      wake: (sessionKey) => this.lanes.wake(sessionKey),
      isBusy: (sessionKey) => this.lanes.isBusy(sessionKey),
      wakeups: this.wakeups,
      isStopping: () => this.stopped,
      validateMessage: (message) => this.validateMessage(message),
      flow: this.exchanges,
    });
  }

  private newSubagents(deps: GatewayDeps): Subagents {
    return new Subagents({
      config: this.config,
      store: this.store,
      agents: this.agents,
      clock: this.clock,
      ids: this.ids,
      secret: deps.capabilitySecret ?? randomBytes(32).toString('base64url'),
      worktreeRoot: deps.dataDir ? join(deps.dataDir, 'worktrees') : undefined,
      accept: (input) => this.accept(input),
      wake: (sessionKey) => this.lanes.wake(sessionKey),
      abortRun: (runId) => this.abortRun(runId, 'cancel'),
      toolNames: async (sessionKey) => (await this.toolsOf(sessionKey)).map((tool) => tool.name),
      checkModel: (model) => void this.models.resolve(model),
      validateMessage: (message) => this.validateMessage(message),
      wakeups: this.wakeups,
      isStopping: () => this.stopped,
      journal: (event) => this.journalEvent(event),
      afterWrite: () => {
        void this.journal.kick();
        this.outbox.kick();
      },
      log: (message) => this.log('warn', message),
    });
  }

  /** What extensions are built from (GatewayParts). */
  private parts(): GatewayParts {
    return {
      config: this.config,
      store: this.store,
      clock: this.clock,
      messaging: this.messaging,
      subagents: this.subagents,
      accept: (input) => this.accept(input),
      enqueueDelivery: (row) => this.enqueueDelivery(row),
      log: (message) => this.log('warn', message),
      gatewayId: this.gatewayId,
      api: () => this,
    };
  }

  private newSessionRunner(deps: GatewayDeps) {
    return createSessionRunner({
      config: this.config,
      store: this.store,
      clock: this.clock,
      ids: this.ids,
      owner: this.gatewayId,
      leaseTtlMs: this.leaseTtlMs,
      agents: this.agents,
      models: this.models,
      tools: this.tools,
      promptFiles: new PromptFileCache(),
      bus: this.bus,
      toolLedger: !deps.withoutToolLedger,
      afterCommit: (wroteOutbox, events) => {
        if (events) this.journal.committed(events);
        else void this.journal.kick();
        if (wroteOutbox) this.outbox.kick();
      },
      onCommitted: (run) => this.afterRunCommitted(run),
      onDropped: (inputId) => this.onInputDropped(inputId, false),
      redact: (text) => this.redact(text),
    });
  }

  /** A failure here must not hold up the lane: recovery settles the same exchanges on the next start. */
  private async afterRunCommitted(run: RunOutcomeReport): Promise<void> {
    if (run.status !== 'succeeded') this.logFailedRun(run);
    // Results are held only by the tool calls of a run (sessions_send, a2a_send waiting for a reply).
    if (run.calledTools) {
      await this.heldResults
        .afterRun(run.runId, run.status)
        .catch((error) => this.log('error', `results held by run ${run.runId}: ${errorMessage(error)}`));
    }
    await this.subagents
      .onRunCommitted(run.sessionKey, run.status)
      .catch((error) => this.log('error', `sub-agents of run ${run.runId}: ${errorMessage(error)}`));
  }

  /** Recovers what a previous process left behind, then starts scheduling. */
  static async start(deps: GatewayDeps): Promise<Gateway> {
    // Every gateway on the database signs sub-agent handles with one secret: a handle made on one works on all.
    const secret = await deps.store.gateways.sharedSecret(
      'subagent-handles',
      deps.capabilitySecret ?? randomBytes(32).toString('base64url'),
    );
    const gateway = new Gateway({ ...deps, capabilitySecret: secret });
    await gateway.presence.start();
    await gateway.journal.init();
    // Other gateways on a shared database commit events nothing here kicks for.
    gateway.journal.poll(JOURNAL_POLL_MS);
    await gateway.recovery.atStart();
    await gateway.outbox.start();
    for (const extension of gateway.extensions) await extension.start?.();
    gateway.recovery.startSweeps();
    gateway.watchdog = setInterval(() => void gateway.checkLanes(), deps.config.watchdog.intervalMs);
    gateway.started = true;
    return gateway;
  }

  /** Its control API listens at `url`: the other gateways' `status` shows it. */
  listening(url: string): Promise<void> {
    return this.presence.listening(url);
  }

  /** Every gateway on this database (this one included): alive or gone, its heartbeat, the sessions it holds, its lag. */
  async gateways(): Promise<GatewayView[]> {
    return this.presence.list((await this.store.events.settled()).seq);
  }

  /** What the start's recovery found. */
  get lastRecovery(): RecoveryReport {
    return this.recovery.lastAtStart;
  }

  /** One takeover sweep now (what every gateway does every second): runs whose leases expired are recovered. */
  sweep(): Promise<void> {
    return this.recovery.sweep();
  }

  /** One readable line per run that did not succeed: where, why, and the command that shows the rest. */
  private logFailedRun(run: RunOutcomeReport): void {
    const why = run.error ?? (run.status === 'cancelled' ? 'cancelled on request' : 'no detail recorded');
    const fields = { runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, status: run.status };
    this.log(
      run.status === 'cancelled' ? 'info' : 'warn',
      `run ${run.status}: agent ${run.agentId}, session ${run.sessionKey}: ${why} (switchboard runs show ${run.runId.slice(0, 8)})`,
      fields,
    );
  }

  private async checkLanes(): Promise<void> {
    await this.subagents.archive().catch((error) => this.log('error', `sub-agent archive: ${errorMessage(error)}`));
    try {
      this.lastStalls = await this.lanes.findAndRepairStalls();
      for (const stall of this.lastStalls) {
        this.log('warn', 'lane stalled: queued inputs and no active run; woken again', { ...stall });
        await this.journalEvent({ type: 'lane.stalled', sessionKey: stall.sessionKey, payload: { ...stall } });
      }
    } catch (error) {
      this.log('error', `watchdog: ${String(error)}`);
    }
  }

  private onOutboxSettled(row: OutboxRecord, outcome: 'delivered' | 'retry' | 'dead', error?: string): void {
    if (outcome === 'delivered') return;
    this.log(outcome === 'dead' ? 'error' : 'warn', `outbox ${row.kind} ${outcome}`, { id: row.id, error });
    if (outcome !== 'dead') return;
    this.journalEvent({ type: 'outbox.dead', sessionKey: row.target, payload: { id: row.id, kind: row.kind, error } }).catch((failure) =>
      this.log('error', `outbox: ${errorMessage(failure)}`),
    );
    if (row.kind === COMPLETION_KIND)
      this.subagents
        .onCompletionDead(row, error ?? 'unknown error')
        .catch((failure) => this.log('error', `outbox: ${errorMessage(failure)}`));
  }

  /** A dead row delivered again from its first attempt, or dropped for good. */
  settleDeadOutbox(id: string, action: 'retry' | 'drop'): Promise<OutboxRecord> {
    return this.outbox.settleDead(id, action);
  }

  protected async journalEvent(event: NewEvent): Promise<EventRecord> {
    const record = await this.store.events.append(event, this.clock.now());
    await this.journal.kick();
    return record;
  }

  /**
   * After an input was dropped (by recovery or a cancel): journalled, and, if it belongs to an exchange,
   * the exchange is told, so nobody waits for it in vain. The runner journals its own drops.
   */
  protected async onInputDropped(inputId: string, journal = true): Promise<void> {
    const input = await this.store.inputs.get(inputId);
    if (!input) return;
    const why = input.note ?? 'dropped';
    if (journal) await this.journalEvent({ type: 'input.dropped', sessionKey: input.sessionKey, payload: { inputId, note: why } });
    const row = exchangeStepRow(input, { runId: null, status: 'dropped', text: null, error: why }, this.ids.next());
    if (row) await this.enqueueDelivery(row);
  }

  /**
   * For fronts with deliveries of their own (A2A push notifications): `kind`'s rows are handed to
   * `handler`, at least once, with the outbox's retries, backoff and dead-letter state.
   */
  registerDelivery(kind: string, handler: OutboxHandler): void {
    this.outbox.register(kind, handler);
  }

  /** Adds an outbox row (deduplicated by its idempotency key) and has it delivered soon. */
  async enqueueDelivery(row: NewOutboxRow): Promise<void> {
    await this.store.outbox.add(row, this.clock.now());
    this.outbox.kick();
  }

  /** Stores an input produced inside the gateway and wakes its session. */
  protected async accept(input: NewInput): Promise<InputRecord> {
    const { input: stored, created } = await this.store.inputs.enqueue(input, this.clock.now());
    if (created) this.lanes.wake(stored.sessionKey);
    return stored;
  }

  /** Resolves once everything the store committed so far is durable (a waited send that answers before its reply). */
  durable = (): Promise<void> => this.store.durable();

  backupStore(path: string): Promise<{ path: string; bytes: number }> {
    return this.store.backup(path);
  }

  /** For fronts that write journal events in their own transactions (the board): publishes what is new. */
  publishJournal = (): Promise<void> => this.journal.kick();

  subscribe(listener: LiveListener): () => void {
    return this.bus.subscribe(listener);
  }

  /** See EventBus.watchDeltas: runs that start from now on stream their text. */
  watchDeltas(sessionKey?: string): () => void {
    return this.bus.watchDeltas(sessionKey);
  }

  status(): GatewayStatus {
    return {
      gatewayId: this.gatewayId,
      startedAt: this.startedAt,
      uptimeMs: this.clock.now() - this.startedAt,
      agents: this.agents.list().map((agent) => agent.config.id),
      lanes: this.lanes.stats(),
      activeRuns: this.lanes.activeRuns().map((slot) => ({ sessionKey: slot.sessionKey, runId: slot.runId ?? null })),
      stalledLanes: this.lastStalls,
      lastRecovery: this.lastRecovery,
      takenOver: { ...this.recovery.takenOver },
    };
  }

  /** Ready for traffic: recovery done, not stopping, and the store answers a read. */
  async ready(): Promise<boolean> {
    if (!this.started || this.stopped) return false;
    try {
      await this.store.events.list({ afterSeq: Number.MAX_SAFE_INTEGER, limit: 1 });
      return true;
    } catch {
      return false;
    }
  }

  /** Takes a new config's reloadable sections (config-reload.ts); the rest waits for a restart and is named. */
  reloadConfig(next: SwitchboardConfig): ConfigReload {
    const plan = planReload(this.config, next);
    applyReload(this.config, next, plan);
    this.agents.reload();
    this.models.reload(this.config.models.providers);
    this.redact = redactor(secretsOf(this.config));
    this.log('info', describeReload(plan));
    return plan;
  }

  /** True once stop() has begun. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Stops scheduling; active runs are aborted and left to recovery, which queues their inputs again. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.watchdog) clearInterval(this.watchdog);
    for (const wake of this.waiters) wake();
    for (const extension of this.extensions) extension.stop?.();
    await this.lanes.stop('shutdown');
    await this.outbox.stop();
    await this.recovery.atStop();
    await this.journal.kick();
    this.journal.stop();
    this.unlisten();
    await this.presence.stop();
  }

  protected publishedSeq(): number {
    return this.journal.publishedSeq;
  }
}
