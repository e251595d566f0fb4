/**
 * The gateway: its life (start, ready, reload, stop) and the door (src/ports/gateway.ts) it opens to the fronts. The
 * door's roles are objects of their own (door/gateway-intake.ts, gateway-queries.ts, gateway-control.ts), built with the
 * gateway's working parts in gateway-assembly.ts; the Gateway holds them and answers for them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { SwitchboardConfig } from '../config/schema.js';
import { redactor, secretsOf } from '../config/secrets.js';
import { applyReload, describeReload, planReload, type ConfigReload } from '../config/reload.js';
import { errorMessage, SwitchboardError } from '../core/errors.js';
import type { Wakeups } from '../kit/wait-until.js';
import type {
  Control,
  Gates,
  GatewayApi,
  GatewayStatus,
  GatewayView,
  Intake,
  LiveListener,
  OutboxHandler,
  Queries,
  Spawns,
  Waits,
} from '../ports/gateway.js';
import type { Models } from '../ports/models.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  InputRecord,
  NewEvent,
  NewInput,
  NewOutboxRow,
  RecoveryReport,
  Store,
} from '../ports/index.js';
import type { Aftermath } from './runs/aftermath.js';
import type { GatewayCluster } from './durability/cluster.js';
import { EventBus, journalPause } from './events/event-bus.js';
import type { Extensions } from './extensions.js';
import { assembleGateway } from './gateway-assembly.js';
import { GatewayControl } from './door/gateway-control.js';
import { GatewayIntake } from './door/gateway-intake.js';
import { GatewayQueries } from './door/gateway-queries.js';
import type { GatewayGates } from './gates/gates.js';
import type { GatewayDeps } from './gateway-types.js';
import type { JournalTail } from './events/journal-tail.js';
import type { LaneScheduler } from './runs/lanes.js';
import type { AgentMessaging } from './messaging/messaging.js';
import { OfferedTools } from './tooling/offered-tools.js';
import type { OutboxDispatcher } from './durability/outbox.js';
import { AgentRegistry } from './agents/registry.js';
import type { Subagents } from './subagents/subagents.js';
import type { Watchdog } from './durability/watchdog.js';
import type { WaitingRuns } from './runs/waiting-runs.js';

export type { GatewayDeps } from './gateway-types.js';

export const systemClock: Clock = { now: () => Date.now() };
export const uuidIds: IdGenerator = { next: () => randomUUID() };

/** The backstop: other gateways' events come sooner by their signal (LISTEN/NOTIFY). */
const JOURNAL_POLL_MS = 1000;

export class Gateway implements GatewayApi {
  readonly config: SwitchboardConfig;
  readonly store: Store;
  readonly agents: AgentRegistry;
  /** Agent-to-agent messaging: the session tools and `send --from` go through it. */
  readonly messaging: AgentMessaging;
  readonly bus = new EventBus();
  readonly gatewayId: string;
  readonly startedAt: number;
  /** The door's roles (src/ports/gateway.ts), each an object of its own. */
  readonly intake: GatewayIntake;
  readonly queries: GatewayQueries;
  readonly control: GatewayControl;
  private readonly offered: OfferedTools;
  private readonly clock: Clock;
  private readonly ids: IdGenerator;
  private readonly lanes: LaneScheduler;
  private readonly outbox: OutboxDispatcher;
  private readonly journal: JournalTail;
  private readonly extensions: Extensions;
  /** Sub-agents: spawning, completion delivery, waits, kills, recovery and archiving. */
  readonly subagents: Subagents;
  /** This gateway among the others on its database: presence, recovery and takeover, aborts, signals (cluster.ts). */
  private readonly cluster: GatewayCluster;
  /** What follows a run's commit, an outbox row's end or an input's drop (aftermath.ts). */
  private readonly aftermath: Aftermath;
  private readonly models: Models;
  /** Takes the config's secrets out of a text; made again when a reload brings new ones. */
  redact: (text: string) => string;
  private readonly log: NonNullable<GatewayDeps['log']>;
  private readonly watchdog: Watchdog;
  private readonly waitingRuns: WaitingRuns;
  /** Approval requests and budgets (gates/gates.ts). */
  readonly gates: GatewayGates;
  private stopped = false;
  private started = false;
  private readonly waiters = new Set<() => void>();
  /** What every wait sleeps on: journal events, the clock and the gateway stopping. */
  private readonly wakeups: Wakeups = {
    clock: { now: () => this.clock.now() },
    pause: journalPause(this.bus, this.waiters, () => this.stopped),
    stopping: () => this.stopped,
  };

  private constructor(deps: GatewayDeps) {
    this.config = deps.config;
    this.store = deps.store;
    this.gatewayId = deps.gatewayId;
    this.clock = deps.clock ?? systemClock;
    this.ids = deps.ids ?? uuidIds;
    this.log = deps.log ?? (() => {});
    this.startedAt = this.clock.now();
    this.agents = new AgentRegistry(deps.config);
    this.models = deps.models;
    this.redact = redactor(secretsOf(deps.config));
    const offered = (this.offered = new OfferedTools({
      config: this.config,
      store: this.store,
      agents: this.agents,
      toolsFor: (agentId) => this.extensions.toolsFor(agentId),
    }));
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
      waitingRuns: this.waitingRuns,
      gates: this.gates,
    } = assembleGateway(
      { ...deps, clock: this.clock, ids: this.ids, log: this.log },
      {
        bus: this.bus,
        agents: this.agents,
        models: this.models,
        wakeups: this.wakeups,
        accept: (input) => this.enqueue(input),
        journalEvent: (event) => this.journalEvent(event),
        enqueueDelivery: (row) => this.enqueueDelivery(row),
        onInputDropped: (inputId, journal) => this.aftermath.inputDropped(inputId, journal),
        openSession: (sessionKey, agentId) => this.intake.openSession(sessionKey, agentId),
        validateMessage: (message) => this.intake.validateMessage(message),
        abortRun: (runId, reason) => this.control.abortRun(runId, reason),
        toolNames: async (sessionKey) => (await offered.toolsOf(sessionKey)).map((tool) => tool.name),
        redact: (text) => this.redact(text),
        isStopping: () => this.stopped,
        api: () => this,
      },
    ));
    const parts = { config: this.config, store: this.store, agents: this.agents, clock: this.clock };
    this.intake = new GatewayIntake({
      ...parts,
      ids: this.ids,
      lanes: this.lanes,
      messaging: this.messaging,
      offered,
      stopping: () => this.stopped,
      journalEvent: (event) => this.journalEvent(event),
    });
    this.queries = new GatewayQueries({ ...parts, subagents: this.subagents, offered, publishedSeq: () => this.journal.publishedSeq });
    this.control = new GatewayControl({
      ...parts,
      ids: this.ids,
      gatewayId: this.gatewayId,
      bus: this.bus,
      wakeups: this.wakeups,
      lanes: this.lanes,
      outbox: this.outbox,
      subagents: this.subagents,
      journalEvent: (event) => this.journalEvent(event),
      onInputDropped: (inputId, journal) => this.aftermath.inputDropped(inputId, journal),
      reloadConfig: (next) => this.reloadConfig(next),
    });
  }

  // The door, role by role: each call answered by the object that has that job.
  readonly send: Intake['send'] = (request) => this.intake.send(request);
  readonly sendAs: Intake['sendAs'] = (from, request) => this.intake.sendAs(from, request);
  readonly accept: Intake['accept'] = (input, opening) => this.intake.accept(input, opening);
  readonly waitForInput: Waits['waitForInput'] = (inputId, timeoutMs, fresh) => this.control.waitForInput(inputId, timeoutMs, fresh);
  readonly inputOutcome: Waits['inputOutcome'] = (inputId) => this.control.inputOutcome(inputId);
  readonly inputRunId: Waits['inputRunId'] = (inputId) => this.control.inputRunId(inputId);
  readonly durable: Waits['durable'] = () => this.control.durable();
  readonly resolveId: Queries['resolveId'] = (kind, given) => this.queries.resolveId(kind, given);
  readonly listSessions: Queries['listSessions'] = (filter) => this.queries.listSessions(filter);
  readonly describeSession: Queries['describeSession'] = (key) => this.queries.describeSession(key);
  readonly history: Queries['history'] = (key, limit) => this.queries.history(key, limit);
  readonly journalAfter: Queries['journalAfter'] = (afterSeq, filter) => this.queries.journalAfter(afterSeq, filter);
  readonly listRuns: Queries['listRuns'] = (filter) => this.queries.listRuns(filter);
  readonly getRun: Queries['getRun'] = (runId) => this.queries.getRun(runId);
  readonly runStatus: Queries['runStatus'] = (runId) => this.queries.runStatus(runId);
  readonly runCompletions: Queries['runCompletions'] = (runId) => this.queries.runCompletions(runId);
  readonly runToolCalls: Queries['runToolCalls'] = (run) => this.queries.runToolCalls(run);
  readonly runSteps: Queries['runSteps'] = (run) => this.queries.runSteps(run);
  readonly listExchanges: Queries['listExchanges'] = (filter) => this.queries.listExchanges(filter);
  readonly getExchange: Queries['getExchange'] = (id) => this.queries.getExchange(id);
  readonly listSubagents: Queries['listSubagents'] = (sessionKey, recursive) => this.queries.listSubagents(sessionKey, recursive);
  readonly getSubagent: Queries['getSubagent'] = (target) => this.queries.getSubagent(target);
  readonly offeredToolNames: Queries['offeredToolNames'] = (sessionKey) => this.queries.offeredToolNames(sessionKey);
  readonly listOutbox: Queries['listOutbox'] = (filter) => this.queries.listOutbox(filter);
  readonly outboxBacklog: Queries['outboxBacklog'] = () => this.queries.outboxBacklog();
  readonly usageSince: Queries['usageSince'] = (since) => this.queries.usageSince(since);
  readonly usageByTime: Queries['usageByTime'] = (since, bucketMs) => this.queries.usageByTime(since, bucketMs);
  readonly inputQueues: Queries['inputQueues'] = () => this.queries.inputQueues();
  readonly traceView: Queries['traceView'] = (of) => this.queries.traceView(of);
  readonly collaborationLinks: Queries['collaborationLinks'] = (window) => this.queries.collaborationLinks(window);
  readonly messagePath: Queries['messagePath'] = (inputId) => this.queries.messagePath(inputId);
  readonly annotateSession: Control['annotateSession'] = (key, change) => this.control.annotateSession(key, change);
  readonly cancelInput: Control['cancelInput'] = (inputId, why) => this.control.cancelInput(inputId, why);
  readonly cancelRun: Control['cancelRun'] = (runId) => this.control.cancelRun(runId);
  readonly forkRun: Control['forkRun'] = (runId, step) => this.control.forkRun(runId, step);
  readonly killSubagent: Control['killSubagent'] = (target, why) => this.control.killSubagent(target, why);
  readonly settleDeadOutbox: Control['settleDeadOutbox'] = (id, action) => this.control.settleDeadOutbox(id, action);
  readonly backupStore: Control['backupStore'] = (path) => this.control.backupStore(path);
  readonly listApprovals: Gates['listApprovals'] = (filter) => this.gates.listApprovals(filter);
  readonly getApproval: Gates['getApproval'] = (id) => this.gates.getApproval(id);
  readonly pendingApprovals: Gates['pendingApprovals'] = () => this.gates.pendingApprovals();
  readonly decideApproval: Gates['decideApproval'] = (id, decision) => this.gates.decideApproval(id, decision);
  readonly budgetStatus: Gates['budgetStatus'] = () => this.gates.budgetStatus();

  readonly spawnAs: Spawns['spawnAs'] = async (from, request) => {
    // The spawner session meets the checks its own sessions_spawn would: the tool policy first, then the spawn's.
    const { sessionKey, agent } = this.agents.resolveTarget(from);
    const refused = (await this.offered.offeredToolsOf(sessionKey)).refusedTools.find((tool) => tool.name === 'sessions_spawn');
    if (refused) throw new SwitchboardError('TOOL_DENIED', refused.refusal.error, { layer: 'tool' });
    await this.intake.openSession(sessionKey, agent.config.id);
    return this.subagents.spawn({ sessionKey, agentId: agent.config.id, idempotencyKey: request.correlationId }, request);
  };
  readonly waitSubagent: Spawns['waitSubagent'] = async (target, timeoutMs, signal) => {
    const record = await this.subagents.find(target);
    const outcome = await this.subagents.wait([record], { mode: 'all', timeoutMs, signal });
    const { resultPreview: _preview, ...view } = outcome.children[0];
    const settled = outcome.status === 'timeout' ? undefined : await this.store.subagents.get(record.id);
    return { status: outcome.status, view, result: settled?.result ?? null };
  };

  // Beside the door, for the composition root and tests: a session's tools, a session, one opened.
  readonly toolsOf = (sessionKey: string) => this.offered.toolsOf(sessionKey);
  readonly getSession = (key: string) => this.queries.getSession(key);
  readonly openSession = (sessionKey: string, agentId: string) => this.intake.openSession(sessionKey, agentId);

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
    await gateway.waitingRuns.start();
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

  private async journalEvent(event: NewEvent): Promise<EventRecord> {
    const record = await this.store.events.append(event, this.clock.now());
    await this.journal.kick();
    return record;
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

  /** Stores an input produced inside the gateway (a completion, an exchange's step, a held result) and wakes its session. */
  private async enqueue(input: NewInput): Promise<InputRecord> {
    const { input: stored, created } = await this.store.inputs.enqueue(input, this.clock.now());
    if (created) this.lanes.wake(stored.sessionKey);
    return stored;
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
      waitingRuns: this.waitingRuns.count,
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

  /** Takes a new config's reloadable sections (config/reload.ts); the rest waits for a restart and is named. */
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
    this.waitingRuns.stop();
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
}
