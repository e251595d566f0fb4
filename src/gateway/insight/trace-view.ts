/**
 * The console's trace view (docs/console.md, "Trace view"; issue 56): one collaboration's spans across agents, drawn from
 * what the store keeps, so that it works without any collector. The ids are the ones the exporter sends
 * (kit/trace-context.ts derives them): a committed run's `run.completed` event names its trace, span and parent; a
 * step's tool calls are spans at their place in the run; an outbox row's payload names the run that wrote it, and each
 * delivery attempt is a span of its own. A run whose parent is no span found here hangs from a `remote` span (another
 * gateway's, or a remote caller's), and the attempts of a board task nobody traced from a `board_task` span.
 */
import { SwitchboardError } from '../../core/errors.js';
import { isTerminalRunStatus } from '../../core/run-status.js';
import { boardSessionKey } from '../../core/session-key.js';
import { chatSpanId, deliverySpanId, parseTraceparent, payloadSender, runTrace, spanIdOf, traceIdOf } from '../../kit/trace-context.js';
import type { RunToolCall, TraceQuery, TraceSpanView, TraceView } from '../../ports/gateway.js';
import type { InputRecord, OutboxRecord, RunRecord, StepRecord, Store, SubagentRecord, ToolCallRecord } from '../../ports/index.js';
import { costMicros } from '../gates/budget-meter.js';
import { splitModelRef } from '../../models/model-ref.js';

/** Runs read into one view at most; a longer trace says it was clipped. */
export const MAX_TRACE_RUNS = 200;
/** Outbox rows read into one view at most. */
const MAX_DELIVERIES = 1000;
/** Runs going or suspended looked at for the trace they are in (they have no `run.completed` event yet). */
const MAX_OPEN_RUNS = 200;

const TRACE_ID = /^[0-9a-f]{32}$/;

type Price = { input: number; output: number; cachedInput?: number };
type Attributes = TraceSpanView['attributes'];
/** A span before the tree is made: its depth comes from its place. */
type Span = Omit<TraceSpanView, 'depth'>;

export interface TraceViewDeps {
  store: Store;
  /** The configured agents' ids: a board task's sessions are one per agent. */
  agentIds(): string[];
  /** `models.prices`, read at each view (a reload may change them). */
  prices(): Record<string, Price>;
  /** A sub-agent by its id or child session key (SUBAGENT_NOT_FOUND otherwise). */
  findSubagent(target: string): Promise<SubagentRecord>;
  /** A run's tool calls from its transcript (Queries.runToolCalls). */
  toolCallsOf(run: RunRecord): Promise<RunToolCall[]>;
  now(): number;
}

/** A run of the trace, with where its span hangs. */
interface TracedRun {
  run: RunRecord;
  spanId: string;
  parentSpanId: string | null;
}

export async function traceView(deps: TraceViewDeps, of: TraceQuery): Promise<TraceView> {
  const { traceId, focusRunId } = await resolveTrace(deps, of);
  const { runs, clipped } = await runsOfTrace(deps.store, traceId);
  if (runs.length === 0)
    throw new SwitchboardError(
      'NOT_FOUND',
      `no run in trace "${traceId}" in this store (open a trace from a message, a run, a sub-agent or a board task: GET /v1/traces?input=<id>, ?run=, ?subagent=, ?task=)`,
    );
  const prices = deps.prices();
  const spans: Span[] = [];
  const inputsOf = new Map<string, InputRecord[]>();
  for (const traced of runs) {
    const inputs = await deps.store.inputs.listByRun(traced.run.id);
    inputsOf.set(traced.run.id, inputs);
    spans.push(...(await runSpans(deps, traced, inputs, prices)));
  }
  spans.push(...(await deliverySpans(deps.store, traceId, spans)));
  spans.push(...outsideParents(spans, runs, inputsOf));
  const ordered = treeOrder(spans);
  const now = deps.now();
  const runSpansOnly = ordered.filter((span) => span.kind === 'invoke_agent');
  const sum = (pick: (span: TraceSpanView) => number | null) => runSpansOnly.reduce((total, span) => total + (pick(span) ?? 0), 0);
  return {
    traceId,
    focusSpanId: runs.find((traced) => traced.run.id === focusRunId)?.spanId ?? null,
    start: Math.min(...ordered.map((span) => span.start)),
    end: Math.max(...ordered.map((span) => span.end ?? now)),
    runs: runs.length,
    clipped,
    currency: 'USD',
    totals: {
      inputTokens: sum((span) => span.inputTokens),
      outputTokens: sum((span) => span.outputTokens),
      cost: runSpansOnly.some((span) => span.cost === null && (span.inputTokens ?? 0) + (span.outputTokens ?? 0) > 0)
        ? null
        : sum((span) => span.cost),
    },
    spans: ordered,
  };
}

/** The trace id asked for, and the run it was asked through (to point at), from whichever id was given. */
async function resolveTrace(deps: TraceViewDeps, of: TraceQuery): Promise<{ traceId: string; focusRunId?: string }> {
  const { store } = deps;
  if (of.traceId !== undefined) {
    const traceId = of.traceId.toLowerCase();
    if (!TRACE_ID.test(traceId))
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `a trace id is 32 hex digits (a traceparent's second field), got "${of.traceId.slice(0, 80)}"`,
      );
    return { traceId };
  }
  if (of.inputId !== undefined) {
    const input = await store.inputs.get(of.inputId);
    if (!input) throw new SwitchboardError('NOT_FOUND', `no input "${of.inputId}" (a transcript entry's inputId names one)`);
    const run = input.runId ? await store.runs.get(input.runId) : undefined;
    if (run) return { traceId: await traceOfRun(store, run), focusRunId: run.id };
    return { traceId: traceOfWaitingInput(input) };
  }
  if (of.runId !== undefined) {
    const run = await store.runs.get(of.runId);
    if (!run) throw new SwitchboardError('RUN_NOT_FOUND', `no run "${of.runId}" (list them with "switchboard runs list")`);
    return { traceId: await traceOfRun(store, run), focusRunId: run.id };
  }
  if (of.subagent !== undefined) {
    const record = await deps.findSubagent(of.subagent);
    return traceOfSession(store, [record.sessionKey], record.firstRunId, () => {
      throw new SwitchboardError('NOT_FOUND', `sub-agent "${of.subagent}" has no task input (list them with "switchboard subagents list")`);
    });
  }
  if (of.taskId !== undefined) {
    const taskId = of.taskId;
    const sessions = deps.agentIds().map((agentId) => boardSessionKey(agentId, taskId));
    return traceOfSession(store, sessions, undefined, () => {
      throw new SwitchboardError(
        'NOT_FOUND',
        `no agent of this gateway has worked board task "${taskId}" yet (its work is in a session agent:<agentId>:board:<taskId>; list tasks with "switchboard board list")`,
      );
    });
  }
  throw new SwitchboardError('INVALID_REQUEST', 'give a trace id, or one of input, run, subagent or task');
}

/** A committed run's trace is in its `run.completed` event; a run still going (or committed before traces) works it out again. */
async function traceOfRun(store: Store, run: RunRecord): Promise<string> {
  // By session and run: the journal's index is on the session.
  const events = await store.events.list({ sessionKey: run.sessionKey, runId: run.id, limit: 10_000 });
  const completed = events.find((event) => event.type === 'run.completed');
  const recorded = traceOfPayload(completed?.payload);
  if (recorded) return recorded.traceId;
  return runTrace(run.id, await store.inputs.listByRun(run.id)).context.traceId;
}

/** An input no run took yet: the trace of the span that sent it, or the one its run will start (it will be the run's first). */
function traceOfWaitingInput(input: InputRecord): string {
  return parseTraceparent(input.provenance.trace)?.traceId ?? traceIdOf(input.id);
}

/** The trace of the first run in these sessions (the one named, when it started), else of their first waiting input. */
async function traceOfSession(
  store: Store,
  sessionKeys: string[],
  firstRunId: string | undefined,
  none: () => never,
): Promise<{ traceId: string; focusRunId?: string }> {
  const named = firstRunId ? await store.runs.get(firstRunId) : undefined;
  const runs = named
    ? [named]
    : (await Promise.all(sessionKeys.map((sessionKey) => store.runs.list({ sessionKey, limit: 10_000 })))).flat();
  const first = runs.sort((a, b) => a.startedAt - b.startedAt)[0];
  if (first) return { traceId: await traceOfRun(store, first), focusRunId: first.id };
  const inputs = (await Promise.all(sessionKeys.map((sessionKey) => store.inputs.list({ sessionKey, limit: 1 })))).flat();
  const input = inputs.sort((a, b) => a.createdAt - b.createdAt)[0];
  return input ? { traceId: traceOfWaitingInput(input) } : none();
}

function traceOfPayload(payload: unknown): { traceId: string; spanId: string; parentSpanId: string | null } | undefined {
  const trace = (payload as { trace?: { traceId?: unknown; spanId?: unknown; parentSpanId?: unknown } } | null)?.trace;
  if (typeof trace?.traceId !== 'string' || typeof trace.spanId !== 'string') return undefined;
  return { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: typeof trace.parentSpanId === 'string' ? trace.parentSpanId : null };
}

/**
 * The trace's runs, oldest first: the committed ones by their `run.completed` events, found by the trace id in the
 * payload's text (no index: the hot path writes nothing extra for this view), and the runs going or suspended now,
 * whose trace is worked out from their inputs as the run itself does.
 */
async function runsOfTrace(store: Store, traceId: string): Promise<{ runs: TracedRun[]; clipped: boolean }> {
  const found = new Map<string, TracedRun>();
  // One more than is shown, to know whether there are more; an event that only mentions the id (in a reply) is not one.
  const events = await store.events.findByPayload('run.completed', traceId, MAX_TRACE_RUNS + 1);
  let clipped = events.length > MAX_TRACE_RUNS;
  for (const event of events.slice(0, MAX_TRACE_RUNS)) {
    const trace = traceOfPayload(event.payload);
    if (!event.runId || trace?.traceId !== traceId || found.has(event.runId)) continue;
    const run = await store.runs.get(event.runId);
    if (run) found.set(run.id, { run, spanId: trace.spanId, parentSpanId: trace.parentSpanId });
  }
  const open = (
    await Promise.all([
      store.runs.list({ status: 'running', limit: MAX_OPEN_RUNS }),
      store.runs.list({ status: 'suspended', limit: MAX_OPEN_RUNS }),
    ])
  ).flat();
  for (const run of open) {
    if (found.has(run.id)) continue;
    const trace = runTrace(run.id, await store.inputs.listByRun(run.id));
    if (trace.context.traceId !== traceId) continue;
    if (found.size >= MAX_TRACE_RUNS) {
      clipped = true;
      break;
    }
    found.set(run.id, { run, spanId: trace.context.spanId, parentSpanId: trace.parent?.spanId ?? null });
  }
  return { runs: [...found.values()].sort((a, b) => a.run.startedAt - b.run.startedAt), clipped };
}

/** A run's span, a `chat` span per model call, and an `execute_tool` span per tool call. */
async function runSpans(deps: TraceViewDeps, traced: TracedRun, inputs: InputRecord[], prices: Record<string, Price>): Promise<Span[]> {
  const { run } = traced;
  const steps = await deps.store.steps.list(run.id);
  const at = { sessionKey: run.sessionKey, agentId: run.agentId, runId: run.id };
  const ended = isTerminalRunStatus(run.status) ? run.endedAt : null;
  const chats: Span[] = [];
  const tools: Span[] = [];
  steps.forEach((step, position) => {
    chats.push(
      chatSpan(traced, chatSpanId(run.id, step.attempt, step.step), step.model, step.startedAt, step.answeredAt, step.usage, prices, {
        'switchboard.step': step.step,
        'switchboard.run.attempt': step.attempt,
      }),
    );
    // The step's tools ran from its answer until their results were committed (or the next model call began).
    const next = steps[position + 1]?.startedAt;
    const settled = step.settledAt === null ? next : next === undefined ? step.settledAt : Math.min(step.settledAt, next);
    const toolsEnd = settled ?? ended;
    const callIds = toolCallIdsOf(step);
    step.toolNames.forEach((tool, index) => {
      const toolCallId = callIds[index];
      const failed = step.results?.find((result) => result.toolCallId === toolCallId)?.error;
      tools.push({
        ...at,
        spanId: spanIdOf('tool', run.id, step.step, index),
        parentSpanId: traced.spanId,
        name: `execute_tool ${tool}`,
        kind: 'execute_tool',
        start: step.answeredAt,
        end: toolsEnd,
        status: failed !== undefined ? 'error' : toolsEnd === null ? 'running' : 'ok',
        inputTokens: null,
        outputTokens: null,
        cost: null,
        attributes: compact({
          'gen_ai.tool.name': tool,
          'gen_ai.tool.call.id': toolCallId,
          'switchboard.step': step.step,
          'switchboard.call.index': index,
          'switchboard.tool.error': failed,
        }),
      });
    });
  });
  // The run's last model call is in its commit, not in a step of its own; a run that commits only its end (durability
  // "run") has all its calls there.
  if (ended !== null && run.usage.modelCalls > steps.length) {
    const sum = (pick: (step: StepRecord) => number) => steps.reduce((total, step) => total + pick(step), 0);
    const last = tools.at(-1)?.end ?? steps.at(-1)?.answeredAt ?? run.startedAt;
    const calls = run.usage.modelCalls - steps.length;
    chats.push(
      chatSpan(
        traced,
        // One call: the exporter's id for it. Several (a run that commits only its end): none of them is told apart.
        calls === 1 ? chatSpanId(run.id, run.attempt, steps.length) : null,
        run.model,
        Math.min(last, ended),
        ended,
        {
          inputTokens: run.usage.inputTokens - sum((step) => step.usage.inputTokens),
          outputTokens: run.usage.outputTokens - sum((step) => step.usage.outputTokens),
          cachedInputTokens: (run.usage.cachedInputTokens ?? 0) - sum((step) => step.usage.cachedInputTokens),
        },
        prices,
        compact({ 'switchboard.step': steps.length, 'switchboard.model_calls': calls > 1 ? calls : undefined }),
      ),
    );
    if (steps.length === 0) tools.push(...(await unplacedToolSpans(deps, traced, at)));
  }
  const priced = chats.every((chat) => chat.cost !== null);
  const first = inputs[0]?.provenance;
  const runSpan: Span = {
    ...at,
    spanId: traced.spanId,
    parentSpanId: traced.parentSpanId,
    name: `invoke_agent ${run.agentId}`,
    kind: 'invoke_agent',
    start: run.startedAt,
    end: ended,
    status: run.status,
    inputTokens: run.usage.inputTokens,
    outputTokens: run.usage.outputTokens,
    cost: priced && chats.length > 0 ? chats.reduce((total, chat) => total + (chat.cost ?? 0), 0) : null,
    attributes: compact({
      'gen_ai.request.model': run.model,
      'switchboard.run.attempt': run.attempt,
      'switchboard.run.model_calls': run.usage.modelCalls,
      'switchboard.input.ids': inputs.map((input) => input.id).join(','),
      'switchboard.input.kind': first?.kind,
      'switchboard.exchange.id': first?.exchange?.id,
      'switchboard.exchange.step': first?.exchange?.step,
      'switchboard.subagent.id': first?.subagent?.id,
      'switchboard.peer': first?.peer,
      'switchboard.run.error': run.errorMessage ?? undefined,
      'switchboard.run.waiting_until': run.waitingUntil ?? undefined,
    }),
  };
  return [runSpan, ...chats, ...tools];
}

/** A model call's span: under its run, with the exporter's id for it (kit/trace-context.ts chatSpanId) where it is known. */
function chatSpan(
  { run, spanId }: TracedRun,
  chatId: string | null,
  model: string,
  start: number,
  end: number,
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens: number },
  prices: Record<string, Price>,
  attributes: Attributes,
): Span {
  const price = prices[model];
  const tokens = { input: usage.inputTokens, output: usage.outputTokens, cachedInput: usage.cachedInputTokens };
  return {
    sessionKey: run.sessionKey,
    agentId: run.agentId,
    runId: run.id,
    spanId: chatId,
    parentSpanId: spanId,
    name: `chat ${modelName(model)}`,
    kind: 'chat',
    start,
    end,
    status: 'ok',
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cost: price ? costMicros(price, tokens) / 1_000_000 : null,
    attributes: {
      'gen_ai.request.model': modelName(model),
      'gen_ai.provider.name': providerName(model),
      'gen_ai.usage.cache_read.input_tokens': usage.cachedInputTokens,
      ...attributes,
    },
  };
}

/** The ids of a step's tool calls in the order the model made them (the order the SDK starts them in: their index). */
function toolCallIdsOf(step: StepRecord): (string | undefined)[] {
  const content = (step.response as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return [];
  return content
    .filter((part) => (part as { type?: unknown })?.type === 'tool-call')
    .map((part) => (part as { toolCallId?: string }).toolCallId);
}

/**
 * The tool calls of a run that committed no step (durability "run"): from its transcript, each placed by the ledger
 * where it has a row (a call with an effect: its step and index, so its span id), the others under the run without one.
 */
async function unplacedToolSpans(
  deps: TraceViewDeps,
  traced: TracedRun,
  at: { sessionKey: string; agentId: string; runId: string },
): Promise<Span[]> {
  const { run } = traced;
  const [calls, ledger] = await Promise.all([deps.toolCallsOf(run), deps.store.toolCalls.list({ runId: run.id, limit: 1000 })]);
  // As the message path does: the run's ledger rows of one tool, in order, matched to its transcript's calls of that tool.
  const recordedOf = new Map<string, ToolCallRecord[]>();
  for (const row of [...ledger].sort((a, b) => a.step - b.step || a.index - b.index))
    recordedOf.set(row.tool, [...(recordedOf.get(row.tool) ?? []), row]);
  return calls.map((call) => {
    const recorded = recordedOf.get(call.toolName)?.shift();
    return {
      ...at,
      spanId: recorded ? spanIdOf('tool', run.id, recorded.step, recorded.index) : null,
      parentSpanId: traced.spanId,
      name: `execute_tool ${call.toolName}`,
      kind: 'execute_tool',
      start: recorded?.createdAt ?? run.startedAt,
      end: run.endedAt,
      status: 'ok',
      inputTokens: null,
      outputTokens: null,
      cost: null,
      attributes: compact({
        'gen_ai.tool.name': call.toolName,
        'gen_ai.tool.call.id': call.toolCallId,
        'switchboard.step': recorded?.step,
        'switchboard.call.index': recorded?.index,
      }),
    };
  });
}

/**
 * The trace's deliveries: outbox rows whose payload names a span of this trace as its writer, a `deliver <kind>` span per
 * attempt (an input the attempt wrote names that attempt's span). The store keeps the row's first time and its delivery
 * time, not each attempt's: a retried attempt is shown at the row's start, failed.
 */
async function deliverySpans(store: Store, traceId: string, found: readonly Span[]): Promise<Span[]> {
  const writers = new Map(found.flatMap((span) => (span.spanId ? [[span.spanId, span] as const] : [])));
  const rows = (await store.outbox.findByPayload(traceId, MAX_DELIVERIES)).filter((row) => payloadSender(row.payload)?.traceId === traceId);
  return rows.flatMap((row) => {
    const parent = payloadSender(row.payload)!.spanId;
    const writer = writers.get(parent);
    const made = row.status === 'pending' ? row.attempts + 1 : Math.max(row.attempts, 1);
    return Array.from({ length: made }, (_, attempt) => deliverySpan(row, attempt, attempt === made - 1, parent, writer));
  });
}

function deliverySpan(row: OutboxRecord, attempt: number, last: boolean, parent: string, writer: Span | undefined): Span {
  return {
    sessionKey: writer?.sessionKey ?? null,
    agentId: writer?.agentId ?? null,
    runId: writer?.runId ?? null,
    spanId: deliverySpanId(row.id, attempt),
    parentSpanId: parent,
    name: `deliver ${row.kind}`,
    kind: 'deliver',
    start: row.createdAt,
    end: last ? (row.deliveredAt ?? (row.status === 'pending' ? null : row.createdAt)) : row.createdAt,
    status: last ? row.status : 'failed',
    inputTokens: null,
    outputTokens: null,
    cost: null,
    attributes: compact({
      'switchboard.outbox.id': row.id,
      'switchboard.outbox.kind': row.kind,
      'switchboard.outbox.target': row.target,
      'switchboard.outbox.attempt': attempt + 1,
      'switchboard.outbox.last_error': last ? (row.lastError ?? undefined) : undefined,
    }),
  };
}

/**
 * The parents this store has no span for: a board task's own span (the attempts of a task no traced span created hang
 * from it), or a span of another gateway or a remote caller (an A2A request, a traced script). Each is drawn as a span
 * over the time of its children here, named for the peer that sent the first of them.
 */
function outsideParents(spans: readonly Span[], runs: readonly TracedRun[], inputsOf: Map<string, InputRecord[]>): Span[] {
  const known = new Set(spans.flatMap((span) => (span.spanId ? [span.spanId] : [])));
  const outside = new Map<string, Span[]>();
  for (const span of spans)
    if (span.parentSpanId && !known.has(span.parentSpanId))
      outside.set(span.parentSpanId, [...(outside.get(span.parentSpanId) ?? []), span]);
  return [...outside].map(([spanId, children]) => {
    // The input that named this span as its sender: a board task's (its id is the provenance's peer) or a remote one's.
    const child = runs.find((traced) => traced.spanId === children[0]!.spanId);
    const sent = (child ? (inputsOf.get(child.run.id) ?? []) : []).find(
      (input) => parseTraceparent(input.provenance.trace)?.spanId === spanId,
    );
    const board = sent?.provenance.kind === 'board' && sent.provenance.peer && spanIdOf('board', sent.provenance.peer) === spanId;
    const ends = children.map((span) => span.end);
    return {
      spanId,
      parentSpanId: null,
      name: board ? `board_task ${sent!.provenance.peer}` : `remote ${sent?.provenance.peer ?? sent?.provenance.channel ?? 'caller'}`,
      kind: board ? 'board_task' : 'remote',
      sessionKey: null,
      agentId: null,
      runId: null,
      start: Math.min(...children.map((span) => span.start)),
      end: ends.includes(null) ? null : Math.max(...(ends as number[])),
      status: 'ok',
      inputTokens: null,
      outputTokens: null,
      cost: null,
      attributes: compact({
        'switchboard.input.kind': sent?.provenance.kind,
        'switchboard.peer': sent?.provenance.peer,
        'switchboard.board.task': board ? sent!.provenance.peer : undefined,
      }),
    } satisfies Span;
  });
}

/** Parents before children, children by their start (a run before its own calls at the same time), roots by theirs. */
function treeOrder(spans: readonly Span[]): TraceSpanView[] {
  const rank: Record<TraceSpanView['kind'], number> = { remote: 0, board_task: 0, invoke_agent: 1, chat: 2, execute_tool: 3, deliver: 4 };
  const byStart = (a: Span, b: Span) => a.start - b.start || rank[a.kind] - rank[b.kind];
  const children = new Map<string | null, Span[]>();
  for (const span of spans) children.set(span.parentSpanId, [...(children.get(span.parentSpanId) ?? []), span]);
  const ordered: TraceSpanView[] = [];
  const followed = new Set<string>();
  const visit = (span: Span, depth: number) => {
    ordered.push({ ...span, depth });
    // A span without an id has no children; a span met twice (a cycle no real trace has) is not followed again.
    if (!span.spanId || followed.has(span.spanId)) return;
    followed.add(span.spanId);
    for (const child of (children.get(span.spanId) ?? []).sort(byStart)) visit(child, depth + 1);
  };
  for (const root of (children.get(null) ?? []).sort(byStart)) visit(root, 0);
  return ordered;
}

function compact(attributes: Record<string, string | number | boolean | undefined | null>): Attributes {
  return Object.fromEntries(
    Object.entries(attributes).filter(([, value]) => value !== undefined && value !== null && value !== ''),
  ) as Attributes;
}

const providerName = (ref: string) => splitModelRef(ref).provider;
const modelName = (ref: string) => splitModelRef(ref).model;
