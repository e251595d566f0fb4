/**
 * The tools of one run as the AI SDK sees them. Every tool the session has is in the SDK's set, each call
 * checked against its schema and, for a tool with effects, run through the ledger at its place (the model step
 * and its index in the step); a tool the session may not use answers its refusal. Only the tools on offer are
 * sent to the model: a model wrapper takes the others out of each request, so a call the model makes anyway
 * is still run (an allowed tool does its own checks) instead of failing as "unavailable".
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { jsonSchema, tool, wrapLanguageModel, type ToolSet } from 'ai';
import type { ApprovalRecord, NewToolCall, StepToolResult } from '../../ports/index.js';
import { errorMessage } from '../../core/errors.js';
import { waitScope, WaitSuspended, type WaitScope } from '../../kit/wait-until.js';
import { parseToolArgs, toolJsonSchema } from '../../tools/tool-contract.js';
import type { AvailabilityContext, EarlierEffect, GatewayTool, ToolContext } from '../../ports/tools.js';
import { throughLedger, type LedgerDeps } from './tool-ledger.js';
import type { RefusedTool } from './tool-offer.js';
import { CATALOGUE_TOOL, type ToolCatalogue } from './tool-catalogue.js';

/** Where a run's tool results are committed as its steps' (runs/durable-steps.ts), and found again on resume. */
export interface StepResults {
  /** The committed result of a call, when an earlier attempt committed it: the tool is not run again. */
  recordedResult(step: number, toolCallId: string): StepToolResult | undefined;
  /** When an earlier attempt's answer of `step` was committed, if that attempt was cut before all its results were. */
  resumedAt(step: number): number | undefined;
  /** `effects`: the tool has effects (its result is committed before the next model call, not with the next step). */
  noteResult(step: number, result: StepToolResult, effects: boolean): void;
}

/** Where a run's waits may suspend it (ARCHITECTURE.md 4.7): the scope each call's waits run in, and what a suspension does. */
export interface RunWaits {
  scope(position: { step: number; index: number }): WaitScope;
  /** A call's wait suspended: the run suspends once the step's other calls are done (every other wait of it with it). */
  suspended(position: { step: number; index: number }, suspension: WaitSuspended): void;
  /** Whether a wait of the run suspended. */
  readonly suspending: boolean;
  /** Aborts the run with `suspend`. */
  abortNow(): void;
}

/** What the gate says of a call: run it (with these arguments, approved by this request when one was asked), or answer it with this instead. */
export type GateVerdict = { run: Record<string, unknown>; approval?: ApprovalRecord } | { answer: unknown };

/** Where a call may have to wait for a person's approval first (gates/approval-gate.ts). */
export interface ToolGate {
  check(
    tool: GatewayTool,
    args: Record<string, unknown>,
    call: { position: { step: number; index: number }; toolCallId: string; signal: AbortSignal },
  ): Promise<GateVerdict>;
}

/** Runs one call in its telemetry span (runs/run-telemetry.ts): what it writes names that span as its sender. */
export type ToolSpanning = <T>(
  call: { tool: string; effects: boolean; step: number; index: number; toolCallId: string; args: unknown },
  work: () => Promise<T>,
) => Promise<T>;

export interface RunToolsOptions {
  tools: readonly GatewayTool[];
  inSpan?: ToolSpanning;
  steps?: StepResults;
  waits?: RunWaits;
  refusedTools?: readonly RefusedTool[];
  gate?: ToolGate;
  toolContext: Omit<ToolContext, 'toolCallId' | 'idempotencyKey' | 'call' | 'signal'>;
  ledger?: LedgerDeps;
  signal: AbortSignal;
}

/** Where calls stand in the run: the SDK starts a step's calls in the order the model made them, after prepareStep for that step. */
export class CallPlaces {
  /** Tool calls the run started (finished or not). */
  started = 0;
  /** The step the run is at. */
  step = 0;
  private index = 0;

  beginStep(step: number): void {
    this.step = step;
    this.index = 0;
  }

  next(): { step: number; index: number } {
    this.started += 1;
    return { step: this.step, index: this.index++ };
  }
}

export function runToolSet(options: RunToolsOptions, places: CallPlaces): ToolSet {
  const tools: ToolSet = {};
  for (const gatewayTool of options.tools) {
    tools[gatewayTool.name] = tool({
      description: gatewayTool.description,
      inputSchema: jsonSchema((gatewayTool.shownSchema ?? toolJsonSchema(gatewayTool.parameters)) as never),
      execute: async (args: unknown, { toolCallId, abortSignal }) => {
        const position = places.next();
        const steps = options.steps;
        const recorded = steps?.recordedResult(position.step, toolCallId);
        if (recorded) {
          if (recorded.error !== undefined) throw new Error(recorded.error);
          return recorded.output;
        }
        const call = { args, toolCallId, signal: abortSignal ?? options.signal, position, resumedAt: steps?.resumedAt(position.step) };
        const waits = options.waits;
        const toolName = gatewayTool.name;
        const work = () =>
          waits ? waitScope.run(waits.scope(position), () => runCall(options, gatewayTool, call)) : runCall(options, gatewayTool, call);
        const spanned = { tool: toolName, effects: gatewayTool.effects === true, ...position, toolCallId, args };
        try {
          const output = options.inSpan ? await options.inSpan(spanned, work) : await work();
          steps?.noteResult(position.step, { toolCallId, toolName, output }, gatewayTool.effects === true);
          return output;
        } catch (error) {
          // A wait that suspends the run has no result: the call is made again when the run resumes.
          if (waits && error instanceof WaitSuspended) waits.suspended(position, error);
          else steps?.noteResult(position.step, { toolCallId, toolName, error: errorMessage(error) }, gatewayTool.effects === true);
          throw error;
        }
      },
    });
  }
  for (const refused of options.refusedTools ?? []) {
    tools[refused.name] = tool({ description: '', inputSchema: jsonSchema({ type: 'object' }), execute: async () => refused.refusal });
  }
  return tools;
}

/** One call of a tool: its arguments checked, then run, through the ledger at its place when it has effects. */
async function runCall(
  options: RunToolsOptions,
  gatewayTool: GatewayTool,
  {
    args,
    toolCallId,
    signal,
    position,
    resumedAt,
  }: { args: unknown; toolCallId: string; signal: AbortSignal; position: { step: number; index: number }; resumedAt?: number },
): Promise<unknown> {
  // Checked here, against the schema the model was shown: a bad argument is data the model can correct.
  const parsed = gatewayTool.shownSchema ? ownArgs(args) : parseToolArgs(gatewayTool.parameters, args);
  if (!parsed.ok) return { status: 'error', code: 'INVALID_REQUEST', error: parsed.error };
  if (options.gate) {
    const verdict = await options.gate.check(gatewayTool, parsed.value, { position, toolCallId, signal });
    if ('answer' in verdict) return verdict.answer;
    const output = await runChecked(options, gatewayTool, verdict.run, { toolCallId, signal, position, resumedAt });
    // The model is told what ran when a person changed its arguments.
    const approval = verdict.approval;
    if (approval?.editedArgs == null || typeof output !== 'object' || output === null || Array.isArray(output)) return output;
    return { ...output, approval: { id: approval.id, by: approval.decidedBy, note: approval.note, ranWith: verdict.run } };
  }
  return runChecked(options, gatewayTool, parsed.value, { toolCallId, signal, position, resumedAt });
}

/** A call whose arguments are checked (and approved where they had to be): through the ledger at its place when it has effects. */
async function runChecked(
  options: RunToolsOptions,
  gatewayTool: GatewayTool,
  args: Record<string, unknown>,
  {
    toolCallId,
    signal,
    position,
    resumedAt,
  }: { toolCallId: string; signal: AbortSignal; position: { step: number; index: number }; resumedAt?: number },
): Promise<unknown> {
  const context = { ...options.toolContext, toolCallId, signal, ...(resumedAt === undefined ? {} : { resumedAt }) };
  const ledger = options.ledger;
  const call = (idempotencyKey: string, ledgerRow?: NewToolCall) =>
    gatewayTool.execute(args, {
      ...context,
      idempotencyKey,
      call: ledgerRow,
      beginEffect: ledger && ledgerRow ? (intent) => beginEffect(ledger, ledgerRow, intent, context.clock.now()) : undefined,
    });
  if (!gatewayTool.effects || !ledger) return call(`${options.toolContext.runId}:${toolCallId}`);
  return throughLedger(ledger, gatewayTool, position, args, call);
}

/** The arguments of a tool that checks its own: any object. */
function ownArgs(args: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (args === undefined || args === null) return { ok: true, value: {} };
  if (typeof args === 'object' && !Array.isArray(args)) return { ok: true, value: args as Record<string, unknown> };
  return { ok: false, error: 'the arguments must be an object' };
}

async function beginEffect(ledger: LedgerDeps, call: NewToolCall, intent: unknown, now: number): Promise<EarlierEffect | undefined> {
  const { record, earlier } = await ledger.store.begin(call, intent, now);
  return earlier ? { state: record.state, recorded: record.result } : undefined;
}

/** An availability check's context for one step: each lookup is made once (`primed` ones are answered already). */
export function availabilityContext(
  session: Pick<AvailabilityContext, 'sessionKey' | 'agentId' | 'workspace'>,
  primed?: Record<string, unknown>,
): AvailabilityContext {
  const lookups = new Map<string, Promise<unknown>>(Object.entries(primed ?? {}).map(([key, value]) => [key, Promise.resolve(value)]));
  return {
    ...session,
    once: <T>(key: string, lookup: () => Promise<T>) => {
      if (!lookups.has(key)) lookups.set(key, lookup());
      return lookups.get(key) as Promise<T>;
    },
  };
}

/**
 * The names of the tools a step offers (before the catalogue holds back the deferred ones not loaded yet): those
 * without an availability check, those in `known` (a check that said yes once), and each other one whose check says
 * yes now. A check that fails says no.
 */
export async function availableTools(
  tools: readonly GatewayTool[],
  session: AvailabilityContext,
  known: ReadonlySet<string> = new Set(),
): Promise<Set<string>> {
  const available = new Set<string>();
  for (const candidate of tools) {
    if (!candidate.available || known.has(candidate.name) || (await candidate.available(session).catch(() => false)))
      available.add(candidate.name);
  }
  return available;
}

/**
 * Which tools are on offer: those without an availability check, and each other one from the first step it says
 * yes; of the deferred ones, only those loaded, the rest named in the catalogue tool's description.
 */
export class ToolOffer {
  private readonly ready: Set<string>;
  private offered = new Set<string>();
  private pending: string[] = [];

  constructor(
    private readonly tools: readonly GatewayTool[],
    private readonly session: Pick<AvailabilityContext, 'sessionKey' | 'agentId' | 'workspace'>,
    private readonly catalogue?: ToolCatalogue,
    /** Lookups answered already for the first step (read with the run's start). */
    private primed?: Record<string, unknown>,
  ) {
    this.ready = new Set(tools.filter((candidate) => !candidate.available).map((candidate) => candidate.name));
  }

  /** Asked at each step: a check that says yes once is not asked again; lookups are shared within the step. */
  async refresh(): Promise<void> {
    const session = availabilityContext(this.session, this.primed);
    // Later steps look again: the run may have changed the answers.
    this.primed = undefined;
    for (const name of await availableTools(this.tools, session, this.ready)) this.ready.add(name);
    this.pending = this.catalogue?.pending(this.ready) ?? [];
    const waiting = new Set(this.pending);
    this.offered = new Set(
      this.tools
        .filter((candidate) => this.ready.has(candidate.name) && !waiting.has(candidate.name))
        .filter((candidate) => candidate.name !== CATALOGUE_TOOL || waiting.size > 0)
        .map((candidate) => candidate.name),
    );
  }

  /** The model, sent only the tools on offer at each call; the catalogue tool names the deferred ones still to load. */
  wrap(model: LanguageModelV3): LanguageModelV3 {
    return wrapLanguageModel({
      model,
      middleware: {
        specificationVersion: 'v3',
        transformParams: async ({ params }) => {
          const sent = params.tools
            ?.filter((candidate) => this.offered.has(candidate.name))
            .map((candidate) =>
              candidate.name === CATALOGUE_TOOL && this.catalogue
                ? { ...candidate, description: this.catalogue.description(this.pending) }
                : candidate,
            );
          if (!sent?.length) return { ...params, tools: undefined, toolChoice: undefined };
          // "auto" is what every provider does with tools when no tool_choice is sent: 21 bytes a call less.
          return { ...params, tools: sent, toolChoice: params.toolChoice?.type === 'auto' ? undefined : params.toolChoice };
        },
      },
    });
  }
}
