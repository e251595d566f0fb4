/**
 * A run's spans (docs/observability.md), named and attributed by the OpenTelemetry GenAI semantic conventions:
 * `invoke_agent <agent>` for the run, `chat <model>` for each model call it makes, `execute_tool <tool>` for each tool
 * call. The run's and its tool calls' ids are derived (kit/trace-context.ts), so a run resumed after a crash continues
 * its trace under the same span, and an input a tool call writes names that call's span as its sender.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3Usage } from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';
import type { InputRecord, RunUsage, SpanAttributes, TraceContext, TraceSpan, Tracing } from '../../ports/index.js';
import type { TerminalRunStatus } from '../../core/run-status.js';
import { chatSpanId, runTrace, toolSpanContext, childOf, traceScope, type RunTrace } from '../../kit/trace-context.js';
import { onStreamFinish } from '../../models/stream-finish.js';
import { costMicros } from '../gates/budget-meter.js';
import { splitModelRef } from '../../models/model-ref.js';

/** Characters of content put on one attribute at most (with telemetry.captureContent). */
const CONTENT_LIMIT = 16_000;

export interface RunTracing {
  tracing: Tracing;
  /** The run's span. */
  run: TraceContext;
  runId: string;
  /** The run's attempt (1, and one more for each resume): a model call's span id names it. */
  attempt: number;
  agentId: string;
  sessionKey: string;
  /** `provider/model`. */
  model: string;
  price?: { input: number; output: number; cachedInput?: number };
}

export interface RunSpanFacts {
  runId: string;
  sessionKey: string;
  agentId: string;
  model: string;
  attempt: number;
  startedAt: number;
  inputs: readonly InputRecord[];
}

/** The run's `invoke_agent` span, begun when the run was first started (a resumed run's too, under the same id). */
export function startRunSpan(tracing: Tracing, facts: RunSpanFacts): { trace: RunTrace; span: TraceSpan } {
  const trace = runTrace(facts.runId, facts.inputs, (traceId, parent) => tracing.sample(traceId, parent));
  if (!tracing.recording) return { trace, span: tracing.start({ name: '', context: trace.context }) };
  const first = facts.inputs[0]?.provenance;
  const attributes: SpanAttributes = {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.id': facts.agentId,
    'gen_ai.agent.name': facts.agentId,
    'gen_ai.conversation.id': facts.sessionKey,
    'gen_ai.request.model': modelName(facts.model),
    'gen_ai.provider.name': providerName(facts.model),
    'switchboard.session.key': facts.sessionKey,
    'switchboard.run.id': facts.runId,
    'switchboard.run.attempt': facts.attempt,
    'switchboard.input.ids': facts.inputs.map((input) => input.id).join(','),
    'switchboard.input.kind': first?.kind,
    'switchboard.exchange.id': first?.exchange?.id,
    'switchboard.exchange.step': first?.exchange?.step,
    'switchboard.subagent.id': first?.subagent?.id,
    'switchboard.peer': first?.peer,
  };
  if (tracing.captureContent && trace.context.sampled)
    attributes['gen_ai.input.messages'] = clip(JSON.stringify(facts.inputs.map((input) => input.text)));
  const span = tracing.start({
    name: `invoke_agent ${facts.agentId}`,
    context: trace.context,
    parent: trace.parent,
    links: trace.links,
    startTime: facts.startedAt,
    attributes,
  });
  return { trace, span };
}

/** Ends the run's span with its outcome: only a committed run's span is ended (a suspended or fenced one goes on elsewhere). */
export function endRunSpan(
  span: TraceSpan,
  outcome: { status: TerminalRunStatus; usage: RunUsage; finalText: string | null; error?: { message: string } },
  captureContent: boolean,
): void {
  span.set({
    'switchboard.run.status': outcome.status,
    'gen_ai.usage.input_tokens': outcome.usage.inputTokens,
    'gen_ai.usage.output_tokens': outcome.usage.outputTokens,
    'switchboard.run.model_calls': outcome.usage.modelCalls,
    ...(captureContent && outcome.finalText !== null ? { 'gen_ai.output.messages': clip(JSON.stringify([outcome.finalText])) } : {}),
  });
  span.end(outcome.status === 'succeeded' ? undefined : { error: outcome.error?.message ?? outcome.status });
}

/** The run's model with a `chat` span around each call it makes (replayed steps make none). */
export function tracedModel(model: LanguageModelV3, run: RunTracing, step: () => number): LanguageModelV3 {
  if (!run.tracing.recording) return model;
  /** Calls made so far at each step (a call the AI SDK retries is made again). */
  const calls = new Map<number, number>();
  const begin = (params: LanguageModelV3CallOptions, streamed: boolean): TraceSpan => {
    const at = step();
    const retry = calls.get(at) ?? 0;
    calls.set(at, retry + 1);
    const attributes: SpanAttributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': providerName(run.model),
      'gen_ai.request.model': modelName(run.model),
      'gen_ai.request.max_tokens': params.maxOutputTokens,
      'gen_ai.request.temperature': params.temperature,
      'gen_ai.agent.id': run.agentId,
      'gen_ai.conversation.id': run.sessionKey,
      'switchboard.run.id': run.runId,
      'switchboard.step': at,
      'switchboard.streamed': streamed,
    };
    if (capturing(run)) attributes['gen_ai.input.messages'] = clip(JSON.stringify(params.prompt));
    return run.tracing.start({
      name: `chat ${modelName(run.model)}`,
      context: childOf(run.run, chatSpanId(run.runId, run.attempt, at, retry)),
      parent: run.run,
      kind: 'client',
      attributes,
    });
  };
  const finish = (
    span: TraceSpan,
    usage: LanguageModelV3Usage | undefined,
    facts: { finishReason?: string; responseModel?: string; content?: LanguageModelV3Content[]; text?: string },
  ) => {
    const input = usage?.inputTokens.total ?? 0;
    const output = usage?.outputTokens.total ?? 0;
    const cachedInput = usage?.inputTokens.cacheRead ?? 0;
    span.set({
      'gen_ai.usage.input_tokens': usage ? input : undefined,
      'gen_ai.usage.output_tokens': usage ? output : undefined,
      'gen_ai.usage.cache_read.input_tokens': usage ? cachedInput : undefined,
      'gen_ai.response.finish_reasons': facts.finishReason,
      'gen_ai.response.model': facts.responseModel,
      'switchboard.cost_usd': usage && run.price ? costMicros(run.price, { input, output, cachedInput }) / 1_000_000 : undefined,
    });
    if (capturing(run)) {
      const text = facts.text ?? (facts.content ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
      const calls = (facts.content ?? []).flatMap((part) =>
        part.type === 'tool-call' ? [{ name: part.toolName, arguments: part.input }] : [],
      );
      span.set({ 'gen_ai.output.messages': clip(JSON.stringify([{ role: 'assistant', text, toolCalls: calls }])) });
    }
  };
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: 'v3',
      wrapGenerate: async ({ doGenerate, params }) => {
        const span = begin(params, false);
        try {
          const result = await doGenerate();
          finish(span, result.usage, {
            finishReason: result.finishReason.unified,
            responseModel: result.response?.modelId,
            content: result.content,
          });
          span.end();
          return result;
        } catch (error) {
          span.end({ error: error instanceof Error ? error.message : String(error) });
          throw error;
        }
      },
      wrapStream: async ({ doStream, params }) => {
        const span = begin(params, true);
        let started: Awaited<ReturnType<typeof doStream>>;
        try {
          started = await doStream();
        } catch (error) {
          span.end({ error: error instanceof Error ? error.message : String(error) });
          throw error;
        }
        let text = '';
        const calls: LanguageModelV3Content[] = [];
        const stream = onStreamFinish(started.stream, (part) => {
          finish(span, part?.usage, { finishReason: part?.finishReason.unified, text, content: calls });
          span.end(part ? undefined : { error: 'the stream ended without a finish' });
        });
        // What the answer said, for captureContent: text deltas and tool calls, seen as they pass.
        const seen = capturing(run)
          ? stream.pipeThrough(
              new TransformStream({
                transform(part, controller) {
                  if (part.type === 'text-delta') text += part.delta;
                  else if (part.type === 'tool-call') calls.push(part);
                  controller.enqueue(part);
                },
              }),
            )
          : stream;
        return { ...started, stream: seen };
      },
    },
  });
}

/**
 * Runs a tool call in its `execute_tool` span, as the trace scope of what it writes (a message it sends names this
 * span). A call whose wait suspended the run is not ended: it runs again, under the same span, when the run resumes.
 */
export async function inToolSpan<T>(
  run: RunTracing,
  call: { tool: string; effects: boolean; step: number; index: number; toolCallId: string; args: unknown },
  work: () => Promise<T>,
  suspended: (error: unknown) => boolean,
): Promise<T> {
  const context = toolSpanContext(run.run, run.runId, call.step, call.index);
  if (!run.tracing.recording) return traceScope.run(context, work);
  const span = run.tracing.start({
    name: `execute_tool ${call.tool}`,
    context,
    parent: run.run,
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.tool,
      'gen_ai.tool.call.id': call.toolCallId,
      'gen_ai.tool.type': 'function',
      'gen_ai.agent.id': run.agentId,
      'gen_ai.conversation.id': run.sessionKey,
      'switchboard.run.id': run.runId,
      'switchboard.step': call.step,
      'switchboard.call.index': call.index,
      'switchboard.tool.effects': call.effects,
      ...(capturing(run) ? { 'gen_ai.tool.call.arguments': clip(JSON.stringify(call.args ?? null)) } : {}),
    },
  });
  try {
    const output = await traceScope.run(context, work);
    if (capturing(run)) span.set({ 'gen_ai.tool.call.result': clip(JSON.stringify(output ?? null)) });
    span.end();
    return output;
  } catch (error) {
    if (!suspended(error)) span.end({ error: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

const providerName = (ref: string) => splitModelRef(ref).provider;
const modelName = (ref: string) => splitModelRef(ref).model;

/** Whether contents go on the run's spans: asked for, and the trace is recorded (nothing is built for a span not sent). */
function capturing(run: RunTracing): boolean {
  return run.tracing.captureContent && run.run.sampled;
}

function clip(text: string): string {
  return text.length > CONTENT_LIMIT ? `${text.slice(0, CONTENT_LIMIT)}…` : text;
}
