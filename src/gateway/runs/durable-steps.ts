/**
 * Durable steps (ARCHITECTURE.md section 4.7). A step is one model call and the tool calls it asked for. The model's
 * answer is committed as the run's step before any of its tools runs, and their results before the next model call,
 * so a run that a crash or a lost lease cut resumes from its last committed step: the tool loop is run again from the
 * start, and each committed step is replayed from the store (its answer handed to the SDK as if the model gave it, its
 * results as if its tools did) without asking the model or running a tool. Only the step in flight is repeated: its
 * model call, and its tools through the ledger's rules.
 *
 * A step with no tool call ends the run: the run's own commit holds it (its usage is the run's), so a one-call run
 * writes no step row. A step whose tools all have no effects (reads) leaves its results to the next step's commit, or to
 * the run's (RunCommit.stepResults): a crash before it runs those tools again, which changes nothing, so a step costs
 * one commit, not two.
 */
import type {
  LanguageModelV3,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
  SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';
import { SwitchboardError } from '../../core/errors.js';
import { addRequest, NO_REQUEST, type RunRequestSize } from '../../core/request-size.js';
import type {
  Clock,
  EventRecord,
  RunStepStore,
  RunUsage,
  SettledToolCall,
  StepRecord,
  StepToolResult,
  StepUsage,
} from '../../ports/index.js';

/** A model's answer as a step row keeps it: enough to hand the SDK the same answer again. */
export interface RecordedResponse {
  content: LanguageModelV3Content[];
  finishReason: LanguageModelV3FinishReason;
  providerMetadata?: SharedV3ProviderMetadata;
  response?: { id?: string; modelId?: string; timestamp?: string };
}

export interface DurableStepsDeps {
  store: RunStepStore;
  clock: Clock;
  runId: string;
  sessionKey: string;
  epoch: number;
  attempt: number;
  model: string;
  measureRequest: (body: unknown) => RunRequestSize;
  /** The steps earlier attempts committed, in order: replayed instead of asked again. */
  committed: readonly StepRecord[];
  /** The run's own inputs (those step 0 reads). */
  inputIds: readonly string[];
  /** A step the store refused (the run was fenced off): the run is aborted with `lease_lost`. */
  fenced: () => void;
  /** The `run.step` events the commits wrote, to publish. */
  published: (events: readonly EventRecord[]) => void;
  /** The ledger's rows the run collects for its commit: a step's are settled with its results instead. */
  ledgerCalls?: SettledToolCall[];
}

const ZERO_USAGE: LanguageModelV3Usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

export class DurableSteps {
  private readonly committed: Map<number, StepRecord>;
  /** The step the SDK is at (its prepareStep says so before each model call). */
  private current = 0;
  /** Inputs steered into the current step before its model call. */
  private steeredNow: string[] = [];
  /** Results of the tool calls of steps whose results are not committed yet. */
  private readonly pending = new Map<number, StepToolResult[]>();
  /** Steps recorded (committed or replayed) whose results are still to be committed. */
  private readonly unsettled = new Set<number>();
  /** The steps this attempt committed, with what their calls used and sent. */
  private readonly recorded = new Map<number, { usage: StepUsage; request: RunRequestSize }>();
  /** Steps with a call of a tool that has effects: their results are committed before the next model call. */
  private readonly effectful = new Set<number>();
  /** The results of the step before, left to the next step's commit (its tools have no effects). */
  private deferred?: { step: number; results: StepToolResult[] };

  constructor(private readonly deps: DurableStepsDeps) {
    this.committed = new Map(deps.committed.map((step) => [step.step, step]));
    for (const step of deps.committed) {
      if (step.settledAt !== null) continue;
      // Its tools were cut, all or some (the run suspended while one of them waited): those without a result run again.
      this.unsettled.add(step.step);
      if (step.results) this.pending.set(step.step, [...step.results]);
    }
  }

  /** The steps replayed from earlier attempts (the model was not asked for them again). */
  get replayedSteps(): number {
    return this.committed.size;
  }

  /**
   * What the step rows hold, those of earlier attempts and this one's: on the run's row since each committed, and
   * the run's usage at its commit is this plus what its other calls used (the answer it ended with, a call that failed).
   */
  usage(): { usage: RunUsage; request: RunRequestSize } {
    let request = NO_REQUEST;
    const usage: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0, cachedInputTokens: 0 };
    for (const step of [...this.committed.values(), ...this.recorded.values()]) {
      usage.inputTokens += step.usage.inputTokens;
      usage.outputTokens += step.usage.outputTokens;
      usage.cachedInputTokens = (usage.cachedInputTokens ?? 0) + step.usage.cachedInputTokens;
      usage.modelCalls += 1;
      usage.steps += 1;
      request = addRequest(request, step.request);
    }
    return { usage, request };
  }

  /** Whether a step row holds step `step`'s call (replayed, or committed by this attempt). */
  holds(step: number): boolean {
    return this.committed.has(step) || this.recorded.has(step);
  }

  /** The steps earlier attempts committed, which this attempt replays: what they loaded stays loaded (tool-catalogue.ts). */
  get earlierSteps(): readonly StepRecord[] {
    return this.deps.committed;
  }

  /** The committed step at `step`, when an earlier attempt made it. */
  replayed(step: number): StepRecord | undefined {
    return this.committed.get(step);
  }

  /**
   * Before the model call of `step` (the SDK's prepareStep): the results of the step before are committed first, and
   * `steered` (the inputs steered in now) is noted for the step's row.
   */
  async begin(step: number, steered: readonly string[]): Promise<void> {
    const before = step - 1;
    if (this.unsettled.has(before) && !this.effectful.has(before)) {
      this.deferred = { step: before, results: this.pending.get(before) ?? [] };
      this.unsettled.delete(before);
      this.pending.delete(before);
    } else {
      await this.settle(before);
    }
    this.current = step;
    this.steeredNow = [...steered];
  }

  /** When an earlier attempt committed step `step`'s answer, if it was cut before every result of it was committed. */
  resumedAt(step: number): number | undefined {
    const committed = this.committed.get(step);
    return committed && committed.settledAt === null ? committed.answeredAt : undefined;
  }

  /** The committed result of a tool call, when its step's results were committed (the tool is not run again). */
  recordedResult(step: number, toolCallId: string): StepToolResult | undefined {
    return this.committed.get(step)?.results?.find((result) => result.toolCallId === toolCallId);
  }

  /** A tool call of `step` answered: kept until the step's results are committed. */
  noteResult(step: number, result: StepToolResult, effects: boolean): void {
    if (!this.unsettled.has(step)) return;
    if (effects) this.effectful.add(step);
    const results = this.pending.get(step) ?? [];
    results.push(result);
    this.pending.set(step, results);
  }

  /** The model, its answers committed as steps (and committed steps answered from the store). */
  wrap(model: LanguageModelV3): LanguageModelV3 {
    return wrapLanguageModel({
      model,
      middleware: {
        specificationVersion: 'v3',
        wrapGenerate: async ({ doGenerate }) => {
          const step = this.current;
          const replay = this.committed.get(step);
          if (replay) return replayedResult(replay.response as RecordedResponse);
          const startedAt = this.deps.clock.now();
          const result = await doGenerate();
          const recorded: RecordedResponse = {
            content: result.content,
            finishReason: result.finishReason,
            providerMetadata: result.providerMetadata,
            response: metadataOf(result.response),
          };
          await this.record(step, recorded, result.usage, result.request?.body, startedAt);
          return result;
        },
        wrapStream: async ({ doStream }) => {
          const step = this.current;
          const replay = this.committed.get(step);
          if (replay) return { stream: replayedStream(replay.response as RecordedResponse) };
          const startedAt = this.deps.clock.now();
          const { stream, ...rest } = await doStream();
          return { ...rest, stream: stream.pipeThrough(this.committing(step, rest.request?.body, startedAt)) };
        },
      },
    });
  }

  /**
   * A streamed answer passes through as it comes, except its tool calls: they are held until the answer is complete
   * and committed, so that no tool starts before its step is in the store.
   */
  private committing(
    step: number,
    body: unknown,
    startedAt: number,
  ): TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart> {
    const content = new StreamedContent();
    const held: LanguageModelV3StreamPart[] = [];
    return new TransformStream({
      transform: async (part, controller) => {
        content.add(part);
        if (part.type === 'tool-call') {
          held.push(part);
          return;
        }
        if (part.type === 'finish') {
          const recorded: RecordedResponse = {
            content: content.parts(),
            finishReason: part.finishReason,
            providerMetadata: part.providerMetadata,
            response: content.metadata,
          };
          await this.record(step, recorded, part.usage, body, startedAt);
          for (const call of held) controller.enqueue(call);
        }
        controller.enqueue(part);
      },
    });
  }

  /** Commits a model answer as step `step` when it asked for tools (one that did not ends the run, whose commit holds it). */
  private async record(
    step: number,
    response: RecordedResponse,
    usage: LanguageModelV3Usage,
    body: unknown,
    startedAt: number,
  ): Promise<void> {
    const calls = response.content.filter((part) => part.type === 'tool-call' && !part.providerExecuted);
    if (calls.length === 0) return;
    const inputIds = step === 0 ? [...this.deps.inputIds, ...this.steeredNow] : this.steeredNow;
    const used: StepUsage = {
      inputTokens: usage.inputTokens.total ?? 0,
      outputTokens: usage.outputTokens.total ?? 0,
      cachedInputTokens: usage.inputTokens.cacheRead ?? 0,
    };
    const request = this.deps.measureRequest(body);
    try {
      const event = await this.deps.store.record(
        {
          runId: this.deps.runId,
          sessionKey: this.deps.sessionKey,
          epoch: this.deps.epoch,
          step,
          attempt: this.deps.attempt,
          model: this.deps.model,
          response,
          toolNames: calls.map((call) => (call.type === 'tool-call' ? call.toolName : '')),
          inputIds,
          usage: used,
          request,
          startedAt,
          previous: this.deferred,
        },
        this.deps.clock.now(),
      );
      this.deferred = undefined;
      this.recorded.set(step, { usage: used, request });
      this.unsettled.add(step);
      this.deps.published([event]);
    } catch (error) {
      if (SwitchboardError.isInstance(error) && error.code === 'LEASE_LOST') this.deps.fenced();
      throw error;
    }
  }

  /**
   * The run suspends while calls of `step` wait: the results its other calls gave are committed, so that the resume
   * runs again only the calls that wait (not an `exec` or a write that finished).
   */
  settleSoFar(step: number): Promise<void> {
    return this.settle(step, true);
  }

  /** The results the run's commit holds: those of steps it left to it (reads), and of any step not settled yet. */
  resultsForCommit(): { step: number; results: StepToolResult[] }[] {
    const left = [...this.unsettled].map((step) => ({ step, results: this.pending.get(step) ?? [] }));
    return this.deferred ? [this.deferred, ...left] : left;
  }

  /** Commits the results of `step`'s tool calls (with the ledger's rows of its side-effecting ones), once. */
  private async settle(step: number, partial = false): Promise<void> {
    if (!this.unsettled.has(step)) return;
    const results = this.pending.get(step) ?? [];
    const ledger = this.deps.ledgerCalls;
    const toolCalls = ledger ? ledger.filter((settled) => settled.call.step === step) : [];
    try {
      await this.deps.store.settle(
        { runId: this.deps.runId, epoch: this.deps.epoch, step, results, toolCalls, partial },
        this.deps.clock.now(),
      );
    } catch (error) {
      if (SwitchboardError.isInstance(error) && error.code === 'LEASE_LOST') this.deps.fenced();
      throw error;
    }
    if (!partial) {
      this.unsettled.delete(step);
      this.pending.delete(step);
    }
    // Settled now: the run's commit need not settle them again.
    if (ledger) for (const settled of toolCalls) ledger.splice(ledger.indexOf(settled), 1);
  }
}

function metadataOf(response: LanguageModelV3GenerateResult['response']): RecordedResponse['response'] {
  if (!response) return undefined;
  return { id: response.id, modelId: response.modelId, timestamp: response.timestamp?.toISOString() };
}

/** A committed answer as the model gives one, with no usage (it was counted when it was committed). */
function replayedResult(recorded: RecordedResponse): LanguageModelV3GenerateResult {
  return {
    content: recorded.content,
    finishReason: recorded.finishReason,
    usage: ZERO_USAGE,
    providerMetadata: recorded.providerMetadata,
    response: {
      id: recorded.response?.id,
      modelId: recorded.response?.modelId,
      timestamp: recorded.response?.timestamp ? new Date(recorded.response.timestamp) : undefined,
    },
    warnings: [],
  };
}

function replayedStream(recorded: RecordedResponse): ReadableStream<LanguageModelV3StreamPart> {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  recorded.content.forEach((part, index) => {
    const id = `replayed-${index}`;
    if (part.type === 'text' || part.type === 'reasoning') {
      const kind = part.type;
      parts.push(
        { type: `${kind}-start`, id, providerMetadata: part.providerMetadata },
        { type: `${kind}-delta`, id, delta: part.text },
        { type: `${kind}-end`, id, providerMetadata: part.providerMetadata },
      );
    } else {
      parts.push(part);
    }
  });
  parts.push({ type: 'finish', usage: ZERO_USAGE, finishReason: recorded.finishReason, providerMetadata: recorded.providerMetadata });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

/** A streamed answer put back together as the content a generated one has. */
class StreamedContent {
  private readonly content: LanguageModelV3Content[] = [];
  private readonly open = new Map<string, { type: 'text' | 'reasoning'; text: string; providerMetadata?: SharedV3ProviderMetadata }>();
  metadata: RecordedResponse['response'];

  add(part: LanguageModelV3StreamPart): void {
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start': {
        const entry = {
          type: part.type === 'text-start' ? ('text' as const) : ('reasoning' as const),
          text: '',
          providerMetadata: part.providerMetadata,
        };
        this.open.set(`${entry.type}:${part.id}`, entry);
        this.content.push(entry);
        return;
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const entry = this.open.get(`${part.type === 'text-delta' ? 'text' : 'reasoning'}:${part.id}`);
        if (entry) entry.text += part.delta;
        return;
      }
      case 'text-end':
      case 'reasoning-end': {
        const entry = this.open.get(`${part.type === 'text-end' ? 'text' : 'reasoning'}:${part.id}`);
        if (entry && part.providerMetadata) entry.providerMetadata = part.providerMetadata;
        return;
      }
      case 'tool-call':
      case 'source':
      case 'file':
      case 'tool-result':
      case 'tool-approval-request':
        this.content.push(part);
        return;
      case 'response-metadata':
        this.metadata = { id: part.id, modelId: part.modelId, timestamp: part.timestamp?.toISOString() };
        return;
      default:
    }
  }

  parts(): LanguageModelV3Content[] {
    return this.content.map((part) => (part.type === 'text' || part.type === 'reasoning' ? { ...part } : part));
  }
}
