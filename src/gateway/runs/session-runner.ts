/**
 * Runs one scheduled slot: creates the run row (claiming its inputs), assembles the context, executes
 * the tool loop, and commits everything the run produced in one transaction.
 */
import { conversationOf } from '../../core/hops.js';
import { NO_REQUEST } from '../../core/request-size.js';
import type { ModelMessage } from 'ai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SwitchboardError, errorMessage } from '../../core/errors.js';
import { isSpawnedKind, parseSessionKey } from '../../core/session-key.js';
import type { TerminalRunStatus } from '../../core/run-status.js';
import type {
  Clock,
  CommittedRun,
  EventRecord,
  RunCommit,
  IdGenerator,
  InputRecord,
  NewEvent,
  SessionRecord,
  RunUsage,
  SettledToolCall,
  StepRecord,
  Store,
  WaitDeadlines,
  SubagentRecord,
  TranscriptEntry,
  TraceContext,
  Tracing,
} from '../../ports/index.js';
import { formatTraceparent, traceScope } from '../../kit/trace-context.js';
import { endRunSpan, startRunSpan } from './run-telemetry.js';
import type { Models } from '../../ports/models.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import { REACHED_OUT } from '../../tools/tool-contract.js';
import type { GatewayTool } from '../../ports/tools.js';
import { assembleContext, renderInput, type PromptFileCache } from './context.js';
import type { EventBus } from '../events/event-bus.js';
import type { RunSlot } from './lanes.js';
import type { AgentRegistry } from '../agents/registry.js';
import type { ResolvedAgent } from '../../ports/gateway.js';
import { runWrites, type FinishedRun, type ReplyDelivery } from './run-commit.js';
import { parseRuntime } from './external-run.js';
import type { ExternalRuntimes, RuntimeQuestion } from '../../ports/runtimes.js';
import { executeRun } from './run-executor.js';
import { DurableSteps } from './durable-steps.js';
import { RunSuspension } from './run-waits.js';
import type { WaitingRuns } from './waiting-runs.js';
import { addRequest } from '../../core/request-size.js';
import type { ExecutedRun } from '../../ports/runtimes.js';
import { offeredTools, policyLayers } from '../tooling/tool-offer.js';
import { ApprovalGate, type ApprovalGateDeps } from '../gates/approval-gate.js';
import { BudgetMeter, runCaps, type BudgetMeterDeps, type MeterWaits, type RunSpender } from '../gates/budget-meter.js';
import { spawnerLimits } from '../subagents/subagents.js';

export interface SessionRunnerDeps {
  config: SwitchboardConfig;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  owner: string;
  /** How long a run's lease on its session lasts unless renewed (the scheduler renews it). */
  leaseTtlMs: number;
  agents: AgentRegistry;
  models: Models;
  /** The tools an agent's sessions may be offered (the tool policy then narrows them). */
  toolsFor(agentId: string): Promise<readonly GatewayTool[]>;
  promptFiles: PromptFileCache;
  bus: EventBus;
  /** False only in benchmarks that measure the ledger's cost. */
  toolLedger: boolean;
  /**
   * Called after every commit so the journal's new events are published (`events`: the ones the commit
   * wrote, when the store handed them back) and, when it wrote some, outbox rows delivered.
   */
  afterCommit: (wroteOutbox: boolean, events?: readonly EventRecord[]) => void;
  /** Called once a run has committed, with its outcome (settles the replies it waited for, stops a failed sub-agent's children, logs a failure). */
  onCommitted: (run: RunOutcomeReport) => Promise<void>;
  /** Called for an input dropped here (so an exchange waiting on it is told). */
  onDropped: (inputId: string) => Promise<void>;
  /** Why the workspace tools may not write a path for an agent now (extensions' write guards). */
  writeRefusal: (agentId: string, path: string) => Promise<string | undefined>;
  /** Which outbox kind delivers a reply to a channel, when one does (the mailbox's `reply:mailbox`). */
  replyDelivery: ReplyDelivery;
  /** Takes the config's secrets out of a run's error (a provider quoting the key it was given). */
  redact: (text: string) => string;
  /** The external runtimes sub-agents may run on (docs/runtimes.md), by kind. */
  runtimes: () => ExternalRuntimes;
  /** Runs suspended in waits: a run that suspends is listened for here. */
  waiting: Pick<WaitingRuns, 'suspended' | 'abort'>;
  /** Where calls an `ask` policy matches wait for approval. */
  approvals: ApprovalGateDeps;
  /** What model calls reserve and settle on their budgets. */
  budgets: BudgetMeterDeps;
  /** An external runtime's question for a person (gates.ts `askFor`). */
  askApproval: (
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    question: RuntimeQuestion,
  ) => Promise<{ approved: boolean; why: string }>;
  /** Journals an event and publishes it (an external child's updates). */
  journal: (event: NewEvent) => Promise<unknown>;
  /** Where the run's spans go (docs/observability.md). */
  tracing: Tracing;
  /** The gateway's log: a run whose commit its lost lease fenced off. */
  log: (level: 'warn', message: string, fields: Record<string, unknown>) => void;
}

/** A run as it committed: what the gateway does next, and logs, depends on it. */
export interface RunOutcomeReport {
  runId: string;
  sessionKey: string;
  agentId: string;
  status: TerminalRunStatus;
  /** Why it did not succeed (the provider's error, the timeout, the tool that threw). */
  error: string | null;
  /** Whether it started any tool call: only a tool call can leave results held for the run. */
  calledTools: boolean;
  /** The run's span: its failure's log line names it (the run keeps no trace scope for the log to read it from). */
  trace: TraceContext;
}

/** A run that has its lease and its inputs. */
interface LeasedRun {
  runId: string;
  epoch: number;
  model: string;
  agent: ResolvedAgent;
  subagent: SubagentRecord | undefined;
  /** The session as the start left it: its route is where the run's reply goes. */
  session: SessionRecord;
  inputs: InputRecord[];
  /** The history the run reads, when the store handed it back with the start (StartedRun.history). */
  history?: TranscriptEntry[];
  /** Whether the session has spawned anyone, and whether a reply is to come to it, when the start read them (the first step's tool offer uses them). */
  reachedOut?: { spawned: boolean; sent: boolean };
  /** 1, and one more for each resume. */
  attempt: number;
  /** When the run was first started (a resumed run's too). */
  startedAt: number;
  /** The steps earlier attempts committed (a resumed run): replayed, not asked again. */
  committed: StepRecord[];
  /**
   * A resumed run's inputs other than its own: those steered in before a committed step (replayed there), and any it
   * claimed after its last committed step (steered into its first new one).
   */
  steerable: InputRecord[];
  /** The deadlines of the calls it was suspended waiting in, when it resumed from a wait. */
  waitDeadlines: WaitDeadlines;
}

const NOTHING_RAN = { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0 };

/**
 * The run's approval gate, when its session's tool policy asks about any call, or when it resumes (its calls may have
 * asked before a reload took the pattern away); else none, and no call waits.
 */
function approvalGate(
  deps: ApprovalGateDeps,
  agent: ResolvedAgent,
  run: { sessionKey: string; runId: string; workspace: string | undefined; attempt: number },
): ApprovalGate | undefined {
  const layers = policyLayers(agent, deps.config, run.sessionKey);
  const resumed = run.attempt > 1;
  if (!resumed && !layers.some((layer) => layer.ask?.length)) return undefined;
  const { sessionKey, runId, workspace } = run;
  return new ApprovalGate(deps, { runId, sessionKey, agentId: agent.config.id, workspace, resumed }, layers);
}

/** The run's model, metered on the budgets it draws on (as it is, when no budget applies). */
function metered(
  deps: BudgetMeterDeps,
  model: LanguageModelV3,
  run: { runId: string; model: string; timeoutMs: number; signal: AbortSignal; waits?: MeterWaits; spender: RunSpender },
): LanguageModelV3 {
  const caps = runCaps(deps.config, run.spender, deps.clock.now());
  if (caps.length === 0) return model;
  const { spender, ...rest } = run;
  return new BudgetMeter(deps, { ...rest, sessionKey: spender.sessionKey, agentId: spender.agentId }, caps).wrap(model);
}

function sumUsage(a: RunUsage, b: RunUsage): RunUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    modelCalls: a.modelCalls + b.modelCalls,
    steps: a.steps + b.steps,
    cachedInputTokens: (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0),
  };
}

export function createSessionRunner(deps: SessionRunnerDeps) {
  const { store, clock, ids } = deps;

  /** Nothing can ever run these inputs: each is dropped with the reason, under the session's lease, instead of retried forever. */
  async function dropUnrunnable(slot: RunSlot, why: string): Promise<void> {
    const lease = await store.leases.acquire(slot.sessionKey, deps.owner, deps.leaseTtlMs);
    if (!lease) {
      slot.leasedElsewhere = true;
      return;
    }
    slot.epoch = lease.epoch;
    // A suspended run whose inputs these are can never resume either.
    if (slot.resumeRunId) await store.runs.abandon(slot.resumeRunId, `the run cannot resume: ${why}`, clock.now());
    const dropped = await store.inputs.drop(slot.inputIds, `dropped: ${why}`, clock.now());
    for (const inputId of dropped) {
      await store.events.append({ type: 'input.dropped', sessionKey: slot.sessionKey, payload: { inputId, note: why } }, clock.now());
      await deps.onDropped(inputId);
    }
    deps.afterCommit(false);
  }

  /**
   * Takes the session's lease and claims the slot's inputs in one transaction; undefined when another owner holds it or
   * an input was taken, `missing` when the session does not exist.
   */
  async function startRun(slot: RunSlot, agent: ResolvedAgent): Promise<LeasedRun | 'missing' | undefined> {
    const subagent = isSpawnedKind(parseSessionKey(slot.sessionKey)?.kind)
      ? await store.subagents.getBySession(slot.sessionKey)
      : undefined;
    // The first run of a sub-agent takes the run id sessions_spawn promised.
    const runId = subagent && subagent.runId === null ? subagent.firstRunId : ids.next();
    const model = subagent?.model ?? agent.model;
    const run = { id: runId, sessionKey: slot.sessionKey, agentId: agent.config.id, owner: deps.owner, leaseTtlMs: deps.leaseTtlMs, model };
    // A run in the gateway reads the session's history next; an external runtime's child keeps its own.
    const historyLimit = subagent?.runtime ? undefined : agent.historyLimit;
    const startedAt = clock.now();
    const started = await store.runs.start({ ...run, inputIds: slot.inputIds, subagentId: subagent?.id, historyLimit }, startedAt);
    if (started === 'leased') slot.leasedElsewhere = true;
    if (started === 'missing') return started;
    if (typeof started === 'string') return undefined;
    slot.epoch = started.epoch;
    slot.runId = runId;
    deps.afterCommit(false, started.events);
    const { history, reachedOut } = started;
    const { session, inputs } = started;
    return {
      runId,
      epoch: started.epoch,
      model,
      agent,
      subagent,
      session,
      inputs,
      history,
      reachedOut,
      attempt: 1,
      startedAt,
      committed: [],
      steerable: [],
      waitDeadlines: {},
    };
  }

  /**
   * Resumes a suspended run under its own id (ARCHITECTURE.md 4.7): its lease, its inputs claimed again, and the steps
   * its earlier attempts committed. Answers as `startRun` does.
   */
  async function resumeRun(slot: RunSlot, runId: string, agent: ResolvedAgent): Promise<LeasedRun | 'missing' | undefined> {
    const subagent = isSpawnedKind(parseSessionKey(slot.sessionKey)?.kind)
      ? await store.subagents.getBySession(slot.sessionKey)
      : undefined;
    const request = { runId, sessionKey: slot.sessionKey, owner: deps.owner, leaseTtlMs: deps.leaseTtlMs, subagentId: subagent?.id };
    const resumed = await store.runs.resume(request, clock.now());
    if (resumed === 'leased') slot.leasedElsewhere = true;
    // Still waiting: its wake resumes it. Nothing else of the session runs before it (its inputs go first).
    if (resumed === 'waiting') slot.queuedAfter = false;
    if (resumed === 'missing') return resumed;
    if (typeof resumed === 'string') return undefined;
    slot.epoch = resumed.epoch;
    slot.runId = runId;
    deps.afterCommit(false, resumed.events);
    // A cancel or an interrupt that came while it was suspended: it ends now, recorded as it would have been.
    if (resumed.abortRequested) slot.controller.abort(resumed.abortRequested);
    const committed = await store.steps.list(runId);
    // Step 0 names the run's own inputs; the rest were steered in.
    const own = new Set(committed[0]?.inputIds ?? resumed.inputs.map((input) => input.id));
    return {
      runId,
      epoch: resumed.epoch,
      model: resumed.run.model,
      agent,
      subagent,
      session: resumed.session,
      inputs: resumed.inputs.filter((input) => own.has(input.id)),
      attempt: resumed.run.attempt,
      startedAt: resumed.run.startedAt,
      committed,
      steerable: resumed.inputs.filter((input) => !own.has(input.id)),
      waitDeadlines: resumed.waitDeadlines,
    };
  }

  /** The tool loop, under the run's hard timeout. A failure before or in it (an unreadable prompt file, an unknown model) is the run's outcome. */
  async function execute(
    slot: RunSlot,
    run: LeasedRun,
    steered: InputRecord[],
    toolCalls: SettledToolCall[],
    trace: TraceContext,
  ): Promise<{ executed: ExecutedRun; frameworkChars: number; waits?: RunSuspension; durable?: DurableSteps }> {
    const { runId, epoch, agent, subagent, inputs } = run;
    const timeoutSeconds = subagent?.timeoutSeconds ?? agent.timeoutSeconds;
    const timeout = setTimeout(() => slot.controller.abort('timeout'), timeoutSeconds * 1000);
    let frameworkChars = 0;
    let durable: DurableSteps | undefined;
    const timeoutMessage = subagent
      ? `sub-agent run exceeded its timeout of ${timeoutSeconds}s (sessions_spawn timeoutSeconds, else ${spawnerLimits(deps.config, deps.agents, subagent.parentSession).source('runTimeoutSeconds')}) and was aborted`
      : undefined;
    try {
      // An external runtime's child is handed the run's trace (ACP's _meta): it runs in the run's trace scope.
      if (subagent?.runtime)
        return { executed: await traceScope.run(trace, () => runExternal(slot, run, subagent, timeoutMessage)), frameworkChars };
      const history = run.history ?? (await store.transcript.list(slot.sessionKey, { limit: agent.historyLimit }));
      const context = assembleContext(agent.config, deps.promptFiles.read(agent.workspace), history, inputs, subagent);
      frameworkChars = context.frameworkChars;
      const measureRequest = (body: unknown) => deps.models.measureRequest(body);
      // A run resumed replays what it committed even if its agent's durability changed since.
      durable =
        agent.durability === 'steps' || run.committed.length > 0
          ? new DurableSteps({
              store: store.steps,
              clock,
              runId,
              sessionKey: slot.sessionKey,
              epoch,
              attempt: run.attempt,
              model: run.model,
              measureRequest,
              committed: run.committed,
              inputIds: inputs.map((input) => input.id),
              fenced: () => slot.controller.abort('lease_lost'),
              published: (events) => deps.afterCommit(false, events),
              ledgerCalls: toolCalls,
            })
          : undefined;
      const waits = durable
        ? new RunSuspension({
            resumed: run.waitDeadlines,
            suspendAfterMs: deps.config.lanes.suspendWaitsAfterMs,
            watch: (keys) => {
              let seen = false;
              const stop = deps.bus.subscribeKeys(keys, () => {
                seen = true;
              });
              return { seen: () => seen, stop };
            },
            abort: () => slot.controller.abort('suspend'),
          })
        : undefined;
      const executed = await executeRun({
        model: metered(deps.budgets, deps.models.resolve(run.model), {
          runId,
          model: run.model,
          timeoutMs: timeoutSeconds * 1000,
          signal: slot.controller.signal,
          waits,
          spender: {
            agentId: agent.config.id,
            sessionKey: slot.sessionKey,
            rootSession: subagent?.rootSession ?? slot.sessionKey,
            provenance: inputs.map((input) => input.provenance),
          },
        }),
        measureRequest,
        durable,
        waits,
        system: context.system,
        messages: context.messages,
        ...offeredTools(agent, deps.config, await deps.toolsFor(agent.config.id), slot.sessionKey, subagent),
        gate: approvalGate(deps.approvals, agent, {
          sessionKey: slot.sessionKey,
          runId,
          workspace: subagent?.workdir ?? agent.workspace,
          attempt: run.attempt,
        }),
        toolContext: {
          runId,
          sessionKey: slot.sessionKey,
          agentId: agent.config.id,
          workspace: subagent?.workdir ?? agent.workspace,
          clock,
          conversation: conversationOf(inputs.map((input) => input.provenance)),
          writeRefusal: (path: string) => deps.writeRefusal(agent.config.id, path),
        },
        ledger: deps.toolLedger
          ? { store: store.toolCalls, scope: inputs[0]?.id ?? runId, sessionKey: slot.sessionKey, runId, settled: toolCalls }
          : undefined,
        timeoutMessage,
        firstStepLookups: run.reachedOut ? { [REACHED_OUT]: run.reachedOut } : undefined,
        // Read at each run, so that a reload of `tools` takes effect at the session's next run.
        defer: deps.config.tools.defer,
        maxSteps: agent.maxSteps,
        signal: slot.controller.signal,
        tracing: {
          tracing: deps.tracing,
          run: trace,
          runId,
          attempt: run.attempt,
          agentId: agent.config.id,
          sessionKey: slot.sessionKey,
          model: run.model,
          price: deps.config.models.prices[run.model],
        },
        takeSteered: async (step) => {
          const replayed = durable?.replayed(step);
          let taken: InputRecord[];
          if (replayed) {
            // Steered in before a committed step: in again at the same place, claimed already.
            taken = replayed.inputIds.flatMap((id) => run.steerable.filter((input) => input.id === id));
            run.steerable = run.steerable.filter((input) => !replayed.inputIds.includes(input.id));
          } else {
            const queued = (await store.inputs.listQueued(slot.sessionKey)).filter((input) => input.mode === 'steer');
            const offered = queued.map((input) => input.id);
            const claimed = new Set(await store.runs.claimMore(runId, slot.sessionKey, epoch, offered, clock.now()));
            // A resumed run's inputs claimed after its last committed step come first.
            taken = [...run.steerable.splice(0), ...queued.filter((input) => claimed.has(input.id))];
          }
          steered.push(...taken);
          const messages = taken.map((input): ModelMessage => ({ role: 'user', content: renderInput(input.text, input.provenance).text }));
          return { inputIds: taken.map((input) => input.id), messages };
        },
        onDelta: deps.bus.wantsDeltas(slot.sessionKey)
          ? (text) => deps.bus.publish({ type: 'delta', sessionKey: slot.sessionKey, runId, text })
          : undefined,
      });
      if (durable) {
        // The run's usage is that of every step it made, those of its earlier attempts too.
        const held = durable.usage();
        executed.usage = sumUsage(held.usage, executed.usage);
        executed.request = addRequest(held.request, executed.request);
      }
      return { executed, frameworkChars, waits, durable };
    } catch (error) {
      const failed: ExecutedRun = {
        status: 'failed',
        finalText: null,
        messages: [],
        // What its committed steps used is on the run already, and stays.
        usage: durable?.usage().usage ?? NOTHING_RAN,
        promptChars: 0,
        request: durable?.usage().request ?? NO_REQUEST,
        // Unknown: it may have made calls before it threw, so results it held are looked for.
        toolCalls: 1,
        error: { code: SwitchboardError.isInstance(error) ? error.code : 'INTERNAL', message: errorMessage(error) },
      };
      return { executed: failed, frameworkChars };
    } finally {
      clearTimeout(timeout);
    }
  }

  /** A sub-agent on an external runtime (an ACP agent, a CLI child): its child does the work; the commit is the same. */
  async function runExternal(
    slot: RunSlot,
    run: LeasedRun,
    subagent: SubagentRecord,
    timeoutMessage: string | undefined,
  ): Promise<ExecutedRun> {
    const parsed = parseRuntime(subagent.runtime ?? '');
    const runtime = parsed && deps.runtimes()[parsed.kind];
    if (!parsed || !runtime)
      throw new SwitchboardError(
        'RUNTIME_UNAVAILABLE',
        `runtime "${subagent.runtime}" is not available in this gateway (docs/runtimes.md)`,
      );
    const { runId } = run;
    // A runtime sub-agent is spawned only with a workdir (subagent-spawn.ts); an older row without one cannot run.
    if (!subagent.workdir) throw new SwitchboardError('RUNTIME_UNAVAILABLE', `sub-agent ${subagent.id} has no workdir to run in`);
    return runtime.run({
      runId,
      sessionKey: slot.sessionKey,
      agentId: run.agent.config.id,
      subagent,
      name: parsed.name,
      prompt: run.inputs.map((input) => input.text).join('\n\n'),
      workdir: subagent.workdir,
      signal: slot.controller.signal,
      timeoutMessage: timeoutMessage ?? '',
      report: async (updates) =>
        void (await deps.journal({ type: 'runtime.update', sessionKey: slot.sessionKey, runId, payload: { updates } })),
      delta: deps.bus.wantsDeltas(slot.sessionKey)
        ? (text) => deps.bus.publish({ type: 'delta', sessionKey: slot.sessionKey, runId, text })
        : undefined,
      writeRefusal: (path) => deps.writeRefusal(run.agent.config.id, path),
      askApproval: (question) =>
        deps.askApproval({ runId, sessionKey: slot.sessionKey, agentId: run.agent.config.id, signal: slot.controller.signal }, question),
    });
  }

  /** The run suspends in its waits: no lane slot and no memory until an event it waits on comes, or a deadline. */
  async function suspend(slot: RunSlot, run: LeasedRun, waits: RunSuspension): Promise<void> {
    const wait = waits.wait(run.runId, slot.sessionKey);
    try {
      const { events } = await store.runs.suspend({ ...wait, epoch: run.epoch }, clock.now());
      slot.leaseReleased = true;
      // Its own inputs are queued again for it: the lane need not look until the wait ends.
      slot.queuedAfter = false;
      deps.afterCommit(false, events);
      // A cancel or an interrupt that came while it suspended ends it now (its abort found the run aborted already).
      if (slot.asked) await deps.waiting.abort(wait, slot.asked);
      else await deps.waiting.suspended(wait, () => waits.seen());
    } catch (error) {
      if (!(SwitchboardError.isInstance(error) && error.code === 'LEASE_LOST')) throw error;
      deps.log('warn', `suspend refused: ${error.message}; the gateway that holds the session now runs its inputs`, {
        sessionKey: slot.sessionKey,
        runId: run.runId,
      });
    } finally {
      waits.stopWatching();
    }
  }

  /** The run's one commit, fenced by its lease's epoch; false when another owner took the session meanwhile. */
  async function commit(
    slot: RunSlot,
    run: LeasedRun,
    finished: FinishedRun,
    frameworkChars: number,
    toolCalls: SettledToolCall[],
    trace: TraceContext,
    stepResults?: RunCommit['stepResults'],
  ): Promise<boolean> {
    const { executed } = finished;
    const writes = runWrites(finished, ids, deps.replyDelivery);
    const { subagent } = run;
    const settles = subagent
      ? {
          subagent: {
            id: subagent.id,
            error: executed.error?.message ?? null,
            maxResultChars: spawnerLimits(deps.config, deps.agents, subagent.parentSession).maxResultChars,
          },
        }
      : {};
    let committed: CommittedRun;
    try {
      const outcome = {
        status: executed.status,
        usage: executed.usage,
        preambleChars: frameworkChars,
        promptChars: executed.promptChars,
        request: executed.request,
        finalText: executed.finalText,
        errorCode: executed.error?.code ?? null,
        errorMessage: executed.error?.message ?? null,
      };
      const consumedInputIds = writes.consumed.map((input) => input.id);
      committed = await store.runs.commit(
        {
          runId: run.runId,
          sessionKey: slot.sessionKey,
          epoch: run.epoch,
          outcome,
          ...writes,
          consumedInputIds,
          toolCalls,
          trace: formatTraceparent(trace),
          ...(stepResults?.length ? { stepResults } : {}),
          ...settles,
        },
        clock.now(),
      );
      slot.leaseReleased = true;
      slot.queuedAfter = committed.queued;
    } catch (error) {
      if (!(SwitchboardError.isInstance(error) && error.code === 'LEASE_LOST')) throw error;
      // Fenced off: another owner has the session; recovery of that owner's view decides. A gateway that was paused or
      // cut off past its lease learns it here, and its operator from this line.
      deps.log('warn', `commit refused: ${error.message}; the gateway that holds the session now runs its inputs`, {
        sessionKey: slot.sessionKey,
        runId: run.runId,
        epoch: run.epoch,
      });
      deps.afterCommit(false);
      return false;
    }
    // A commit without outbox rows (no exchange step, no sub-agent completion) gives the outbox nothing to do.
    deps.afterCommit(writes.outbox.length > 0 || subagent !== undefined, committed.events);
    deps.bus.publish({
      type: 'settled',
      sessionKey: slot.sessionKey,
      inputIds: writes.consumed.map((input) => input.id),
      run: committed.run,
    });
    return true;
  }

  return async function runSession(slot: RunSlot): Promise<void> {
    const missing = `session ${slot.sessionKey} does not exist`;
    // A session's key names its agent; the start reads the session itself.
    const agentId = parseSessionKey(slot.sessionKey)?.agentId ?? (await store.sessions.get(slot.sessionKey))?.agentId;
    if (!agentId) return dropUnrunnable(slot, missing);
    if (!deps.agents.has(agentId)) return dropUnrunnable(slot, `agent "${agentId}" is no longer configured (agents.list)`);
    const agent = deps.agents.get(agentId);
    const run = slot.resumeRunId ? await resumeRun(slot, slot.resumeRunId, agent) : await startRun(slot, agent);
    if (run === 'missing') return dropUnrunnable(slot, missing);
    if (!run) return;
    const steered: InputRecord[] = [];
    const toolCalls: SettledToolCall[] = [];
    const { trace: runTrace, span } = startRunSpan(deps.tracing, { ...run, sessionKey: slot.sessionKey, agentId });
    const trace = runTrace.context;
    // No trace scope around the run: a run that calls no tool takes none (an AsyncLocalStorage scope would cost every
    // await of the run on Node 20). Each tool call has its own (run-telemetry.ts), and the commit names the run's span
    // on its outbox rows itself.
    const { executed, frameworkChars, waits, durable } = await execute(slot, run, steered, toolCalls, trace);
    if (executed.error) executed.error = { ...executed.error, message: deps.redact(executed.error.message) };
    // Shutdown and lease loss leave the run uncommitted: recovery requeues its inputs.
    const reason = slot.controller.signal.reason;
    if (slot.controller.signal.aborted && reason === 'lease_lost')
      deps.log(
        'warn',
        `run ${run.runId} on ${slot.sessionKey} lost its lease (epoch ${run.epoch}: a renewal was refused, another gateway took the session over); its results were not committed, and the gateway that holds the session now runs its inputs`,
        { sessionKey: slot.sessionKey, runId: run.runId, epoch: run.epoch, trace_id: trace.traceId, span_id: trace.spanId },
      );
    if (slot.controller.signal.aborted && (reason === 'shutdown' || reason === 'lease_lost')) return;
    if (slot.controller.signal.aborted && reason === 'suspend' && waits?.suspending) return suspend(slot, run, waits);
    const finished = { runId: run.runId, session: run.session, inputs: run.inputs, steered, executed, trace: runTrace };
    if (!(await commit(slot, run, finished, frameworkChars, toolCalls, trace, durable?.resultsForCommit()))) return;
    endRunSpan(span, executed, deps.tracing.captureContent && trace.sampled);
    await deps.onCommitted({
      runId: run.runId,
      sessionKey: slot.sessionKey,
      agentId: run.agent.config.id,
      status: executed.status,
      error: executed.error?.message ?? null,
      calledTools: executed.toolCalls > 0,
      trace,
    });
  };
}
