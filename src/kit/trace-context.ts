/**
 * Where a piece of work stands in its collaboration's trace (W3C Trace Context). A Switchboard trace needs no
 * collector and no memory: a run's span id is derived from its run id, a tool call's from its run, step and index,
 * a delivery's from its outbox row, and a run's trace from the inputs it consumed (each input names the span that
 * sent it). The same run resumed on another gateway after a crash has the same ids; the console's trace view
 * (gateway/insight/trace-view.ts) finds them again from the store, and the OpenTelemetry exporter (src/telemetry)
 * sends spans under them.
 *
 * The context of the work in hand rides an AsyncLocalStorage (`traceScope`): an input written while a scope is set
 * names the scope's span as its sender, unless it already names one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import type { TraceContext, TraceSpan, Tracing } from '../ports/telemetry.js';

export type { TraceContext };

export const traceScope = new AsyncLocalStorage<TraceContext | undefined>();

/**
 * Runs `work` outside any trace scope: work that outlives what started it (a background pass, a listener, a run a tool
 * call woke) must not write its rows as sent by that. Free when there is no scope (no AsyncLocalStorage toggling).
 */
export function outsideTrace<T>(work: () => T): T {
  return traceScope.getStore() === undefined ? work() : traceScope.run(undefined, work);
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** A `traceparent` header's context; undefined when it is absent or malformed (the spec says: start a new trace). */
export function parseTraceparent(header: unknown): TraceContext | undefined {
  if (typeof header !== 'string') return undefined;
  const match = TRACEPARENT.exec(header.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  // Version ff is invalid; version 00 has exactly four fields.
  if (version === 'ff' || (version === '00' && header.trim().length !== 55)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.sampled ? '01' : '00'}`;
}

/** The `traceparent` of the work in hand, when there is a scope. */
export function currentTraceparent(): string | undefined {
  const context = traceScope.getStore();
  return context ? formatTraceparent(context) : undefined;
}

/** SHA-256 in hex: the one-shot `crypto.hash` where Node has it (20.12 and later: under half the cost), else a Hash. */
const sha256: (text: string) => string =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (text) => (crypto as unknown as { hash(algorithm: string, data: string, encoding: 'hex'): string }).hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');

function derived(length: number, parts: readonly (string | number)[]): string {
  const hex = sha256(parts.join('\u0000')).slice(0, length);
  // All zeros is invalid; one in 2^64 (or 2^128) never happens, but a reader should not have to wonder.
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/** A span id derived from what names the work (a run id; a run id, step and index): the same on every gateway and attempt. */
export function spanIdOf(...parts: (string | number)[]): string {
  return derived(16, parts);
}

/** A trace id for work no traced sender started (a message from a person, a schedule): derived from its first input's id. */
export function traceIdOf(id: string): string {
  return derived(32, ['trace', id]);
}

/** A child of `parent` with span id `spanId`: the same trace, the parent's sampling. */
export function childOf(parent: TraceContext, spanId: string): TraceContext {
  return { traceId: parent.traceId, spanId, sampled: parent.sampled };
}

/** What a run's span hangs from: its trace, the span that sent its first traced input, and the other senders as links. */
export interface RunTrace {
  context: TraceContext;
  parent?: TraceContext;
  links: TraceContext[];
}

/**
 * A run's place in its trace: the first of its inputs that names a sender is its parent (a reply, a turn, a completion
 * joins the collaboration that caused it); inputs from other traces (steered or collected in) are links. With no
 * traced input the run starts a trace of its own, derived from its first input, so a resumed run finds the same one.
 */
export function runTrace(
  runId: string,
  inputs: readonly { id: string; provenance: { trace?: string } }[],
  sample: (traceId: string, parent?: TraceContext) => boolean = (_traceId, parent) => parent?.sampled ?? false,
): RunTrace {
  const senders = inputs.flatMap((input) => {
    const sender = parseTraceparent(input.provenance.trace);
    return sender ? [sender] : [];
  });
  const [parent, ...others] = senders;
  const spanId = spanIdOf('run', runId);
  const traceId = parent?.traceId ?? traceIdOf(inputs[0]?.id ?? runId);
  const context = { traceId, spanId, sampled: sample(traceId, parent) };
  if (!parent) return { context, links: [] };
  return { context, parent, links: others.filter((other) => other.traceId !== parent.traceId) };
}

/** A tool call's span: its place in the run (the ledger's place, which a resumed run keeps). */
export function toolSpanContext(run: TraceContext, runId: string, step: number, index: number): TraceContext {
  return childOf(run, spanIdOf('tool', runId, step, index));
}

/** A delivery's span (an outbox row): its row's id, so every attempt of one delivery is the same span. */
export function deliverySpanId(outboxId: string, attempt: number): string {
  return spanIdOf('delivery', outboxId, attempt);
}

/** What an input written now says of its sender: the provenance as given, naming the scope's span when it names none. */
export function withSender<P extends { trace?: string }>(provenance: P): P {
  if (provenance.trace !== undefined) return provenance;
  const context = traceScope.getStore();
  return context ? { ...provenance, trace: formatTraceparent(context) } : provenance;
}

const IDLE_SPAN: TraceSpan = { set: () => {}, end: () => {} };

/** Telemetry off: spans go nowhere, nothing is recorded (every traceparent sent on says so), and they cost nothing but their ids. */
export const NO_TRACING: Tracing = { recording: false, captureContent: false, sample: () => false, start: () => IDLE_SPAN };

/**
 * An outbox row's payload as written now: naming `sender` (the run whose commit writes it), else the scope's span (a tool
 * call that writes it), as the delivery's parent, unless it names one.
 */
export function withSenderPayload(payload: unknown, sender?: string): unknown {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || 'trace' in payload) return payload;
  const context = traceScope.getStore();
  const trace = sender ?? (context ? formatTraceparent(context) : undefined);
  return trace ? { ...payload, trace } : payload;
}

/** The span that wrote an outbox row's payload, when it names one. */
export function payloadSender(payload: unknown): TraceContext | undefined {
  if (payload === null || typeof payload !== 'object') return undefined;
  return parseTraceparent((payload as { trace?: unknown }).trace);
}

/** `{ traceparent }` for an outgoing HTTP request made in a trace scope; empty outside one. */
export function traceHeader(): { traceparent?: string } {
  const traceparent = currentTraceparent();
  return traceparent ? { traceparent } : {};
}

/** The trace of a board task that no traced span created: derived from its id, so all its attempts share it. */
export function boardTraceparent(taskId: string): string {
  return formatTraceparent({ traceId: traceIdOf(`board:${taskId}`), spanId: spanIdOf('board', taskId), sampled: true });
}

/**
 * A model call's span: its run, the attempt that made it and its step (a step replayed from an earlier attempt makes no
 * call; the step in flight at a crash is asked again by the next attempt, under that attempt's id). A call the AI SDK
 * retried within the step is the step's `retry`th.
 */
export function chatSpanId(runId: string, attempt: number, step: number, retry = 0): string {
  return retry === 0 ? spanIdOf('chat', runId, attempt, step) : spanIdOf('chat', runId, attempt, step, retry);
}
