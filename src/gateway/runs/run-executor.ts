/**
 * One run: the AI SDK tool loop over one session's context. It never throws for model or tool
 * failures; a failed, aborted or timed-out run is data (`ExecutedRun.status`).
 */
import { APICallError, type LanguageModelV3 } from '@ai-sdk/provider';
import {
  generateText,
  stepCountIs,
  streamText,
  type LanguageModelUsage,
  type ModelMessage,
  type SystemModelMessage,
  type ToolSet,
} from 'ai';
import { errorMessage, SwitchboardError } from '../../core/errors.js';
import { abortMessage, statusForAbort, type AbortReason } from '../../core/run-status.js';
import { addRequest, NO_REQUEST } from '../../core/request-size.js';
import type { RunRequestSize, RunUsage } from '../../ports/index.js';
import { CallPlaces, runToolSet, ToolOffer, type RunWaits, type ToolGate, type ToolSpanning } from '../tooling/run-tools.js';
import { matchesAny } from '../../core/tool-policy.js';
import { loadedInHistory, loadedInSteps, ToolCatalogue } from '../tooling/tool-catalogue.js';
import type { GatewayTool, ToolContext } from '../../ports/tools.js';
import type { LedgerDeps } from '../tooling/tool-ledger.js';
import type { RefusedTool } from '../tooling/tool-offer.js';
import type { ExecutedRun } from '../../ports/runtimes.js';
import type { DurableSteps } from './durable-steps.js';
import { inToolSpan, tracedModel, type RunTracing } from './run-telemetry.js';
import { WaitSuspended } from '../../kit/wait-until.js';

export interface ExecuteRunOptions {
  model: LanguageModelV3;
  /** What one model call sent, from the body the provider wrote (the model port's measure). */
  measureRequest: (body: unknown) => RunRequestSize;
  system: string;
  messages: ModelMessage[];
  tools: readonly GatewayTool[];
  /** Tools the session may not use: never sent to the model, and a call to one is answered with its refusal. */
  refusedTools?: readonly RefusedTool[];
  toolContext: Omit<ToolContext, 'toolCallId' | 'idempotencyKey' | 'call' | 'signal'>;
  /** Where side-effecting calls are recorded; without it their key is the tool-call id. */
  ledger?: LedgerDeps;
  maxSteps: number;
  /** Aborted with an `AbortReason` as its reason. */
  signal: AbortSignal;
  /** Asked at every step boundary after the first: inputs steered into this run (their ids, and as user messages). */
  takeSteered?: (step: number) => Promise<{ inputIds: string[]; messages: ModelMessage[] }>;
  /** Commits each step as it goes, and replays the steps an earlier attempt committed (durable-steps.ts). */
  durable?: DurableSteps;
  /** Where the run's waits may suspend it (run-waits.ts). */
  waits?: RunWaits;
  /** Where calls an `ask` policy matches wait for approval (gates/approval-gate.ts). */
  gate?: ToolGate;
  /** Streams the model's text to this; without it the model call is not streamed. */
  onDelta?: (text: string) => void;
  /** What a timed-out run's error says (which limit applied). */
  timeoutMessage?: string;
  /** Availability lookups already answered for the first step (AvailabilityContext.once keys), read with the start. */
  firstStepLookups?: Record<string, unknown>;
  /** Patterns of the tools sent by name only until loaded (`tools.defer`), besides those deferred by their own choice. */
  defer?: readonly string[];
  /** The run's spans: a chat span per model call, an execute_tool span per tool call (run-telemetry.ts). */
  tracing?: RunTracing;
}

export async function executeRun(options: ExecuteRunOptions): Promise<ExecutedRun> {
  const places = new CallPlaces();
  const defer = options.defer ?? [];
  const deferred = new Map(options.tools.filter((tool) => tool.deferred || matchesAny(tool.name, defer)).map((tool) => [tool.name, tool]));
  // What the session's history and the run's replayed steps loaded stays loaded.
  const loaded = [...loadedInHistory(options.messages), ...loadedInSteps(options.durable?.earlierSteps ?? [])];
  const whole = new Set(options.tools.filter((tool) => !deferred.has(tool.name)).map((tool) => tool.name));
  const catalogue = deferred.size > 0 ? new ToolCatalogue(deferred, loaded, options.refusedTools, whole) : undefined;
  const runTools = catalogue ? [...options.tools, catalogue.tool()] : options.tools;
  const tracing = options.tracing;
  const inSpan: ToolSpanning | undefined = tracing
    ? (call, work) => inToolSpan(tracing, call, work, (error) => error instanceof WaitSuspended)
    : undefined;
  const tools = runToolSet({ ...options, tools: runTools, steps: options.durable, waits: options.waits, inSpan }, places);
  const offer = new ToolOffer(runTools, options.toolContext, catalogue, options.firstStepLookups);

  const initialCount = options.messages.length;
  // Steered messages are re-inserted at their place on every step: the SDK rebuilds each step's
  // messages from the initial ones plus its own responses.
  const injections: { after: number; messages: ModelMessage[] }[] = [];
  let promptChars = 0;

  const withInjections = (messages: ModelMessage[]): ModelMessage[] => {
    if (injections.length === 0) return messages;
    const out = messages.slice(0, initialCount);
    const responses = messages.slice(initialCount);
    let cursor = 0;
    for (const injection of injections) {
      out.push(...responses.slice(cursor, injection.after), ...injection.messages);
      cursor = injection.after;
    }
    out.push(...responses.slice(cursor));
    return out;
  };

  const cached = withCacheBreakpoints(options.model, options.system, options.messages);
  // The SDK checks the messages it is given against its zod schema once per call: about 1.3 ms for a
  // history of 200 entries, on the event loop. The history is this gateway's own transcript (earlier runs'
  // responses and its own text), so the SDK is given only the newest message, and every step's prepareStep
  // puts the history back before it (the SDK uses the messages prepareStep returns as they are).
  const history = cached.messages.slice(0, -1);
  const offered = offer.wrap(tracing ? tracedModel(options.model, tracing, () => places.step) : options.model);
  const call = {
    model: options.durable ? options.durable.wrap(offered) : offered,
    system: cached.system,
    messages: cached.messages.slice(-1),
    tools,
    stopWhen: stepCountIs(options.maxSteps),
    abortSignal: options.signal,
    prepareStep: async ({ stepNumber, messages: given }: { stepNumber: number; messages: ModelMessage[] }) => {
      // A wait of the step before suspended the run: what its other calls gave is committed, and the run stops here.
      if (options.waits?.suspending) await suspendNow(stepNumber - 1);
      places.beginStep(stepNumber);
      const messages = [...history, ...given];
      let steeredIds: string[] = [];
      if (stepNumber > 0 && options.takeSteered) {
        const steered = await options.takeSteered(stepNumber);
        steeredIds = steered.inputIds;
        if (steered.messages.length > 0) injections.push({ after: messages.length - initialCount, messages: steered.messages });
      }
      await options.durable?.begin(stepNumber, steeredIds);
      const full = withInjections(messages);
      promptChars += options.system.length + listChars(full);
      await offer.refresh();
      return { messages: full };
    },
  };
  // Streaming costs several times a plain call in the SDK: only when someone watches the text.
  const suspendNow = async (step: number): Promise<never> => {
    await options.durable?.settleSoFar(step);
    options.waits?.abortNow();
    throw new Error('the run suspends in its waits');
  };
  const totals = new StepTotals(options.measureRequest, options.durable);
  const outcome = options.onDelta ? await streamed(call, totals, options.onDelta) : await generated(call, totals);
  // A wait of the last step the loop allowed suspended the run: the same, once the loop is over.
  if (options.waits?.suspending && !options.signal.aborted) await suspendNow(places.step).catch(() => {});
  const { usage, request } = outcome;

  if (options.signal.aborted) {
    const reason = options.signal.reason as AbortReason;
    const status = statusForAbort(reason);
    const partial: ModelMessage[] = outcome.text ? [{ role: 'assistant', content: [{ type: 'text', text: outcome.text }] }] : [];
    return {
      status,
      finalText: outcome.text || null,
      messages: withInjections([...options.messages, ...partial]).slice(initialCount),
      usage,
      promptChars,
      request,
      toolCalls: places.started,
      error: {
        code: status.toUpperCase(),
        message: reason === 'timeout' && options.timeoutMessage ? options.timeoutMessage : abortMessage(reason),
      },
    };
  }
  if (!outcome.ok) {
    return {
      status: 'failed',
      finalText: outcome.text || null,
      messages: withInjections(options.messages).slice(initialCount),
      usage,
      promptChars,
      request,
      toolCalls: places.started,
      error: providerError(outcome.error),
    };
  }
  const all = withInjections([...options.messages, ...outcome.responseMessages]).slice(initialCount);
  return { status: 'succeeded', finalText: outcome.text, messages: all, usage, promptChars, request, toolCalls: places.started };
}

/** Characters of a frozen message's JSON, by identity: the history's messages are frozen and shared between runs. */
const messageChars = new WeakMap<ModelMessage, number>();

/** `JSON.stringify(messages).length`, without serializing again the messages measured before. */
function listChars(messages: readonly ModelMessage[]): number {
  let chars = 2 + Math.max(0, messages.length - 1);
  for (const message of messages) {
    let size = messageChars.get(message);
    if (size === undefined) {
      size = JSON.stringify(message).length;
      if (Object.isFrozen(message)) messageChars.set(message, size);
    }
    chars += size;
  }
  return chars;
}

type ModelCall = Parameters<typeof generateText<ToolSet>>[0] & Parameters<typeof streamText<ToolSet>>[0];

/** What the tool loop produced: the text (so far, when it failed), and the steps' usage and request sizes. */
type LoopOutcome = { usage: RunUsage; request: RunRequestSize; text: string } & (
  | { ok: true; responseMessages: ModelMessage[] }
  | { ok: false; error: unknown }
);

/**
 * What this attempt's model calls sent and used, but for those a step row holds (a replayed step's, counted when it
 * committed, and one this attempt committed: DurableSteps.usage has them); and the text of the steps that finished.
 */
class StepTotals {
  usage: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0, cachedInputTokens: 0 };
  request = NO_REQUEST;
  text = '';
  /** The model calls sent, replayed ones included: the next one's step. */
  private begun = 0;
  private ended = 0;

  constructor(
    private readonly measure: (body: unknown) => RunRequestSize,
    private readonly durable?: DurableSteps,
  ) {}

  /** Whether step `step` was replayed (its text is not streamed again). */
  replayed(step: number): boolean {
    return this.durable?.replayed(step) !== undefined;
  }

  /** A model call's body, once its step's answer is in (or it failed): a step row holds what a committed one sent. */
  sent(body: unknown): void {
    if (this.durable?.holds(this.begun++)) return;
    this.request = addRequest(this.request, this.measure(body));
  }

  finished(usage: LanguageModelUsage): void {
    if (this.durable?.holds(this.ended++)) return;
    const steps = this.usage.steps + 1;
    this.usage = {
      inputTokens: this.usage.inputTokens + (usage.inputTokens ?? 0),
      outputTokens: this.usage.outputTokens + (usage.outputTokens ?? 0),
      modelCalls: steps,
      steps,
      cachedInputTokens: (this.usage.cachedInputTokens ?? 0) + (usage.inputTokenDetails?.cacheReadTokens ?? 0),
    };
  }
}

async function generated(call: ModelCall, totals: StepTotals): Promise<LoopOutcome> {
  try {
    const result = await generateText({
      ...call,
      onStepFinish: (step) => {
        totals.sent(step.request.body);
        totals.finished(step.usage);
        totals.text += step.text;
      },
    });
    return { ok: true, usage: totals.usage, request: totals.request, text: result.text, responseMessages: result.response.messages };
  } catch (error) {
    // The call that failed was sent too; an aborted run keeps the text of the steps that finished.
    totals.sent(failedRequestBody(error));
    return { ok: false, error, usage: totals.usage, request: totals.request, text: totals.text };
  }
}

async function streamed(call: ModelCall, totals: StepTotals, onDelta: (text: string) => void): Promise<LoopOutcome> {
  let streamError: unknown;
  // A step's body is counted once its answer is in, when it is known whether a step row holds it (StepTotals).
  let body: { value: unknown } | undefined;
  let step = -1;
  const result = streamText({
    ...call,
    onError: ({ error }) => {
      streamError = error;
    },
  });
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'start-step') {
        body = { value: part.request.body };
        step += 1;
      } else if (part.type === 'text-delta') {
        totals.text += part.text;
        // A replayed step's text was streamed when the model gave it.
        if (!totals.replayed(step)) onDelta(part.text);
      } else if (part.type === 'finish-step') {
        totals.sent(body?.value);
        body = undefined;
        totals.finished(part.usage);
      } else if (part.type === 'error') {
        streamError = part.error;
      }
    }
  } catch (error) {
    streamError ??= error;
  }
  if (streamError !== undefined || call.abortSignal?.aborted) {
    // The call that was cut was sent too.
    if (body) totals.sent(body.value);
    return { ok: false, error: streamError, usage: totals.usage, request: totals.request, text: totals.text };
  }
  const response = await result.response;
  return { ok: true, usage: totals.usage, request: totals.request, text: await result.text, responseMessages: response.messages };
}

/** The body of the HTTP call that failed, where the provider's error carries it. */
function failedRequestBody(error: unknown): unknown {
  const cause = (error as { lastError?: unknown }).lastError ?? error;
  return APICallError.isInstance(cause) ? cause.requestBodyValues : undefined;
}

const EPHEMERAL = { anthropic: { cacheControl: { type: 'ephemeral' } } } as const;

/**
 * Prompt caching. The prompt is built stable-first (tools, then the system text of preamble and workspace
 * files, then the history, which only grows), so that a provider's automatic prefix cache (OpenAI's) hits.
 * Anthropic caches only up to explicit breakpoints: one after the system text (it covers the tools too)
 * and one after the last message the run starts with, so the run's later steps and the session's next
 * run read that prefix from the cache.
 */
function withCacheBreakpoints(
  model: LanguageModelV3,
  system: string,
  messages: ModelMessage[],
): { system: string | SystemModelMessage; messages: ModelMessage[] } {
  if (!model.provider.startsWith('anthropic') || messages.length === 0) return { system, messages };
  const last = messages[messages.length - 1];
  return {
    system: { role: 'system', content: system, providerOptions: EPHEMERAL },
    messages: [...messages.slice(0, -1), { ...last, providerOptions: { ...last.providerOptions, ...EPHEMERAL } } as ModelMessage],
  };
}

/** A failed model call as the run's error: a gateway refusal before the call (BUDGET_EXCEEDED) keeps its own code. */
function providerError(error: unknown): { code: string; message: string } {
  const cause = (error as { lastError?: unknown }).lastError ?? error;
  if (SwitchboardError.isInstance(cause)) return { code: cause.code, message: cause.message };
  return { code: 'MODEL_PROVIDER_ERROR', message: describeProviderError(cause) };
}

function describeProviderError(error: unknown): string {
  const cause = (error as { lastError?: unknown }).lastError ?? error;
  if (APICallError.isInstance(cause)) {
    return cause.statusCode ? `${cause.message} (HTTP ${cause.statusCode} from ${cause.url})` : `${cause.message} (${cause.url})`;
  }
  return errorMessage(cause);
}
