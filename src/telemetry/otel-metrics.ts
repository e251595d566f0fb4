/**
 * Metrics for a Prometheus scrape with the OpenTelemetry JS SDK. Loaded only when `telemetry.metrics.enabled` is on.
 * Counters come from the spans the gateway reports (a run ended, a model call, a tool call, a delivery), whether or not
 * traces are exported; gauges are read from the gateway and the store when Prometheus scrapes. docs/observability.md
 * lists every metric.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import type { BudgetView, GatewayStatus } from '../ports/gateway.js';
import type { SpanAttributes } from '../ports/telemetry.js';

/** What the gauges read at each scrape (the composition root hands these over once the gateway runs). */
export interface MetricSources {
  status(): GatewayStatus;
  outboxBacklog(): Promise<{ pending: number; dead: number }>;
  pendingApprovals(): Promise<number>;
  budgetStatus(): Promise<BudgetView[]>;
  /** Sessions with queued inputs, and when the oldest of each was queued. */
  queuedSessions(): Promise<{ key: string; oldestQueuedAt: number }[]>;
  /** A2A tasks served here, by state; absent when the A2A server is off. */
  a2aTasks?: (state: string) => Promise<number>;
  now(): number;
}

export interface MetricsOptions {
  /** A listener of its own for /metrics (telemetry.metrics.listen); absent: served through `handle` on the control port. */
  listen?: { host: string; port: number };
  serviceName: string;
  serviceVersion?: string;
  gatewayId: string;
  /** Spans the trace exporter dropped, when traces are on. */
  droppedSpans?: () => number;
  /** A store read a scrape could not make: the gateway's log. */
  warn?: (message: string) => void;
}

/** How long a scrape waits for one store read before it leaves that read's gauges out. */
const READ_TIMEOUT_MS = 5000;

/** The A2A task states counted (the v1.0 protocol's, as the task store keeps them). */
const A2A_STATES = ['submitted', 'working', 'input-required', 'auth-required', 'completed', 'failed', 'canceled', 'rejected'];

export class OtelMetrics {
  private readonly exporter: PrometheusExporter;
  private readonly provider: MeterProvider;
  private readonly meter: Meter;
  private readonly runs: Counter;
  private readonly modelCalls: Counter;
  private readonly tokens: Counter;
  private readonly cost: Counter;
  private readonly toolCalls: Counter;
  private readonly deliveries: Counter;
  private readonly operationDuration: Histogram;
  private readonly tokenUsage: Histogram;
  /** Store reads failing now, by what they read. */
  private readonly failing = new Set<string>();

  constructor(private readonly options: MetricsOptions) {
    // Its own listener, when there is one, is started by `start`, so that a port in use stops the gateway's start.
    this.exporter = new PrometheusExporter({ ...options.listen, preventServerStart: true });
    this.provider = new MeterProvider({
      resource: resourceFromAttributes({
        'service.name': options.serviceName,
        ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
        'service.instance.id': options.gatewayId,
      }),
      readers: [this.exporter],
    });
    const meter = this.provider.getMeter('switchboard', options.serviceVersion);
    this.meter = meter;
    this.runs = meter.createCounter('switchboard.runs', { description: 'Runs ended on this gateway, by agent and status' });
    this.modelCalls = meter.createCounter('switchboard.model.calls', { description: 'Model calls made, by agent and model' });
    this.tokens = meter.createCounter('switchboard.tokens', { description: 'Tokens used, by agent, model and type (input, output)' });
    this.cost = meter.createCounter('switchboard.cost', {
      description: 'Cost in US dollars (models.prices), by agent and model',
      unit: 'USD',
    });
    this.toolCalls = meter.createCounter('switchboard.tool.calls', { description: 'Tool calls run, by tool and outcome' });
    this.deliveries = meter.createCounter('switchboard.deliveries', { description: 'Outbox delivery attempts, by kind and outcome' });
    // The bucket boundaries the GenAI semantic conventions advise.
    this.operationDuration = meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92] },
    });
    this.tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Measures number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864] },
    });
  }

  /** A span ended: the counters it feeds. */
  spanEnded(attributes: SpanAttributes, seconds: number, error: string | undefined): void {
    const operation = attributes['gen_ai.operation.name'];
    const outcome = error === undefined ? 'ok' : 'error';
    const agent = String(attributes['gen_ai.agent.id'] ?? '');
    if (operation === 'invoke_agent') {
      this.runs.add(1, { agent, status: String(attributes['switchboard.run.status'] ?? 'unknown') });
    } else if (operation === 'chat') {
      const model = `${attributes['gen_ai.provider.name']}/${attributes['gen_ai.request.model']}`;
      this.modelCalls.add(1, { agent, model, outcome });
      const genai = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': String(attributes['gen_ai.provider.name']),
        'gen_ai.request.model': String(attributes['gen_ai.request.model']),
      };
      this.operationDuration.record(seconds, error === undefined ? genai : { ...genai, 'error.type': 'error' });
      for (const type of ['input', 'output'] as const) {
        const count = attributes[`gen_ai.usage.${type}_tokens`];
        if (typeof count !== 'number') continue;
        this.tokens.add(count, { agent, model, type });
        this.tokenUsage.record(count, { ...genai, 'gen_ai.token.type': type });
      }
      const cost = attributes['switchboard.cost_usd'];
      if (typeof cost === 'number') this.cost.add(cost, { agent, model });
    } else if (operation === 'execute_tool') {
      this.toolCalls.add(1, { tool: String(attributes['gen_ai.tool.name']), outcome });
    } else if (attributes['switchboard.outbox.kind'] !== undefined) {
      this.deliveries.add(1, { kind: String(attributes['switchboard.outbox.kind']), outcome });
    }
  }

  /** The gauges, read at each scrape. */
  attach(sources: MetricSources): void {
    const meter = this.meter;
    const laneActive = meter.createObservableGauge('switchboard.lane.active', { description: 'Runs in each lane now' });
    const laneWaiting = meter.createObservableGauge('switchboard.lane.waiting', {
      description: 'Sessions waiting for a slot in each lane',
    });
    const runsWaiting = meter.createObservableGauge('switchboard.runs.suspended', {
      description: 'Runs suspended in durable waits, as this gateway listens for them',
    });
    const queueAge = meter.createObservableGauge('switchboard.input.queue.age', {
      description: 'Age of the oldest queued input',
      unit: 's',
    });
    const queued = meter.createObservableGauge('switchboard.input.queued.sessions', { description: 'Sessions with queued inputs' });
    const backlog = meter.createObservableGauge('switchboard.outbox.backlog', { description: 'Outbox rows pending delivery' });
    const dead = meter.createObservableGauge('switchboard.outbox.dead', { description: 'Outbox rows given up (dead letters)' });
    const takeovers = meter.createObservableCounter('switchboard.lease.takeovers', {
      description: 'Runs this gateway recovered after their leases expired',
    });
    const approvals = meter.createObservableGauge('switchboard.approvals.waiting', {
      description: 'Approval requests waiting for an answer',
    });
    const spent = meter.createObservableGauge('switchboard.budget.spent', {
      description: 'Spend on the budget caps a config key sets, summed over their keys (tokens, or USD)',
    });
    const limit = meter.createObservableGauge('switchboard.budget.limit', {
      description: 'The cap a budget config key sets (tokens, or USD)',
    });
    const budgetKeys = meter.createObservableGauge('switchboard.budget.keys', {
      description: 'Budget keys with spend or reservations under a config key (a key per agent and day, session, tree...)',
    });
    const a2a = meter.createObservableGauge('switchboard.a2a.tasks', { description: 'A2A tasks served here, by state' });
    const dropped = meter.createObservableCounter('switchboard.telemetry.spans.dropped', {
      description: 'Spans not sent: the collector was down or slow, or the queue was full',
    });
    // What this process knows: never waits, never fails.
    meter.addBatchObservableCallback(
      (result) => {
        const status = sources.status();
        for (const [lane, figures] of Object.entries(status.lanes)) {
          result.observe(laneActive, figures.active, { lane });
          result.observe(laneWaiting, figures.waiting, { lane });
        }
        result.observe(runsWaiting, status.waitingRuns);
        result.observe(takeovers, status.takenOver.runs);
        result.observe(dropped, this.options.droppedSpans?.() ?? 0);
      },
      [laneActive, laneWaiting, runsWaiting, takeovers, dropped],
    );
    // What the store knows: each read on its own, so a store that fails or is slow costs its own gauges only (they are
    // left out of that scrape, and the failure is logged once until a read succeeds again).
    const read = <T>(what: string, query: () => Promise<T>) => this.guarded(what, query);
    meter.addBatchObservableCallback(
      async (result) => {
        const outbox = await read('outbox backlog', () => sources.outboxBacklog());
        if (outbox) {
          result.observe(backlog, outbox.pending);
          result.observe(dead, outbox.dead);
        }
      },
      [backlog, dead],
    );
    approvals.addCallback(async (result) => {
      const pending = await read('approvals waiting', () => sources.pendingApprovals());
      if (pending !== undefined) result.observe(pending);
    });
    meter.addBatchObservableCallback(
      async (result) => {
        const sessions = await read('queued inputs', () => sources.queuedSessions());
        if (!sessions) return;
        const oldest = sessions.reduce((min, session) => Math.min(min, session.oldestQueuedAt), Number.POSITIVE_INFINITY);
        result.observe(queueAge, Number.isFinite(oldest) ? Math.max(0, sources.now() - oldest) / 1000 : 0);
        result.observe(queued, sessions.length);
      },
      [queueAge, queued],
    );
    // By the config key that sets each cap, summed over its keys (a key per session, per day...): one series per
    // configured cap, however many sessions and days there are.
    meter.addBatchObservableCallback(
      async (result) => {
        const budgets = await read('budgets', () => sources.budgetStatus());
        if (!budgets) return;
        const bySource = new Map<string, { tokens: number; micros: number; keys: number; limit: BudgetView['limit'] }>();
        for (const budget of budgets) {
          const sum = bySource.get(budget.source) ?? { tokens: 0, micros: 0, keys: 0, limit: budget.limit };
          sum.tokens += budget.spent.tokens;
          sum.micros += budget.spent.costMicros;
          sum.keys += 1;
          bySource.set(budget.source, sum);
        }
        for (const [source, sum] of bySource) {
          result.observe(spent, sum.tokens, { source, unit: 'tokens' });
          result.observe(spent, sum.micros / 1_000_000, { source, unit: 'usd' });
          result.observe(budgetKeys, sum.keys, { source });
          if (sum.limit.tokens !== undefined) result.observe(limit, sum.limit.tokens, { source, unit: 'tokens' });
          if (sum.limit.costMicros !== undefined) result.observe(limit, sum.limit.costMicros / 1_000_000, { source, unit: 'usd' });
        }
      },
      [spent, limit, budgetKeys],
    );
    const a2aTasks = sources.a2aTasks;
    if (a2aTasks)
      a2a.addCallback(async (result) => {
        const counts = await read('A2A tasks', () => Promise.all(A2A_STATES.map(async (state) => [state, await a2aTasks(state)] as const)));
        for (const [state, count] of counts ?? []) result.observe(count, { state });
      });
  }

  /** A store read for a scrape: undefined when it fails or takes longer than READ_TIMEOUT_MS (logged once until it works again). */
  private async guarded<T>(what: string, query: () => Promise<T>): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        query(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer after ${READ_TIMEOUT_MS} ms`)), READ_TIMEOUT_MS);
        }),
      ]);
      this.failing.delete(what);
      return value;
    } catch (error) {
      if (!this.failing.has(what))
        this.options.warn?.(
          `metrics: could not read ${what} from the store for a scrape: ${error instanceof Error ? error.message : String(error)}; its gauges are left out until it answers`,
        );
      this.failing.add(what);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Opens the listener of its own (telemetry.metrics.listen), when there is one. */
  async start(): Promise<void> {
    const listen = this.options.listen;
    if (!listen) return;
    await this.exporter.startServer().catch((error: NodeJS.ErrnoException) => {
      throw new Error(
        `telemetry.metrics.listen: cannot serve metrics on ${listen.host}:${listen.port}: ${error.code === 'EADDRINUSE' ? 'the port is in use' : error.message}`,
      );
    });
  }

  /** GET /metrics on the control port. */
  handle(request: IncomingMessage, response: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(request, response);
  }

  async shutdown(): Promise<void> {
    // The exporter's own listener stops with it.
    await this.provider.shutdown().catch(() => {});
  }
}
