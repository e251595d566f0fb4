/**
 * Runs one scheduled slot: creates the run row (claiming its inputs), assembles the context, executes
 * the tool loop, and commits everything the run produced in one transaction.
 */
import { NO_REQUEST } from '../models/request-size.js';
import type { ModelMessage } from 'ai';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { parseSessionKey } from '../core/session-key.js';
import type { TerminalRunStatus } from '../core/run-status.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  InputRecord,
  NewEvent,
  NewTranscriptEntry,
  CommittedRun,
  SettledToolCall,
  Store,
} from '../ports/index.js';
import type { ModelRegistry } from '../models/model-registry.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { GatewayTool } from './tool-contract.js';
import { assembleContext, renderInput, type PromptFileCache } from './context.js';
import type { EventBus } from './event-bus.js';
import { ANNOUNCE_SKIP, exchangeStepRow } from './exchanges.js';
import type { RunSlot } from './lanes.js';
import type { AgentRegistry } from './registry.js';
import { executeRun, type ExecutedRun } from './run-executor.js';
import { offeredTools } from './tool-offer.js';
import { spawnerLimits } from './subagents.js';

export interface SessionRunnerDeps {
  config: SwitchboardConfig;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  owner: string;
  /** How long a run's lease on its session lasts unless renewed (the scheduler renews it). */
  leaseTtlMs: number;
  agents: AgentRegistry;
  models: ModelRegistry;
  tools: readonly GatewayTool[];
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
}

/** The conversation (and its deepest hop) that a run's inter-session inputs belong to. */
export function conversationOf(inputs: readonly InputRecord[]): { id: string; hop: number } | undefined {
  let found: { id: string; hop: number } | undefined;
  for (const { provenance } of inputs) {
    if (provenance.conversationId && (!found || (provenance.hop ?? 0) > found.hop))
      found = { id: provenance.conversationId, hop: provenance.hop ?? 0 };
  }
  return found;
}

/** Inputs whose run answers another session rather than the session's own channel. */
const answersAnotherSession = (input: InputRecord) => input.provenance.exchange !== undefined && input.provenance.exchange.step !== 'reply';

export function createSessionRunner(deps: SessionRunnerDeps) {
  const { store, clock, ids } = deps;

  return async function runSession(slot: RunSlot): Promise<void> {
    const session = await store.sessions.get(slot.sessionKey);
    const agentId = session?.agentId ?? parseSessionKey(slot.sessionKey)?.agentId;
    if (!session || !agentId || !deps.agents.has(agentId)) {
      // Nothing can ever run these: say so on each input instead of retrying forever, under the session's lease.
      const lease = await store.leases.acquire(slot.sessionKey, deps.owner, deps.leaseTtlMs);
      if (!lease) {
        slot.leasedElsewhere = true;
        return;
      }
      slot.epoch = lease.epoch;
      const why = !session ? `session ${slot.sessionKey} does not exist` : `agent "${agentId}" is no longer configured (agents.list)`;
      const dropped = await store.inputs.drop(slot.inputIds, `dropped: ${why}`, clock.now());
      for (const inputId of dropped) {
        await store.events.append({ type: 'input.dropped', sessionKey: slot.sessionKey, payload: { inputId, note: why } }, clock.now());
        await deps.onDropped(inputId);
      }
      deps.afterCommit(false);
      return;
    }
    const agent = deps.agents.get(agentId);
    const subagent =
      parseSessionKey(slot.sessionKey)?.kind === 'subagent' ? await store.subagents.getBySession(slot.sessionKey) : undefined;
    // The first run of a sub-agent takes the run id sessions_spawn promised.
    const runId = subagent && subagent.runId === null ? subagent.firstRunId : ids.next();
    const model = subagent?.model ?? agent.model;
    const started = await store.runs.start(
      {
        id: runId,
        sessionKey: slot.sessionKey,
        agentId: agent.config.id,
        owner: deps.owner,
        leaseTtlMs: deps.leaseTtlMs,
        model,
        inputIds: slot.inputIds,
        subagentId: subagent?.id,
      },
      clock.now(),
    );
    if (started === 'leased') slot.leasedElsewhere = true;
    if (typeof started === 'string') return;
    slot.epoch = started.epoch;
    deps.afterCommit(false, started.events);
    const { inputs, epoch } = started;
    slot.runId = runId;

    const steered: InputRecord[] = [];
    const toolCalls: SettledToolCall[] = [];
    const timeoutSeconds = subagent?.timeoutSeconds ?? agent.timeoutSeconds;
    const timeout = setTimeout(() => slot.controller.abort('timeout'), timeoutSeconds * 1000);

    // From here on a failure (an unreadable workspace file, an unknown model) is the run's outcome.
    let frameworkChars = 0;
    let executed: ExecutedRun;
    try {
      const history = await store.transcript.list(slot.sessionKey, { limit: agent.historyLimit });
      const context = assembleContext(agent.config, deps.promptFiles.read(agent.workspace), history, inputs, subagent);
      frameworkChars = context.frameworkChars;
      executed = await executeRun({
        model: deps.models.resolve(model),
        system: context.system,
        messages: context.messages,
        ...offeredTools(agent, deps.config, deps.tools, slot.sessionKey, subagent),
        toolContext: {
          runId,
          sessionKey: slot.sessionKey,
          agentId: agent.config.id,
          workspace: subagent?.workdir ?? agent.workspace,
          clock,
          conversation: conversationOf(inputs),
        },
        ledger: deps.toolLedger
          ? { store: store.toolCalls, scope: inputs[0]?.id ?? runId, sessionKey: slot.sessionKey, runId, settled: toolCalls }
          : undefined,
        timeoutMessage: subagent
          ? `sub-agent run exceeded its timeout of ${timeoutSeconds}s (sessions_spawn timeoutSeconds, else ${spawnerLimits(deps.config, deps.agents, subagent.parentSession).source('runTimeoutSeconds')}) and was aborted`
          : undefined,
        maxSteps: agent.maxSteps,
        signal: slot.controller.signal,
        takeSteered: async () => {
          const queued = (await store.inputs.listQueued(slot.sessionKey)).filter((input) => input.mode === 'steer');
          const claimed = new Set(
            await store.runs.claimMore(
              runId,
              slot.sessionKey,
              epoch,
              queued.map((input) => input.id),
              clock.now(),
            ),
          );
          const taken = queued.filter((input) => claimed.has(input.id));
          steered.push(...taken);
          return taken.map((input): ModelMessage => ({ role: 'user', content: renderInput(input.text, input.provenance).text }));
        },
        onDelta: deps.bus.wantsDeltas(slot.sessionKey)
          ? (text) => deps.bus.publish({ type: 'delta', sessionKey: slot.sessionKey, runId, text })
          : undefined,
      });
    } catch (error) {
      executed = {
        status: 'failed' as const,
        finalText: null,
        messages: [],
        usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, steps: 0 },
        promptChars: 0,
        request: NO_REQUEST,
        // Unknown: it may have made calls before it threw, so results it held are looked for.
        toolCalls: 1,
        error: { code: SwitchboardError.isInstance(error) ? error.code : 'INTERNAL', message: errorMessage(error) },
      };
    } finally {
      clearTimeout(timeout);
    }

    // Shutdown and lease loss leave the run uncommitted: recovery requeues its inputs.
    const reason = slot.controller.signal.reason;
    if (slot.controller.signal.aborted && (reason === 'shutdown' || reason === 'lease_lost')) return;

    const transcript: NewTranscriptEntry[] = inputs.map((input) => ({
      role: 'user',
      content: input.text,
      provenance: input.provenance,
      inputId: input.id,
      runId,
    }));
    let steeredIndex = 0;
    for (const message of executed.messages) {
      if (message.role === 'user') {
        const input = steered[steeredIndex++];
        transcript.push({ role: 'user', content: input.text, provenance: input.provenance, inputId: input.id, runId });
      } else if (message.role === 'assistant' || message.role === 'tool') {
        transcript.push({ role: message.role, content: message.content, provenance: null, inputId: null, runId });
      }
    }
    if (executed.status !== 'succeeded' && executed.error) {
      transcript.push({
        role: 'note',
        content: `run ${executed.status}: ${executed.error.message}`,
        provenance: null,
        inputId: null,
        runId,
      });
    }
    const all = [...inputs, ...steered];
    const consumed = all.map((input) => input.id);
    const events: NewEvent[] = [
      {
        type: 'run.completed',
        sessionKey: slot.sessionKey,
        runId,
        payload: {
          status: executed.status,
          inputIds: consumed,
          finalText: executed.finalText,
          error: executed.error ?? null,
          usage: executed.usage,
        },
      },
    ];
    // The reply to the session's channel is written with the commit (the CLI and control-API channels read
    // it from the journal). A run that only answers another session (a sessions_send request or a
    // ping-pong turn) posts nothing to the channel; an announce step posts unless it says ANNOUNCE_SKIP.
    const text = executed.finalText?.trim() ?? '';
    const forChannel =
      all.some((input) => !answersAnotherSession(input)) ||
      (all.some((input) => input.provenance.exchange?.step === 'announce') && text !== ANNOUNCE_SKIP);
    if (executed.status === 'succeeded' && text && session.route && forChannel) {
      events.push({
        type: 'session.reply',
        sessionKey: slot.sessionKey,
        runId,
        payload: { route: session.route, text: executed.finalText, runId, idempotencyKey: `reply:${runId}` },
      });
    }
    const outbox = all.flatMap((input) => {
      const row = exchangeStepRow(
        input,
        { runId, status: executed.status, text: executed.finalText, error: executed.error?.message ?? null },
        ids.next(),
      );
      return row ? [row] : [];
    });
    let committed: CommittedRun;
    try {
      committed = await store.runs.commit(
        {
          runId,
          sessionKey: slot.sessionKey,
          epoch,
          outcome: {
            status: executed.status,
            usage: executed.usage,
            preambleChars: frameworkChars,
            promptChars: executed.promptChars,
            request: executed.request,
            finalText: executed.finalText,
            errorCode: executed.error?.code ?? null,
            errorMessage: executed.error?.message ?? null,
          },
          transcript,
          consumedInputIds: consumed,
          outbox,
          events,
          toolCalls,
          ...(subagent
            ? {
                subagent: {
                  id: subagent.id,
                  error: executed.error?.message ?? null,
                  maxResultChars: spawnerLimits(deps.config, deps.agents, subagent.parentSession).maxResultChars,
                },
              }
            : {}),
        },
        clock.now(),
      );
      slot.leaseReleased = true;
    } catch (error) {
      if (!(SwitchboardError.isInstance(error) && error.code === 'LEASE_LOST')) throw error;
      // Fenced off: another owner has the session; recovery of that owner's view decides.
      deps.afterCommit(false);
      return;
    }
    // A commit without outbox rows (no exchange step, no sub-agent completion) gives the outbox nothing to do.
    deps.afterCommit(outbox.length > 0 || subagent !== undefined, committed.events);
    deps.bus.publish({ type: 'settled', sessionKey: slot.sessionKey, inputIds: consumed, run: committed.run });
    await deps.onCommitted({
      runId,
      sessionKey: slot.sessionKey,
      agentId: agent.config.id,
      status: executed.status,
      error: executed.error?.message ?? null,
      calledTools: executed.toolCalls > 0,
    });
  };
}
