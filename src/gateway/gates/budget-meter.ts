/**
 * Budgets (docs/gates.md): each model call of a run reserves its most (its input's estimate and its output limit) on
 * every cap the run draws on before it is sent, and settles what it used after. Parallel runs under one cap therefore
 * overshoot it by at most one reservation each. At a cap the call fails with BUDGET_EXCEEDED, or (budgets.onLimit:
 * ask) waits for a person to raise the cap, as an approval request that suspends the run like any other wait.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';
import { SwitchboardError } from '../../core/errors.js';
import { parseSessionKey } from '../../core/session-key.js';
import { backoffDelay, sleep } from '../../kit/retry.js';
import { ANONYMOUS_PEER, type SwitchboardConfig } from '../../config/schema.js';
import type { BudgetLimit } from '../../config/schema-gates.js';
import type {
  BudgetAmount,
  BudgetCap,
  BudgetReservation,
  BudgetStore,
  Clock,
  EventRecord,
  NewEvent,
  Provenance,
} from '../../ports/index.js';
import { waitScope, WaitSuspended, type WaitScope } from '../../kit/wait-until.js';
import { onStreamFinish } from '../../models/stream-finish.js';

/** A model call's reservation: its id and what it holds on each cap. */
interface Held {
  id: string;
  amount: BudgetAmount;
}

const NOTHING: BudgetAmount = { tokens: 0, costMicros: 0 };

/** A person's answer to a request to raise a cap: raised, or why not (who denied it, or that it expired). */
export interface RaiseAnswer {
  raised: boolean;
  why: string;
}

/** How a call waits for the calls under way on a full cap to settle (their reservations lapse at the latest at their expiry). */
const HELD_BACK = { baseDelayMs: 50, maxDelayMs: 1000 };

/** Characters per token when a prompt's tokens are estimated before the call (low, so that the estimate is high). */
const CHARS_PER_TOKEN = 3;

type Price = { input: number; output: number; cachedInput?: number };

/** Micro-dollars for these tokens at a price per million tokens (so: tokens times the price). */
export function costMicros(price: Price | undefined, tokens: { input: number; output: number; cachedInput?: number }): number {
  if (!price) return 0;
  const cached = price.cachedInput === undefined ? 0 : (tokens.cachedInput ?? 0);
  return Math.ceil((tokens.input - cached) * price.input + cached * (price.cachedInput ?? 0) + tokens.output * price.output);
}

function cap(key: string, source: string, limit: BudgetLimit | undefined): BudgetCap[] {
  if (!limit) return [];
  return [
    {
      key,
      source,
      ...(limit.tokens === undefined ? {} : { tokens: limit.tokens }),
      ...(limit.cost === undefined ? {} : { costMicros: Math.round(limit.cost * 1_000_000) }),
    },
  ];
}

/** The board task a board session (`agent:<id>:board:<task>`) works on. */
function boardTaskOf(sessionKey: string): string | undefined {
  if (parseSessionKey(sessionKey)?.kind !== 'board') return undefined;
  return sessionKey.split(':')[3];
}

const isEmpty = (record: Record<string, unknown>) => Object.keys(record).length === 0;

/** Who a run spends for: its agent, its session, the spawn tree it is in, the board task and the A2A peer behind its inputs. */
export interface RunSpender {
  agentId: string;
  sessionKey: string;
  /** The session at the top of its spawn tree (its own when it is no sub-agent). */
  rootSession: string;
  provenance: readonly Provenance[];
}

/** The caps a run's model calls draw on under `budgets`, with their keys for today (UTC, on the store's clock). */
export function runCaps(config: SwitchboardConfig, spender: RunSpender, now: number): BudgetCap[] {
  const budgets = config.budgets;
  // No cap configured (the common case): nothing to work out on a run's start.
  const callerBudget = config.mcpServer.budget;
  if (!budgets.session && !budgets.subagentTree && !budgets.boardTask && isEmpty(budgets.agents) && isEmpty(budgets.peers) && !callerBudget)
    return [];
  const day = new Date(now).toISOString().slice(0, 10);
  const caps: BudgetCap[] = [];
  const agent = budgets.agents[spender.agentId] ? spender.agentId : '*';
  caps.push(...cap(`agent:${spender.agentId}:${day}`, `budgets.agents.${agent}`, budgets.agents[agent]));
  caps.push(...cap(`session:${spender.sessionKey}`, 'budgets.session', budgets.session));
  caps.push(...cap(`tree:${spender.rootSession}`, 'budgets.subagentTree', budgets.subagentTree));
  // What a run serves comes from its inputs, and from its session and the top of its spawn tree: a sub-agent or a
  // completion's wake run of an A2A task or a board task draws on that task's caps too.
  const sessions = [parseSessionKey(spender.sessionKey), parseSessionKey(spender.rootSession)];
  const tasks = new Set(spender.provenance.filter((p) => p.kind === 'board' && p.peer).map((p) => p.peer!));
  for (const key of [spender.sessionKey, spender.rootSession]) {
    const task = boardTaskOf(key);
    if (task) tasks.add(task);
  }
  for (const task of tasks) caps.push(...cap(`task:${task}`, 'budgets.boardTask', budgets.boardTask));
  const peers = new Set(spender.provenance.filter((p) => p.kind === 'a2a').map((p) => p.peer ?? ANONYMOUS_PEER));
  for (const parsed of sessions) if (parsed?.kind === 'a2a' && parsed.peer) peers.add(parsed.peer);
  for (const peer of peers) {
    const name = budgets.peers[peer] ? peer : peer === ANONYMOUS_PEER ? undefined : '*';
    if (name) caps.push(...cap(`peer:${peer}:${day}`, `budgets.peers.${name}`, budgets.peers[name]));
  }
  // The MCP client (docs/mcp-server.md): its inputs carry channel `mcp` and its caller as peer, and its sessions (and the
  // tops of the spawn trees it started) are its direct sessions on that channel.
  const callers = new Set(spender.provenance.filter((p) => p.channel === 'mcp' && p.peer).map((p) => p.peer!));
  for (const parsed of sessions) if (parsed?.kind === 'direct' && parsed.channel === 'mcp' && parsed.peer) callers.add(parsed.peer);
  for (const caller of callers) caps.push(...cap(`mcp:${caller}:${day}`, 'mcpServer.budget', callerBudget));
  return caps;
}

export interface BudgetMeterDeps {
  config: SwitchboardConfig;
  store: BudgetStore;
  clock: Clock;
  journal: (event: NewEvent) => Promise<EventRecord>;
  /** At a cap under `onLimit: ask`: waits for a person to raise it (true), or to refuse (false). */
  askToRaise?: (
    run: { runId: string; sessionKey: string; agentId: string; signal: AbortSignal },
    refusal: Extract<BudgetReservation, { ok: false }>,
    wanted: BudgetAmount,
  ) => Promise<RaiseAnswer>;
  /** A new reservation's id. */
  newId: () => string;
}

/** Where a run's wait for a raise may suspend it (runs/run-waits.ts): the scope of its n-th such wait in this attempt. */
export interface MeterWaits {
  scope(place: { step: number; index: number }): WaitScope;
  suspended(place: { step: number; index: number }, suspension: WaitSuspended): void;
}

/** One run's meter: its caps, and the model wrapped to reserve and settle on them. */
export class BudgetMeter {
  constructor(
    private readonly deps: BudgetMeterDeps,
    private readonly run: {
      runId: string;
      sessionKey: string;
      agentId: string;
      model: string;
      timeoutMs: number;
      signal: AbortSignal;
      waits?: MeterWaits;
    },
    private readonly caps: readonly BudgetCap[],
  ) {}

  /** Raise waits of this attempt: each its own place (step -1), so that a resumed wait keeps its deadline. */
  private asked = 0;

  wrap(model: LanguageModelV3): LanguageModelV3 {
    return wrapLanguageModel({
      model,
      middleware: {
        specificationVersion: 'v3',
        wrapGenerate: async ({ doGenerate, params }) => {
          const held = await this.reserve(params);
          let result: Awaited<ReturnType<typeof doGenerate>>;
          try {
            result = await doGenerate();
          } catch (error) {
            // A call that failed before an answer is not billed, but one aborted under way may have been.
            await this.settle(held, undefined, params.abortSignal?.aborted ? held.amount : NOTHING).catch(() => {});
            throw error;
          }
          await this.settle(held, result.usage);
          return result;
        },
        wrapStream: async ({ doStream, params }) => {
          const held = await this.reserve(params);
          let started: Awaited<ReturnType<typeof doStream>>;
          try {
            started = await doStream();
          } catch (error) {
            await this.settle(held, undefined, NOTHING).catch(() => {});
            throw error;
          }
          return { ...started, stream: this.settling(started.stream, held) };
        },
      },
    });
  }

  /**
   * The stream as it comes, settled at its finish with the usage it reports; one cut (cancelled, failed, or ended with
   * no finish) counts its whole reservation as spent, since what it used is unknown.
   */
  private settling(stream: ReadableStream<LanguageModelV3StreamPart>, held: Held): ReadableStream<LanguageModelV3StreamPart> {
    return onStreamFinish(stream, (finish) => this.settle(held, finish?.usage, held.amount).catch(() => {}));
  }

  /** The most a call can use: its prompt's estimated tokens and its output limit. */
  private estimate(params: LanguageModelV3CallOptions): BudgetAmount {
    const input = Math.ceil((JSON.stringify(params.prompt).length + JSON.stringify(params.tools ?? []).length) / CHARS_PER_TOKEN);
    const output = params.maxOutputTokens ?? this.deps.config.budgets.reserveOutputTokens;
    return { tokens: input + output, costMicros: costMicros(this.price(), { input, output }) };
  }

  private price(): Price | undefined {
    return this.deps.config.models.prices[this.run.model];
  }

  private async reserve(params: LanguageModelV3CallOptions): Promise<Held> {
    const held = { id: `${this.run.runId}:${this.deps.newId()}`, amount: this.estimate(params) };
    const { amount } = held;
    let waited = 0;
    // The cap and limit an approved raise was asked from: refused again there, the raise gave nothing, and the call fails.
    let raisedFrom: string | undefined;
    for (;;) {
      if (this.run.signal.aborted) throw abortError(this.run.signal);
      const outcome = await this.deps.store.reserve(held.id, this.run.runId, this.caps, amount, this.run.timeoutMs);
      if (outcome.ok) return held;
      const { cap: refused, spent, reserved, limit } = outcome;
      // Full only with what calls under way reserved: most of it comes back when they settle, so wait for them.
      if (spent.tokens < limit.tokens && spent.costMicros < limit.costMicros) {
        await sleep(backoffDelay(waited++, HELD_BACK, Math.random()), this.run.signal).catch(() => {});
        if (this.run.signal.aborted) throw abortError(this.run.signal);
        continue;
      }
      const figures =
        spent.tokens >= limit.tokens
          ? `${spent.tokens} tokens spent and ${reserved.tokens} reserved of ${limit.tokens}`
          : `$${(spent.costMicros / 1e6).toFixed(4)} spent and $${(reserved.costMicros / 1e6).toFixed(4)} reserved of $${(limit.costMicros / 1e6).toFixed(4)}`;
      await this.deps.journal({
        type: 'budget.refused',
        sessionKey: this.run.sessionKey,
        runId: this.run.runId,
        payload: { key: refused.key, source: refused.source, spent, reserved, limit: finite(limit), wanted: amount },
      });
      const at = JSON.stringify({ key: refused.key, limit: finite(limit) });
      const again = raisedFrom === at;
      if (!again && this.deps.config.budgets.onLimit === 'ask' && this.deps.askToRaise) {
        const answer = await this.askToRaise(outcome, amount);
        if (answer.raised) {
          raisedFrom = at;
          continue;
        }
        throw exceeded(refused, figures, `; ${answer.why}`);
      }
      throw exceeded(refused, figures, again ? '; the raise approved for it left its limit where it was' : '');
    }
  }

  private async askToRaise(refused: Extract<BudgetReservation, { ok: false }>, wanted: BudgetAmount): Promise<RaiseAnswer> {
    const ask = () => this.deps.askToRaise!(this.run, refused, wanted);
    const waits = this.run.waits;
    if (!waits) return ask();
    const place = { step: -1, index: this.asked++ };
    try {
      return await waitScope.run(waits.scope(place), ask);
    } catch (error) {
      // The run suspends until the answer (run-executor.ts stops it once the model call has failed).
      if (error instanceof WaitSuspended) waits.suspended(place, error);
      throw error;
    }
  }

  /** Ends a reservation with what the call used: its reported usage, else `unknown` (a provider that reports none counts its reservation). */
  private async settle(held: Held, usage: LanguageModelV3Usage | undefined, unknown: BudgetAmount = held.amount): Promise<void> {
    const input = usage?.inputTokens.total;
    const output = usage?.outputTokens.total;
    const spent =
      input === undefined && output === undefined
        ? unknown
        : {
            tokens: (input ?? 0) + (output ?? 0),
            costMicros: costMicros(this.price(), {
              input: input ?? 0,
              output: output ?? 0,
              cachedInput: usage?.inputTokens.cacheRead ?? 0,
            }),
          };
    await this.deps.store.settle(held.id, spent, this.deps.clock.now());
  }
}

function exceeded(refused: BudgetCap, figures: string, more: string): SwitchboardError {
  return new SwitchboardError(
    'BUDGET_EXCEEDED',
    `budget ${refused.key} (${refused.source}) is used up: ${figures}${more}; the model was not called. Raise ${refused.source} in the config, or wait for the next day where the cap is daily`,
    { key: refused.key, source: refused.source },
  );
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(`the run was stopped (${String(signal.reason)})`);
}

/** A limit as JSON (an unset side is no limit). */
export function finite(limit: BudgetAmount): Partial<BudgetAmount> {
  return {
    ...(Number.isFinite(limit.tokens) ? { tokens: limit.tokens } : {}),
    ...(Number.isFinite(limit.costMicros) ? { costMicros: limit.costMicros } : {}),
  };
}
