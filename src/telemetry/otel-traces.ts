/**
 * Spans to an OTLP/HTTP collector with the OpenTelemetry JS SDK. Loaded only when `telemetry.traces` is set
 * (telemetry.ts imports this file then), so a gateway without it loads no exporter.
 *
 * The SDK makes its own ids; Switchboard's are derived (kit/trace-context.ts), so the id generator hands the SDK the
 * ids of the span being started. Spans queue in a batch processor and are sent every `exportIntervalMs`: ending a span
 * never waits on the network. A collector that is down or slow costs the spans past `maxQueueSize` and the batches
 * that failed, each counted (`dropped`), never a run's time.
 */
import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Link, type SpanContext } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type IdGenerator,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Context } from '@opentelemetry/api';
import type { SpanStart, TraceContext } from '../ports/telemetry.js';

export interface TraceExportOptions {
  endpoint: string;
  headers: Record<string, string>;
  sampling: number;
  exportIntervalMs: number;
  maxQueueSize: number;
  timeoutMs: number;
  serviceName: string;
  serviceVersion?: string;
  gatewayId: string;
  /** A failed export (once per run of failures): the gateway's log. */
  warn: (message: string) => void;
}

/** A started span: what the sink sets and ends. */
export interface ExportedSpan {
  setAttributes(attributes: Record<string, string | number | boolean>): void;
  end(error?: string): void;
}

const KINDS = {
  internal: SpanKind.INTERNAL,
  client: SpanKind.CLIENT,
  server: SpanKind.SERVER,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/** Hands the SDK the ids of the span being started (set just before the synchronous `startSpan`, cleared after). */
class GivenIds implements IdGenerator {
  next?: { traceId: string; spanId: string };
  private readonly fallback = { traceId: () => randomHex(32), spanId: () => randomHex(16) };

  generateTraceId(): string {
    return this.next?.traceId ?? this.fallback.traceId();
  }

  generateSpanId(): string {
    return this.next?.spanId ?? this.fallback.spanId();
  }
}

/** Counts what the batch processor could not send, and keeps its queue from overflowing silently. */
class CountingProcessor implements SpanProcessor {
  dropped = 0;
  exported = 0;
  private handedOn = 0;
  private settled = 0;

  constructor(
    private readonly inner: SpanProcessor,
    private readonly maxQueueSize: number,
  ) {}

  settle(count: number, ok: boolean): void {
    this.settled += count;
    if (ok) this.exported += count;
    else this.dropped += count;
  }

  onStart(span: Span, parent: Context): void {
    this.inner.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    if (this.handedOn - this.settled >= this.maxQueueSize) {
      this.dropped += 1;
      return;
    }
    this.handedOn += 1;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

export class OtelTraces {
  private readonly ids = new GivenIds();
  private readonly provider: BasicTracerProvider;
  private readonly counting: CountingProcessor;
  private readonly tracer;
  private failing = false;
  private readonly ratio: TraceIdRatioBasedSampler;

  constructor(options: TraceExportOptions) {
    const exporter = new OTLPTraceExporter({ url: options.endpoint, headers: options.headers, timeoutMillis: options.timeoutMs });
    const counted: SpanExporter = {
      export: (spans, done) =>
        exporter.export(spans, (result: ExportResult) => {
          const ok = result.code === ExportResultCode.SUCCESS;
          this.counting.settle(spans.length, ok);
          if (!ok && !this.failing)
            options.warn(
              `telemetry.traces: could not send ${spans.length} span(s) to ${options.endpoint}: ${result.error?.message ?? 'export failed'}; spans are dropped and counted (switchboard_telemetry_spans_dropped) until the collector answers`,
            );
          this.failing = !ok;
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush(),
    };
    const batches = new BatchSpanProcessor(counted, {
      maxQueueSize: options.maxQueueSize,
      maxExportBatchSize: Math.min(512, options.maxQueueSize),
      scheduledDelayMillis: options.exportIntervalMs,
      exportTimeoutMillis: options.timeoutMs,
    });
    this.counting = new CountingProcessor(batches, options.maxQueueSize);
    const ratio = new TraceIdRatioBasedSampler(options.sampling);
    this.ratio = ratio;
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({
        'service.name': options.serviceName,
        ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
        'service.instance.id': options.gatewayId,
      }),
      // A trace's root decides by its trace id, so every gateway decides alike; every other span follows its parent's
      // sampled flag (a caller that recorded its trace, or chose not to, is followed).
      sampler: new ParentBasedSampler({ root: ratio }),
      idGenerator: this.ids,
      spanProcessors: [this.counting],
    });
    this.tracer = this.provider.getTracer('switchboard', options.serviceVersion);
  }

  /** The root decision for a trace id (the sampling ratio's, as the SDK's root sampler makes it). */
  sampled(traceId: string): boolean {
    return this.ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
  }

  get dropped(): number {
    return this.counting.dropped;
  }

  get exported(): number {
    return this.counting.exported;
  }

  start(span: SpanStart, attributes: Record<string, string | number | boolean>): ExportedSpan {
    const parent = span.parent ? trace.setSpanContext(ROOT_CONTEXT, remote(span.parent)) : ROOT_CONTEXT;
    const links: Link[] = (span.links ?? []).map((link) => ({ context: remote(link) }));
    this.ids.next = { traceId: span.context.traceId, spanId: span.context.spanId };
    let started: ReturnType<typeof this.tracer.startSpan>;
    try {
      started = this.tracer.startSpan(
        span.name,
        { kind: KINDS[span.kind ?? 'internal'], startTime: span.startTime, attributes, links },
        parent,
      );
    } finally {
      this.ids.next = undefined;
    }
    return {
      setAttributes: (more) => started.setAttributes(more),
      end: (error) => {
        if (error !== undefined) started.setStatus({ code: SpanStatusCode.ERROR, message: error });
        started.end();
      },
    };
  }

  /** Sends what is queued, for at most `timeoutMs`; then stops. */
  async shutdown(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.provider.shutdown().catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }
}

function remote(context: TraceContext): SpanContext {
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    traceFlags: context.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  };
}

function randomHex(length: number): string {
  return randomBytes(length / 2).toString('hex');
}
