/**
 * The gateway: owns the store, the lanes, the outbox and the journal, and is the one API every front
 * (HTTP, CLI, tools, A2A) goes through, by the narrower GatewayApi. Its parts are built and wired in
 * gateway-assembly.ts; here are its life (start, ready, reload, stop) and the calls the fronts make.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { SwitchboardConfig } from '../config/schema.js';
import { redactor, secretsOf } from '../config/secrets.js';
import { ModelRegistry } from '../models/model-registry.js';
import { errorMessage } from '../core/errors.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  InputRecord,
  NewEvent,
  NewInput,
  NewOutboxRow,
  OutboxRecord,
  RecoveryReport,
  Store,
} from '../ports/index.js';
import type { Aftermath } from './aftermath.js';
import type { GatewayCluster } from './cluster.js';
import { applyReload, describeReload, planReload, type ConfigReload } from '../config/reload.js';
import { EventBus, type LiveListener } from './event-bus.js';
import type { Extensions } from './extensions.js';
import type { GatewayApi, GatewayStatus } from './gateway-api.js';
import { assembleGateway } from './gateway-assembly.js';
import { GatewayControl } from './gateway-control.js';
import type { GatewayDeps } from './gateway-types.js';
import type { JournalTail } from './journal-tail.js';
import type { LaneScheduler } from './lanes.js';
import type { AgentMessaging } from './messaging.js';
import type { OutboxDispatcher, OutboxHandler } from './outbox.js';
import type { GatewayView } from './presence.js';
import { AgentRegistry } from './registry.js';
import type { Subagents } from './subagents.js';
import type { GatewayTool } from './tool-contract.js';
import type { Wakeups } from '../kit/wait-until.js';
import { journalPause } from './event-bus.js';
import type { Watchdog } from './watchdog.js';

export type { WaitResult } from './gateway-queries.js';

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
  protected readonly clock: Clock;
  protected readonly ids: IdGenerator;
  protected readonly lanes: LaneScheduler;
  private readonly outbox: OutboxDispatcher;
  private readonly journal: JournalTail;
  private readonly extensions: Extensions;
  /** Sub-agents: spawning, completion delivery, waits, kills, recovery and archiving. */
  readonly subagents: Subagents;
  /** This gateway among the others on its database: presence, recovery and takeover, aborts, signals (cluster.ts). */
  private readonly cluster: GatewayCluster;
  /** What follows a run's commit, an outbox row's end or an input's drop (aftermath.ts). */
  private readonly aftermath: Aftermath;
  private readonly models: ModelRegistry;
  /** Takes the config's secrets out of a text; made again when a reload brings new ones. */
  redact: (text: string) => string;
  private readonly log: NonNullable<GatewayDeps['log']>;
  private readonly watchdog: Watchdog;
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
    this.agents = new AgentRegistry(deps.config);
    this.models = new ModelRegistry(deps.config.models.providers);
    this.redact = redactor(secretsOf(deps.config));
    ({
      journal: this.journal,
      outbox: this.outbox,
      messaging: this.messaging,
      subagents: this.subagents,
      extensions: this.extensions,
      aftermath: this.aftermath,
      lanes: this.lanes,
      cluster: this.cluster,
      watchdog: this.watchdog,
    } = assembleGateway(
      { ...deps, clock: this.clock, ids: this.ids, log: this.log },
      {
        bus: this.bus,
        agents: this.agents,
        models: this.models,
        wakeups: this.wakeups,
        accept: (input) => this.accept(input),
        journalEvent: (event) => this.journalEvent(event),
        enqueueDelivery: (row) => this.enqueueDelivery(row),
        onInputDropped: (inputId, journal) => this.onInputDropped(inputId, journal),
        openSession: (sessionKey, agentId) => this.openSession(sessionKey, agentId),
        validateMessage: (message) => this.validateMessage(message),
        abortRun: (runId, reason) => this.abortRun(runId, reason),
        toolNames: async (sessionKey) => (await this.toolsOf(sessionKey)).map((tool) => tool.name),
        redact: (text) => this.redact(text),
        isStopping: () => this.stopped,
        api: () => this,
      },
    ));
  }

  protected toolsFor(agentId: string): Promise<readonly GatewayTool[]> {
    return this.extensions.toolsFor(agentId);
  }

  /** Recovers what a previous process left behind, then starts scheduling. */
  static async start(deps: GatewayDeps): Promise<Gateway> {
    // Every gateway on the database signs sub-agent handles with one secret: a handle made on one works on all.
    const secret = await deps.store.gateways.sharedSecret(
      'subagent-handles',
      deps.capabilitySecret ?? randomBytes(32).toString('base64url'),
    );
    const gateway = new Gateway({ ...deps, capabilitySecret: secret });
    await gateway.cluster.start();
    await gateway.journal.init();
    // Other gateways on a shared database commit events nothing here kicks for.
    gateway.journal.poll(JOURNAL_POLL_MS);
    await gateway.cluster.recovery.atStart();
    await gateway.outbox.start();
    await gateway.extensions.start();
    gateway.cluster.recovery.startSweeps();
    gateway.watchdog.start(deps.config.watchdog.intervalMs);
    gateway.started = true;
    return gateway;
  }

  /** Its control API listens at `url`: the other gateways' `status` shows it. */
  listening(url: string): Promise<void> {
    return this.cluster.listening(url);
  }

  /** Every gateway on this database (this one included): alive or gone, its heartbeat, the sessions it holds, its lag. */
  gateways(): Promise<GatewayView[]> {
    return this.cluster.gateways();
  }

  /** What the start's recovery found. */
  get lastRecovery(): RecoveryReport {
    return this.cluster.lastRecovery;
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

  /** After an input was dropped (by recovery or a cancel): journalled, and its exchange told (aftermath.ts). */
  protected onInputDropped(inputId: string, journal = true): Promise<void> {
    return this.aftermath.inputDropped(inputId, journal);
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

  kickDeliveries(): void {
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

  /** A front's own event in the journal (the A2A server's refusals), published at once. */
  async recordEvent(event: NewEvent): Promise<void> {
    await this.journalEvent(event);
  }

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
      journalSeq: this.journal.publishedSeq,
      agents: this.agents.list().map((agent) => agent.config.id),
      lanes: this.lanes.stats(),
      activeRuns: this.lanes.activeRuns().map((slot) => ({ sessionKey: slot.sessionKey, runId: slot.runId ?? null })),
      stalledLanes: this.watchdog.lastStalls,
      lastRecovery: this.lastRecovery,
      takenOver: { ...this.cluster.recovery.takenOver },
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
    this.watchdog.stop();
    for (const wake of this.waiters) wake();
    // Asked first, so no extension starts new work; waited for after the runs are stopped, since work under way may
    // be waiting for a run.
    const extensionsStopped = this.extensions.stop((error) => this.log('warn', `an extension failed to stop: ${errorMessage(error)}`));
    await this.lanes.stop('shutdown');
    await extensionsStopped;
    await this.outbox.stop();
    await this.cluster.stop();
    await this.journal.kick();
    this.journal.stop();
    await this.cluster.stopped();
  }

  protected publishedSeq(): number {
    return this.journal.publishedSeq;
  }
}
