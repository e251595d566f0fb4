/**
 * Telemetry (docs/observability.md): where the spans the gateway reports go. Traces go to an OTLP/HTTP collector when
 * `telemetry.traces` is set; metrics are served for Prometheus when `telemetry.metrics.enabled` is on. Each exporter is
 * imported only when it is on, so a gateway with telemetry off loads none of the OpenTelemetry SDK.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SwitchboardConfig } from '../config/schema.js';
import type { SpanAttributes, SpanStart, TraceContext, TraceSpan, Tracing } from '../ports/telemetry.js';
import { NO_TRACING } from '../kit/trace-context.js';
import type { OtelTraces } from './otel-traces.js';
import type { MetricSources, OtelMetrics } from './otel-metrics.js';

export type { MetricSources };

export interface Telemetry {
  tracing: Tracing;
  /** Serves GET /metrics on the control port; undefined when metrics are off or have a listener of their own. */
  metricsHandler?: (request: IncomingMessage, response: ServerResponse) => void;
  /** Hands the metrics their gauges' sources, once the gateway runs. */
  attach(sources: MetricSources): void;
  /** Spans sent and dropped so far (the exporter's own counts). */
  spans(): { exported: number; dropped: number };
  /** Sends what is queued (for at most a few seconds) and stops. */
  shutdown(): Promise<void>;
}

export interface TelemetryFacts {
  gatewayId: string;
  version?: string;
  warn: (message: string) => void;
  /** Takes the config's secrets out of a text (config/secrets.ts): span errors and captured contents pass through it. */
  redact?: (text: string) => string;
}

const OFF: Telemetry = {
  tracing: NO_TRACING,
  attach: () => {},
  spans: () => ({ exported: 0, dropped: 0 }),
  shutdown: async () => {},
};

/** How long a stopping gateway waits for its last spans to be sent. */
const SHUTDOWN_FLUSH_MS = 3000;

export async function openTelemetry(config: SwitchboardConfig['telemetry'], facts: TelemetryFacts): Promise<Telemetry> {
  const traces = config.traces
    ? new (await import('./otel-traces.js')).OtelTraces({
        ...config.traces,
        serviceName: config.serviceName,
        serviceVersion: facts.version,
        gatewayId: facts.gatewayId,
        warn: facts.warn,
      })
    : undefined;
  const listen = config.metrics.listen ? hostPort(config.metrics.listen) : undefined;
  const metrics = config.metrics.enabled
    ? new (await import('./otel-metrics.js')).OtelMetrics({
        listen,
        serviceName: config.serviceName,
        serviceVersion: facts.version,
        gatewayId: facts.gatewayId,
        droppedSpans: traces ? () => traces.dropped : undefined,
        warn: facts.warn,
      })
    : undefined;
  if (!traces && !metrics) return OFF;
  try {
    await metrics?.start();
  } catch (error) {
    await traces?.shutdown(0);
    throw error;
  }
  return {
    tracing: new SpanSink(traces, metrics, config.captureContent, facts.redact ?? ((text) => text)),
    metricsHandler: metrics && !listen ? (request, response) => metrics.handle(request, response) : undefined,
    attach: (sources) => metrics?.attach(sources),
    spans: () => ({ exported: traces?.exported ?? 0, dropped: traces?.dropped ?? 0 }),
    shutdown: async () => {
      await Promise.all([traces?.shutdown(SHUTDOWN_FLUSH_MS), metrics?.shutdown()]);
    },
  };
}

/** The gateway's spans, to the trace exporter and the metrics' counters. */
class SpanSink implements Tracing {
  readonly recording = true;

  constructor(
    private readonly traces: OtelTraces | undefined,
    private readonly metrics: OtelMetrics | undefined,
    readonly captureContent: boolean,
    private readonly redact: (text: string) => string,
  ) {}

  private cleaned(attributes: SpanAttributes): Record<string, string | number | boolean> {
    return defined(attributes, this.redact);
  }

  sample(traceId: string, parent?: TraceContext): boolean {
    if (!this.traces) return false;
    return parent ? parent.sampled : this.traces.sampled(traceId);
  }

  start(span: SpanStart): TraceSpan {
    const attributes = this.cleaned(span.attributes ?? {});
    const exported = this.traces?.start(span, attributes);
    const metrics = this.metrics;
    const began = performance.now();
    let ended = false;
    return {
      set: (more) => {
        const given = this.cleaned(more);
        if (metrics) Object.assign(attributes, given);
        exported?.setAttributes(given);
      },
      end: (outcome) => {
        if (ended) return;
        ended = true;
        const error = outcome?.error === undefined ? undefined : this.redact(outcome.error);
        exported?.end(error);
        metrics?.spanEnded(attributes, (performance.now() - began) / 1000, error);
      },
    };
  }
}

/** Attributes that hold what people and models wrote (telemetry.captureContent): the config's secrets are taken out. */
const CONTENT = new Set(['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']);

function defined(attributes: SpanAttributes, redact: (text: string) => string): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    out[key] = typeof value === 'string' && CONTENT.has(key) ? redact(value) : value;
  }
  return out;
}

function hostPort(listen: string): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  return { host: listen.slice(0, colon), port: Number(listen.slice(colon + 1)) };
}
