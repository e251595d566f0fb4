/**
 * Agent-to-agent messaging: sessions_send (and `send --from`) and sessions_wait. Every call names a
 * requester session and goes through the same layers: target resolution, visibility, the agent-to-agent
 * policy (the SessionDirectory it holds), then the loop guards (hop budget, per-pair rate limit). A send is stored
 * with its exchange in one transaction; replies, ping-pong and announce are carried on by ExchangeFlow.
 */
import { SwitchboardError } from '../../core/errors.js';
import { hopRefusal, onwardHop } from '../../core/hops.js';
import { retryAfterMs } from '../../core/rate-limit.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { Clock, ExchangeRecord, IdGenerator, LimitReached, Provenance, RateLimit, SessionRecord, Store } from '../../ports/index.js';
import type { AgentSendRequest, AgentSendResult, Requester } from '../../ports/gateway.js';
import { waitUntil, type Wakeups } from '../../kit/wait-until.js';
import { apiWaiterId, isApiWaiter, letGo, type ExchangeFlow } from './exchanges.js';
import type { AgentRegistry } from '../agents/registry.js';
import type { SessionDirectory } from './session-directory.js';

export type { Requester, SessionSummary, TargetRef } from '../../ports/gateway.js';

const RATE_WINDOW_MS = 60_000;

export interface AgentMessagingDeps {
  config: SwitchboardConfig;
  store: Store;
  agents: AgentRegistry;
  clock: Clock;
  ids: IdGenerator;
  /** Where targets are resolved and access is checked. */
  directory: SessionDirectory;
  /** The session at an address, created on first use where the address kind allows (Gateway.openSession). */
  openSession: (sessionKey: string, agentId: string) => Promise<SessionRecord>;
  /** Schedules a session that has a new input stored by other means (an exchange's request). */
  wake: (sessionKey: string) => void;
  /** What waits sleep on (see waitUntil). */
  wakeups: Wakeups;
  isStopping: () => boolean;
  validateMessage: (message: unknown) => string;
  /** Where a waiter takes an exchange (ExchangeFlow.claim). */
  flow: Pick<ExchangeFlow, 'claim'>;
}

/** Sends messages between sessions and waits for their replies, through the directory's access checks and the loop guards. */
export class AgentMessaging {
  readonly directory: SessionDirectory;

  constructor(private readonly deps: AgentMessagingDeps) {
    this.directory = deps.directory;
  }

  // The directory's reads, forwarded: the session tools and the `subagents` tool's availability are handed messaging.
  listAgents(...args: Parameters<SessionDirectory['listAgents']>) {
    return this.directory.listAgents(...args);
  }
  listSessions(...args: Parameters<SessionDirectory['listSessions']>) {
    return this.directory.listSessions(...args);
  }
  history(...args: Parameters<SessionDirectory['history']>) {
    return this.directory.history(...args);
  }
  status(...args: Parameters<SessionDirectory['status']>) {
    return this.directory.status(...args);
  }
  resolveTarget(...args: Parameters<SessionDirectory['resolveTarget']>) {
    return this.directory.resolveTarget(...args);
  }
  canSendAnywhere(...args: Parameters<SessionDirectory['canSendAnywhere']>) {
    return this.directory.canSendAnywhere(...args);
  }
  hasSpawned(...args: Parameters<SessionDirectory['hasSpawned']>) {
    return this.directory.hasSpawned(...args);
  }
  hasSomethingToWaitFor(...args: Parameters<SessionDirectory['hasSomethingToWaitFor']>) {
    return this.directory.hasSomethingToWaitFor(...args);
  }

  async send(requester: Requester, request: AgentSendRequest): Promise<AgentSendResult> {
    if (this.deps.isStopping())
      throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send again once it has restarted');
    const message = this.deps.validateMessage(request.message);
    const target = await this.directory.resolveTarget(requester, request);
    this.deps.agents.get(target.agentId); // AGENT_NOT_FOUND for a labelled session of an agent no longer configured
    await this.directory.checkAccess(requester, target, 'send');

    if (target.sessionKey === requester.sessionKey && request.timeoutSeconds > 0 && requester.runId) {
      // The message would wait for the very run that waits for its reply.
      throw new SwitchboardError(
        'INVALID_REQUEST',
        'a message to this same session runs only after the current run ends, so it cannot be waited for; send it with timeoutSeconds 0',
      );
    }
    const settings = this.deps.config.session.agentToAgent;
    const onward = onwardHop(requester.conversation, () => this.deps.ids.next());
    const hop = onward.hop;
    const refusal = hopRefusal(onward, settings.maxHops);
    if (refusal) throw new SwitchboardError('HOP_LIMIT_EXCEEDED', refusal, { hop, maxHops: settings.maxHops });
    await this.deps.openSession(target.sessionKey, target.agentId);
    const rate = this.rateFor(requester.sessionKey, target.sessionKey);

    const conversationId = onward.id;
    const provenance: Provenance = {
      kind: 'inter_session',
      channel: 'internal',
      sourceSession: requester.sessionKey,
      sourceAgent: requester.agentId,
      sourceTool: 'sessions_send',
      conversationId,
      hop,
    };
    // Scoped to both ends: the same key sent to another session is another message.
    const idempotencyKey = `send:${requester.sessionKey}:${target.sessionKey}:${request.idempotencyKey}`;
    const mode = request.mode ?? 'followup';
    if (mode === 'notify') {
      // Stored without a run (Codex send_message): no reply will come, so there is no exchange.
      const stored = await this.deps.store.inputs.enqueue(
        { id: this.deps.ids.next(), sessionKey: target.sessionKey, idempotencyKey, mode, text: message, provenance },
        this.deps.clock.now(),
        { rate, call: request.call },
      );
      if ('limited' in stored) throw this.rateLimited(requester.sessionKey, target.sessionKey, stored.limited);
      const { input } = stored;
      if (stored.created) this.deps.wake(target.sessionKey);
      return {
        status: 'accepted',
        sessionKey: target.sessionKey,
        inputId: input.id,
        conversationId,
        note: 'stored in the target session without starting a run (mode "notify"); no reply will come',
      };
    }

    const waiterId = request.timeoutSeconds > 0 ? (requester.runId ?? apiWaiterId()) : null;
    const exchangeId = this.deps.ids.next();
    const opened = await this.deps.store.exchanges.open(
      {
        id: exchangeId,
        conversationId,
        hop,
        requesterSession: requester.sessionKey,
        requesterAgent: requester.agentId,
        targetSession: target.sessionKey,
        targetAgent: target.agentId,
        maxTurns: settings.maxPingPongTurns,
        // A run that does not wait holds the reply for a sessions_wait of its own until it ends.
        replyState: waiterId ? 'awaiting' : requester.runId ? 'held' : 'detached',
        waiterRunId: waiterId ?? requester.runId ?? null,
      },
      {
        id: this.deps.ids.next(),
        sessionKey: target.sessionKey,
        idempotencyKey,
        mode,
        text: message,
        provenance: { ...provenance, exchange: { id: exchangeId, step: 'request', maxTurns: settings.maxPingPongTurns, role: 'target' } },
      },
      this.deps.clock.now(),
      { rate, call: request.call },
    );
    if ('limited' in opened) throw this.rateLimited(requester.sessionKey, target.sessionKey, opened.limited);
    let exchange = opened.exchange;
    if (opened.created) {
      this.deps.wake(target.sessionKey);
    } else {
      const repeated = await this.reattach(exchange, waiterId);
      if (repeated) return repeated;
      exchange = (await this.deps.store.exchanges.get(exchange.id))!;
    }
    const base = { sessionKey: target.sessionKey, inputId: opened.input.id, conversationId: exchange.conversationId };
    if (!waiterId) {
      const note = requester.runId
        ? 'delivered; collect the reply with sessions_wait, or it will arrive in this session as a message after this run'
        : 'delivered; the reply will arrive in this session as a message when the target has answered';
      return { status: 'accepted', ...base, note };
    }
    const settled = await this.awaitReply(exchange.id, waiterId, request.timeoutSeconds * 1000, request.signal);
    if (!settled) {
      return {
        status: 'timeout',
        delivered: true,
        ...base,
        note: `no reply within ${request.timeoutSeconds}s; the message was delivered and will still be processed, and the reply will arrive in this session as a message${requester.runId ? ' (or to a sessions_wait of this run)' : ''}`,
      };
    }
    return replyResult(settled, base);
  }

  /** A repeated send (same idempotency key): wait again if nobody holds the reply, else say where it went. */
  private async reattach(exchange: ExchangeRecord, waiterId: string | null): Promise<AgentSendResult | undefined> {
    const base = { sessionKey: exchange.targetSession, inputId: exchange.requestInputId, conversationId: exchange.conversationId };
    if (waiterId) {
      ({ exchange } = await this.deps.flow.claim(exchange, waiterId));
      if (exchange.replyState === 'awaiting' && exchange.waiterRunId === waiterId) return undefined;
    }
    // The reply is this caller's to see when it waits and holds it (an API caller always sees it again). A repeat that
    // does not wait gets no reply: one that came went to this session as a message.
    if (waiterId && exchange.replyRunId && (exchange.waiterRunId === waiterId || isApiWaiter(waiterId))) return replyResult(exchange, base);
    if (exchange.replyState !== 'replied' && exchange.replyState !== 'delivered') {
      return {
        status: 'accepted',
        ...base,
        note: 'this message was sent before (same idempotencyKey) and is still being processed; the reply will arrive in this session as a message',
      };
    }
    return {
      status: 'accepted',
      ...base,
      note: 'this message was sent before (same idempotencyKey); its reply was already delivered to this session',
    };
  }

  /** Waits for the reply this waiter holds. Returns undefined once the exchange is detached (timeout or abort). */
  private async awaitReply(
    exchangeId: string,
    waiterId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<ExchangeRecord | undefined> {
    const { store, clock } = this.deps;
    // The answer is the exchange with its reply, or an empty one once the exchange is no longer this waiter's.
    const taken = async (): Promise<{ exchange?: ExchangeRecord } | undefined> => {
      const exchange = await store.exchanges.get(exchangeId);
      if (!exchange || exchange.waiterRunId !== waiterId) return {};
      if (exchange.replyRunId === null || (exchange.replyState !== 'replied' && exchange.replyState !== 'delivered')) return undefined;
      if (isApiWaiter(waiterId) && exchange.replyState === 'replied') {
        await store.exchanges.transition(
          exchangeId,
          { replyStates: ['replied'], waiterRunId: waiterId },
          { replyState: 'delivered' },
          clock.now(),
        );
      }
      return { exchange };
    };
    const answer = await waitUntil(
      clock.now() + timeoutMs,
      taken,
      this.deps.wakeups,
      { keys: [`exchange:${exchangeId}`], test: (payload) => payload.exchangeId === exchangeId },
      signal,
    );
    if (answer) return answer.exchange;
    const released = await store.exchanges.transition(
      exchangeId,
      { replyStates: ['awaiting'], waiterRunId: waiterId },
      letGo(waiterId),
      clock.now(),
    );
    // Not released: the reply came in the meantime, so it is this waiter's to take.
    return released.changed ? undefined : (await taken())?.exchange;
  }

  /**
   * The per-pair storm guard: both directions together, over the last minute. The window is kept in the
   * store and counted in the send's own transaction, so parallel sends and restarts cannot get past it.
   */
  private rateFor(from: string, to: string): RateLimit {
    const pair = from < to ? `${from}\n${to}` : `${to}\n${from}`;
    return { bucket: `send-pair:${pair}`, windowMs: RATE_WINDOW_MS, max: this.deps.config.session.agentToAgent.maxSendsPerMinute };
  }

  private rateLimited(from: string, to: string, limited: LimitReached['limited']): SwitchboardError {
    const limit = this.deps.config.session.agentToAgent.maxSendsPerMinute;
    return new SwitchboardError(
      'RATE_LIMITED',
      `${limited.count} messages between ${from} and ${to} in the last minute reach session.agentToAgent.maxSendsPerMinute (${limit}); wait before sending again`,
      { retryAfterMs: retryAfterMs(this.rateFor(from, to), limited, this.deps.clock.now()) },
    );
  }

  /**
   * sessions_wait: waits until one (`any`) or every (`all`) listed session has settled. A session this
   * requester sent messages to has settled when each of those has a reply (taken here, and so not
   * delivered again as a message); any other session, when it has no run active or queued.
   */
  async waitSessions(
    requester: Requester,
    sessionKeys: string[],
    options: { timeoutMs: number; mode: 'any' | 'all'; signal?: AbortSignal; resumedAt?: number },
  ) {
    const { store, clock } = this.deps;
    for (const key of sessionKeys) await this.directory.reachable(requester, key, 'send');
    const waiterId = requester.runId ?? apiWaiterId();
    // What this wait took: another wait of the same run (several tool calls at once, or an earlier one) shares the
    // waiter id, and a reply goes to one of them only.
    const taken = new Set<string>();
    for (const key of sessionKeys) {
      // A wait run again in a resumed run (its own id): what the cut attempt of this call took is its own again. What
      // this run took before that step was answered is in the answer of a wait of an earlier step, and stays there.
      const resumedAt = options.resumedAt;
      if (requester.runId && resumedAt !== undefined)
        for (const exchange of await store.exchanges.list({
          requesterSession: requester.sessionKey,
          targetSession: key,
          waiterRunId: waiterId,
          replyStates: ['awaiting', 'replied'],
          limit: 100_000,
        }))
          if (exchange.updatedAt >= resumedAt) taken.add(exchange.id);
      for (const exchange of await store.exchanges.list({
        requesterSession: requester.sessionKey,
        targetSession: key,
        replyStates: ['detached', 'held', 'reply_held'],
        limit: 100_000,
      })) {
        if ((await this.deps.flow.claim(exchange, waiterId)).taken) taken.add(exchange.id);
      }
    }
    const watched = new Set(sessionKeys);
    const statuses = () => Promise.all(sessionKeys.map((key) => this.waitStatus(key, waiterId, taken)));
    let outcome: { timedOut: boolean; sessions: Awaited<ReturnType<typeof statuses>> };
    let caught = false;
    try {
      const done = await waitUntil(
        clock.now() + options.timeoutMs,
        async () => {
          const sessions = await statuses();
          return (options.mode === 'all' ? sessions.every((s) => s.settled) : sessions.some((s) => s.settled)) ? sessions : undefined;
        },
        this.deps.wakeups,
        {
          keys: sessionKeys.map((key) => `session:${key}`),
          test: (payload, sessionKey) => watched.has(String(payload.targetSession)) || (sessionKey !== null && watched.has(sessionKey)),
        },
        options.signal,
      );
      outcome = done ? { timedOut: false, sessions: done } : { timedOut: true, sessions: await statuses() };
    } finally {
      for (const exchange of await store.exchanges.list({ waiterRunId: waiterId, replyStates: ['awaiting'], limit: 100_000 })) {
        if (!taken.has(exchange.id)) continue;
        const released = await store.exchanges.transition(
          exchange.id,
          { replyStates: ['awaiting'], waiterRunId: waiterId },
          letGo(waiterId),
          clock.now(),
        );
        if (!released.changed) caught = true;
      }
    }
    // A reply that came between the last look and letting go is this waiter's now (it is not delivered again as a
    // message): it must be in the answer.
    return caught ? { timedOut: outcome.timedOut, sessions: await statuses() } : outcome;
  }

  private async waitStatus(sessionKey: string, waiterId: string, taken: ReadonlySet<string>) {
    // What it took and still holds: one it let go (held again, or kept for the run if its reply came after) is not its.
    const holding =
      taken.size === 0
        ? []
        : await this.deps.store.exchanges.list({
            waiterRunId: waiterId,
            targetSession: sessionKey,
            replyStates: ['awaiting', 'replied', 'delivered'],
          });
    const mine = holding.filter((exchange) => taken.has(exchange.id));
    const pending = mine.filter((exchange) => exchange.replyState === 'awaiting').length;
    const replies = mine
      .filter((exchange) => exchange.replyRunId !== null)
      .map((exchange) => ({
        inputId: exchange.requestInputId,
        runId: exchange.replyRunId,
        status: exchange.replyStatus === 'succeeded' ? 'ok' : 'error',
        reply: exchange.replyText,
      }));
    const { state } = await this.directory.activity(sessionKey);
    const settled = mine.length > 0 ? pending === 0 : state === 'idle';
    return { sessionKey, settled, state, waitingForReplies: pending, replies };
  }
}

function replyResult(exchange: ExchangeRecord, base: { sessionKey: string; inputId: string; conversationId: string }): AgentSendResult {
  if (exchange.replyStatus === 'succeeded') return { status: 'ok', ...base, runId: exchange.replyRunId, reply: exchange.replyText ?? '' };
  return {
    status: 'error',
    ...base,
    runId: exchange.replyRunId,
    error: `the target's run ended "${exchange.replyStatus}"${exchange.replyText ? `: ${exchange.replyText}` : ''}`,
  };
}
