/**
 * The gateway's working parts and how they are wired: to each other (the outbox hands rows to the exchange flow and the
 * sub-agents, a run's commit goes to the aftermath, the journal asks the cluster) and back to the gateway (`host`: its
 * accept, journal and policy checks). The gateway (gateway.ts) holds the parts and is the one door; this is only how
 * they are put together. Parts built later are reached through closures, so the order here is the order of need.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { COMPLETION_KIND } from '../core/subagent.js';
import type { Models } from '../ports/models.js';
import type { EventRecord, InputRecord, NewEvent, NewInput, NewOutboxRow, SessionRecord } from '../ports/index.js';
import { Aftermath } from './runs/aftermath.js';
import { GatewayCluster } from './durability/cluster.js';
import { PromptFileCache } from './runs/context.js';
import type { EventBus } from './events/event-bus.js';
import { EXCHANGE_STEP_KIND, ExchangeFlow } from './messaging/exchanges.js';
import { Extensions } from './extensions.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { GatewayDeps, GatewayParts } from './gateway-types.js';
import { HeldResults } from './runs/held-results.js';
import { JournalTail } from './events/journal-tail.js';
import { LaneScheduler, laneOptions } from './runs/lanes.js';
import { WaitingRuns } from './runs/waiting-runs.js';
import { AgentMessaging } from './messaging/messaging.js';
import { SessionDirectory } from './messaging/session-directory.js';
import { OutboxDispatcher } from './durability/outbox.js';
import type { AgentRegistry } from './agents/registry.js';
import { createSessionRunner } from './runs/session-runner.js';
import { SubagentControl } from './subagents/subagent-control.js';
import { SubagentLifecycle } from './subagents/subagent-lifecycle.js';
import { SubagentQueries } from './subagents/subagent-queries.js';
import { SubagentSpawner } from './subagents/subagent-spawn.js';
import type { SubagentDeps } from './subagents/subagent-types.js';
import { Subagents } from './subagents/subagents.js';
import type { Wakeups } from '../kit/wait-until.js';
import { NO_TRACING } from '../kit/trace-context.js';
import { Watchdog } from './durability/watchdog.js';
import { GatewayGates } from './gates/gates.js';

/** What the parts call back into the gateway for. */
export interface AssemblyHost {
  readonly bus: EventBus;
  readonly agents: AgentRegistry;
  readonly models: Models;
  readonly wakeups: Wakeups;
  accept(input: NewInput): Promise<InputRecord>;
  journalEvent(event: NewEvent): Promise<EventRecord>;
  enqueueDelivery(row: NewOutboxRow): Promise<void>;
  onInputDropped(inputId: string, journal?: boolean): Promise<void>;
  openSession(sessionKey: string, agentId: string): Promise<SessionRecord>;
  validateMessage(message: unknown): string;
  abortRun(runId: string, reason: 'cancel' | 'interrupt'): Promise<boolean>;
  /** The names of the tools a session's agent is offered. */
  toolNames(sessionKey: string): Promise<string[]>;
  redact(text: string): string;
  isStopping(): boolean;
  api(): GatewayApi;
}

export interface GatewayAssembly {
  journal: JournalTail;
  outbox: OutboxDispatcher;
  messaging: AgentMessaging;
  subagents: Subagents;
  extensions: Extensions;
  aftermath: Aftermath;
  lanes: LaneScheduler;
  cluster: GatewayCluster;
  watchdog: Watchdog;
  waitingRuns: WaitingRuns;
  gates: GatewayGates;
}

export function assembleGateway(deps: GatewayDeps, host: AssemblyHost): GatewayAssembly {
  const { config, store, gatewayId } = deps;
  const clock = deps.clock!;
  const ids = deps.ids!;
  const log = deps.log ?? (() => {});
  // How long a run's lease holds without renewal.
  const leaseTtlMs = config.lanes.leaseTtlSeconds * 1000;
  // Built further down; the closures that reach them run only once the gateway is up.
  let lanes!: LaneScheduler;
  let cluster!: GatewayCluster;
  let aftermath!: Aftermath;

  const journal = new JournalTail(
    store,
    host.bus,
    (error) => log('error', `journal: ${errorMessage(error)}`),
    () => cluster.announce(),
    () => cluster.shared,
  );
  const outbox = new OutboxDispatcher(
    store,
    clock,
    { ...config.outbox, owner: gatewayId, tracing: deps.tracing },
    (row, outcome, error) => aftermath.outboxSettled(row, outcome, error),
    (error) => log('error', `outbox: ${errorMessage(error)}`),
    (message, fields) => log('warn', message, fields),
  );
  const exchanges = new ExchangeFlow({
    store,
    clock,
    ids,
    accept: (input) => host.accept(input),
    published: (events) => journal.committed(events),
  });
  outbox.register(EXCHANGE_STEP_KIND, (row) => exchanges.onStep(row));
  const directory = new SessionDirectory({
    config,
    store,
    agents: host.agents,
    clock,
    isBusy: (sessionKey) => lanes.isBusy(sessionKey),
  });
  const messaging = new AgentMessaging({
    config,
    store,
    agents: host.agents,
    clock,
    ids,
    directory,
    openSession: (sessionKey, agentId) => host.openSession(sessionKey, agentId),
    wake: (sessionKey) => lanes.wake(sessionKey),
    wakeups: host.wakeups,
    isStopping: () => host.isStopping(),
    validateMessage: (message) => host.validateMessage(message),
    flow: exchanges,
  });
  const subagentDeps: SubagentDeps = {
    config,
    store,
    agents: host.agents,
    clock,
    ids,
    secret: deps.capabilitySecret ?? randomBytes(32).toString('base64url'),
    worktreeRoot: deps.dataDir ? join(deps.dataDir, 'worktrees') : undefined,
    accept: (input) => host.accept(input),
    wake: (sessionKey) => lanes.wake(sessionKey),
    abortRun: (runId) => host.abortRun(runId, 'cancel'),
    toolNames: (sessionKey) => host.toolNames(sessionKey),
    checkModel: (model) => void host.models.resolve(model),
    validateMessage: (message) => host.validateMessage(message),
    wakeups: host.wakeups,
    isStopping: () => host.isStopping(),
    journal: (event) => host.journalEvent(event),
    afterWrite: () => {
      void journal.kick();
      outbox.kick();
    },
    log: (message) => log('warn', message),
  };
  const subagentQueries = new SubagentQueries(subagentDeps);
  const subagentLifecycle = new SubagentLifecycle(subagentDeps, subagentQueries);
  const subagents = new Subagents({
    spawner: new SubagentSpawner(subagentDeps),
    queries: subagentQueries,
    control: new SubagentControl(subagentDeps, subagentLifecycle),
    lifecycle: subagentLifecycle,
  });
  outbox.register(COMPLETION_KIND, (row) => subagentLifecycle.deliverCompletion(row));
  const parts: GatewayParts = {
    config,
    store,
    clock,
    messaging,
    subagents,
    accept: (input) => host.accept(input),
    enqueueDelivery: (row) => host.enqueueDelivery(row),
    log: (message) => log('warn', message),
    gatewayId,
    dataDir: deps.dataDir,
    api: () => host.api(),
  };
  const extensions = new Extensions(deps.extensions?.(parts) ?? []);
  extensions.registerDeliveries(outbox);
  const heldResults = new HeldResults({ store, newId: () => ids.next(), accept: (input) => host.accept(input) }, [
    exchanges,
    ...extensions.heldResults,
  ]);
  aftermath = new Aftermath({
    store,
    ids,
    heldResults,
    subagents: subagentLifecycle,
    journalEvent: (event) => host.journalEvent(event),
    enqueueDelivery: (row) => host.enqueueDelivery(row),
    log,
  });
  const waitingRuns = new WaitingRuns({
    store: store.runs,
    bus: host.bus,
    clock,
    wake: (sessionKey) => lanes.wake(sessionKey),
    gone: () => cluster.gone,
    log,
  });
  const gates = new GatewayGates({
    config,
    approvals: store.approvals,
    budgets: store.budgets,
    clock,
    wakeups: host.wakeups,
    published: (events) => journal.committed(events),
    toolsFor: (agentId) => extensions.toolsFor(agentId),
  });
  const runner = createSessionRunner({
    config,
    store,
    clock,
    ids,
    owner: gatewayId,
    leaseTtlMs,
    agents: host.agents,
    models: host.models,
    toolsFor: (agentId) => extensions.toolsFor(agentId),
    promptFiles: new PromptFileCache(),
    bus: host.bus,
    toolLedger: !deps.withoutToolLedger,
    tracing: deps.tracing ?? NO_TRACING,
    afterCommit: (wroteOutbox, events) => {
      if (events) journal.committed(events);
      else void journal.kick();
      if (wroteOutbox) outbox.kick();
    },
    onCommitted: (run) => aftermath.runCommitted(run),
    onDropped: (inputId) => host.onInputDropped(inputId, false),
    redact: (text) => host.redact(text),
    writeRefusal: (agentId, path) => extensions.writeRefusal(agentId, path),
    replyDelivery: (channel) => (outbox.handles(`reply:${channel}`) ? `reply:${channel}` : undefined),
    runtimes: () => extensions.runtimes,
    journal: (event) => host.journalEvent(event),
    waiting: waitingRuns,
    approvals: { config, store: store.approvals, clock, wakeups: host.wakeups, published: (events) => journal.committed(events) },
    budgets: {
      config,
      store: store.budgets,
      clock,
      journal: (event) => host.journalEvent(event),
      askToRaise: (run, refused, wanted) => gates.askToRaise(run, refused, wanted),
      newId: () => ids.next(),
    },
    askApproval: (run, question) => gates.askFor(run, question),
    log,
  });
  lanes = new LaneScheduler(
    store,
    clock,
    laneOptions(config, gatewayId, leaseTtlMs),
    runner,
    (error, sessionKey) => log('error', `lane ${sessionKey}: ${error instanceof Error ? error.stack : String(error)}`),
    () => void journal.kick(),
    (sessionKey) => cluster.interruptElsewhere(sessionKey),
  );
  cluster = new GatewayCluster({
    store,
    clock,
    gatewayId,
    leaseTtlMs,
    version: deps.version ?? 'unknown',
    maxRetries: () => config.recovery.retryInterrupted,
    lanes,
    bus: host.bus,
    heldResults,
    recoverSubagents: () => subagentLifecycle.recover(),
    onInputDropped: (inputId) => host.onInputDropped(inputId),
    afterRecovery: extensions.afterRecovery,
    journal,
    journalEvent: (event) => host.journalEvent(event),
    log,
  });
  const watchdog = new Watchdog({ lanes, subagents: subagentLifecycle, journalEvent: (event) => host.journalEvent(event), log });
  return { journal, outbox, messaging, subagents, extensions, aftermath, lanes, cluster, watchdog, waitingRuns, gates };
}
