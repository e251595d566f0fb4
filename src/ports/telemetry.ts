/**
 * Telemetry (docs/observability.md): the spans the gateway and its fronts report, and where they go. The ids are the
 * gateway's own (kit/trace-context.ts derives them from runs, steps and outbox rows), so a span reported twice, by a
 * run resumed on another gateway, is the same span; an exporter sends them under those ids.
 */

/** A place in a trace (W3C Trace Context). */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  spanId: string;
  /** The W3C sampled flag: false when a caller upstream chose not to record this trace. */
  sampled: boolean;
}

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** The span kinds of OpenTelemetry: `client` for a request this gateway sends, `server` for one it serves. */
export type SpanKind = 'internal' | 'client' | 'server' | 'producer' | 'consumer';

export interface SpanStart {
  /** `invoke_agent <agent>`, `chat <model>`, `execute_tool <tool>`, `deliver <kind>` (docs/observability.md). */
  name: string;
  /** The span's own ids. */
  context: TraceContext;
  parent?: TraceContext;
  /** Spans this one follows from without being their child (a completion that wakes its parent later). */
  links?: TraceContext[];
  kind?: SpanKind;
  /** When the work began, if before now (a resumed run began when it was first started). */
  startTime?: number;
  attributes?: SpanAttributes;
}

export interface TraceSpan {
  set(attributes: SpanAttributes): void;
  /** Ends the span, which then goes to the exporter. A span never ended (its run suspended, its gateway died) is not sent. */
  end(outcome?: { error?: string }): void;
}

export interface Tracing {
  /** False when spans go nowhere: `start` answers a span that does nothing. */
  readonly recording: boolean;
  /** Whether message contents go on spans (telemetry.captureContent). */
  readonly captureContent: boolean;
  /**
   * Whether a trace is recorded: a parent's decision where there is one (a caller that did not record, did not), else
   * the sampling ratio's for the trace id, the same on every gateway. False when no traces are exported. It is the
   * sampled flag of every `traceparent` the work sends on.
   */
  sample(traceId: string, parent?: TraceContext): boolean;
  start(span: SpanStart): TraceSpan;
}
