/**
 * Agent-to-agent messaging: what the session tools (and `send --from`) do. Every call names a requester
 * session and goes through the same layers: target resolution, visibility, the agent-to-agent policy,
 * then the loop guards (hop budget, per-pair rate limit). A send is stored with its exchange in one
 * transaction; replies, ping-pong and announce are carried on by ExchangeFlow.
 */
import { SwitchboardError } from '../core/errors.js';
import type { QueueMode } from '../core/queue-mode.js';
import { checkSessionAccess, type AccessAction, type AccessPolicy, agentToAgentAllowed, effectiveVisibility, sandboxedBy } from '../core/session-access.js';
import { mainSessionKey, parseSessionKey, type SessionKind } from '../core/session-key.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { Clock, ExchangeRecord, IdGenerator, LimitReached, NewToolCall, Provenance, RateLimit, SessionRecord, Store, TranscriptEntry } from '../ports.js';
import { apiWaiterId, isApiWaiter } from './exchanges.js';
import { waitUntil, type Wakeups } from './wait-until.js';
import type { AgentRegistry } from './registry.js';

export interface Requester {
  sessionKey: string;
  agentId: string;
  /** The run making the call; absent for the control API's `send --from`. */
  runId?: string;
  /** The conversation the calling run belongs to (from its inputs), for the hop budget. */
  conversation?: { id: string; hop: number };
}

export interface TargetRef {
  sessionKey?: string;
  label?: string;
  agentId?: string;
}

export interface AgentSendRequest extends TargetRef {
  message: string;
  mode?: QueueMode;
  /** 0 = return at once; the reply is delivered into the requester's session when it comes. */
  timeoutSeconds: number;
  /** Dedupes the send across retries and restarts; scoped to the requester and target sessions. */
  idempotencyKey: string;
  /** The tool call making the send, recorded in the ledger in the same transaction as the message. */
  call?: NewToolCall;
  signal?: AbortSignal;
}

export type AgentSendResult =
  | { status: 'ok'; sessionKey: string; inputId: string; runId: string | null; reply: string; conversationId: string }
  | { status: 'error'; sessionKey: string; inputId: string; runId: string | null; error: string; conversationId: string }
  | { status: 'timeout'; delivered: true; sessionKey: string; inputId: string; conversationId: string; note: string }
  | { status: 'accepted'; sessionKey: string; inputId: string; conversationId?: string; note: string };

export interface SessionSummary {
  sessionKey: string;
  agentId: string;
  kind: SessionKind | 'unknown';
  label: string | null;
  state: string;
  updatedAt: number;
  lastRunAt: number | null;
}

export interface MessagingDeps {
  config: SwitchboardConfig;
  store: Store;
  agents: AgentRegistry;
  clock: Clock;
  ids: IdGenerator;
  /** The session at an address, created on first use where the address kind allows (Gateway.openSession). */
  openSession: (sessionKey: string, agentId: string) => Promise<SessionRecord>;
  /** Schedules a session that has a new input stored by other means (an exchange's request). */
  wake: (sessionKey: string) => void;
  isBusy: (sessionKey: string) => boolean;
  /** What waits sleep on (see waitUntil). */
  wakeups: Wakeups;
  isStopping: () => boolean;
  validateMessage: (message: unknown) => string;
}

const MAX_HISTORY_TEXT = 4000;
const RATE_WINDOW_MS = 60_000;

export class AgentMessaging {
  constructor(private readonly deps: MessagingDeps) {}

  /** The policy that applies to a requester session; sandboxing comes from its agent's config. */
  policyFor(requester: Pick<Requester, 'sessionKey' | 'agentId'>): AccessPolicy {
    const { config } = this.deps;
    const sandbox = sandboxedBy(this.deps.agents.get(requester.agentId).config, requester.sessionKey);
    return { visibility: config.tools.sessions.visibility, agentToAgent: config.tools.agentToAgent, ...(sandbox ? { sandboxedBy: sandbox } : {}) };
  }

  /** Throws VISIBILITY_DENIED or A2A_POLICY_DENIED (details.layer names the layer) when not allowed. */
  async checkAccess(requester: Requester, target: { sessionKey: string; agentId: string }, action: AccessAction, spawned?: (key: string) => Promise<boolean>): Promise<void> {
    const inTree = target.sessionKey === requester.sessionKey || (await (spawned ?? ((key) => this.inSpawnedTree(requester.sessionKey, key)))(target.sessionKey));
    const denial = checkSessionAccess(
      { requesterSession: requester.sessionKey, requesterAgent: requester.agentId, targetSession: target.sessionKey, targetAgent: target.agentId, inSpawnedTree: inTree, action },
      this.policyFor(requester),
    );
    if (denial) throw new SwitchboardError(denial.layer === 'visibility' ? 'VISIBILITY_DENIED' : 'A2A_POLICY_DENIED', denial.error, { layer: denial.layer });
  }

  /** True when `key` was spawned, directly or through its parents, by `ancestor`. */
  private async inSpawnedTree(ancestor: string, key: string, known = new Map<string, SessionRecord | undefined>()): Promise<boolean> {
    let current = key;
    for (let depth = 0; depth < 16; depth += 1) {
      if (!known.has(current)) known.set(current, await this.deps.store.sessions.get(current));
      const parent = known.get(current)?.parentKey;
      if (!parent) return false;
      if (parent === ancestor) return true;
      current = parent;
    }
    return false;
  }

  /** A target by session key, by label (optionally within one agent), or by agent id (its main session). */
  async resolveTarget(requester: Requester, ref: TargetRef): Promise<{ sessionKey: string; agentId: string; session?: SessionRecord }> {
    if (ref.sessionKey) {
      const agent = this.deps.agents.agentOfSession(ref.sessionKey);
      if (ref.agentId && ref.agentId !== agent.config.id) {
        throw new SwitchboardError('INVALID_REQUEST', `sessionKey "${ref.sessionKey}" belongs to agent "${agent.config.id}", not "${ref.agentId}"; give one or the other`);
      }
      return { sessionKey: ref.sessionKey, agentId: agent.config.id, session: await this.deps.store.sessions.get(ref.sessionKey) };
    }
    if (ref.label) {
      if (ref.agentId && ref.agentId !== requester.agentId) {
        // Checked before the lookup, so a denied label lookup does not reveal whether the label exists.
        await this.checkAccess(requester, { sessionKey: mainSessionKey(ref.agentId), agentId: ref.agentId }, 'send', async () => false);
      }
      const matches = await this.deps.store.sessions.list({ agentId: ref.agentId, label: ref.label, limit: 1000 });
      const reachable: SessionRecord[] = [];
      let denied: unknown;
      for (const session of matches) {
        try {
          await this.checkAccess(requester, { sessionKey: session.key, agentId: session.agentId }, 'send');
          reachable.push(session);
        } catch (error) {
          denied ??= error;
        }
      }
      if (reachable.length === 1) return { sessionKey: reachable[0].key, agentId: reachable[0].agentId, session: reachable[0] };
      if (reachable.length > 1) {
        throw new SwitchboardError('LABEL_AMBIGUOUS', `label "${ref.label}" names ${reachable.length} sessions (${reachable.map((s) => s.key).join(', ')}); pass agentId or the sessionKey`);
      }
      if (denied) throw denied;
      throw new SwitchboardError('SESSION_NOT_FOUND', `no session labelled "${ref.label}"${ref.agentId ? ` for agent "${ref.agentId}"` : ''}`);
    }
    if (ref.agentId) {
      const agent = this.deps.agents.get(ref.agentId);
      const key = mainSessionKey(agent.config.id);
      return { sessionKey: key, agentId: agent.config.id, session: await this.deps.store.sessions.get(key) };
    }
    throw new SwitchboardError('INVALID_REQUEST', 'name the target: sessionKey, or label (with agentId to narrow it), or agentId for that agent\'s main session');
  }

  async send(requester: Requester, request: AgentSendRequest): Promise<AgentSendResult> {
    if (this.deps.isStopping()) throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send again once it has restarted');
    const message = this.deps.validateMessage(request.message);
    const target = await this.resolveTarget(requester, request);
    this.deps.agents.get(target.agentId); // AGENT_NOT_FOUND for a labelled session of an agent no longer configured
    await this.checkAccess(requester, target, 'send');

    if (target.sessionKey === requester.sessionKey && request.timeoutSeconds > 0 && requester.runId) {
      // The message would wait for the very run that waits for its reply.
      throw new SwitchboardError('INVALID_REQUEST', 'a message to this same session runs only after the current run ends, so it cannot be waited for; send it with timeoutSeconds 0');
    }
    const settings = this.deps.config.session.agentToAgent;
    const hop = (requester.conversation?.hop ?? 0) + 1;
    if (hop > settings.maxHops) {
      throw new SwitchboardError(
        'HOP_LIMIT_EXCEEDED',
        `this message would be hop ${hop} of conversation ${requester.conversation?.id}, past session.agentToAgent.maxHops (${settings.maxHops}): the agents are passing it around in a chain or a cycle; answer instead of forwarding it again`,
        { hop, maxHops: settings.maxHops },
      );
    }
    await this.deps.openSession(target.sessionKey, target.agentId);
    const rate = this.rateFor(requester.sessionKey, target.sessionKey);

    const conversationId = requester.conversation?.id ?? this.deps.ids.next();
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
      const stored = await this.deps.store.inputs.enqueue({ id: this.deps.ids.next(), sessionKey: target.sessionKey, idempotencyKey, mode, text: message, provenance }, this.deps.clock.now(), { rate, call: request.call });
      if ('limited' in stored) throw this.rateLimited(requester.sessionKey, target.sessionKey, stored.limited);
      const { input } = stored;
      if (stored.created) this.deps.wake(target.sessionKey);
      return { status: 'accepted', sessionKey: target.sessionKey, inputId: input.id, conversationId, note: 'stored in the target session without starting a run (mode "notify"); no reply will come' };
    }

    const waiterId = request.timeoutSeconds > 0 ? requester.runId ?? apiWaiterId() : null;
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
        replyState: waiterId ? 'awaiting' : 'detached',
        waiterRunId: waiterId,
      },
      { id: this.deps.ids.next(), sessionKey: target.sessionKey, idempotencyKey, mode, text: message, provenance: { ...provenance, exchange: { id: exchangeId, step: 'request', maxTurns: settings.maxPingPongTurns, role: 'target' } } },
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
      return { status: 'accepted', ...base, note: 'delivered; the reply will arrive in this session as a message when the target has answered' };
    }
    const settled = await this.awaitReply(exchange.id, waiterId, request.timeoutSeconds * 1000, request.signal);
    if (!settled) {
      return {
        status: 'timeout',
        delivered: true,
        ...base,
        note: `no reply within ${request.timeoutSeconds}s; the message was delivered and will still be processed, and the reply will arrive in this session as a message`,
      };
    }
    return replyResult(settled, base);
  }

  /** A repeated send (same idempotency key): wait again if nobody holds the reply, else say where it went. */
  private async reattach(exchange: ExchangeRecord, waiterId: string | null): Promise<AgentSendResult | undefined> {
    const base = { sessionKey: exchange.targetSession, inputId: exchange.requestInputId, conversationId: exchange.conversationId };
    const { store, clock } = this.deps;
    if (exchange.replyState === 'detached' && waiterId) {
      const attached = await store.exchanges.transition(exchange.id, { replyStates: ['detached'] }, { replyState: 'awaiting', waiterRunId: waiterId }, clock.now());
      if (attached.changed) return undefined;
      exchange = attached.exchange;
    }
    if (exchange.replyRunId && (exchange.waiterRunId === waiterId || isApiWaiter(waiterId))) return replyResult(exchange, base);
    if (exchange.replyState === 'awaiting' || exchange.replyState === 'detached') {
      return { status: 'accepted', ...base, note: 'this message was sent before (same idempotencyKey) and is still being processed; the reply will arrive in this session as a message' };
    }
    return { status: 'accepted', ...base, note: 'this message was sent before (same idempotencyKey); its reply was already delivered to this session' };
  }

  /** Waits for the reply this waiter holds. Returns undefined once the exchange is detached (timeout or abort). */
  private async awaitReply(exchangeId: string, waiterId: string, timeoutMs: number, signal?: AbortSignal): Promise<ExchangeRecord | undefined> {
    const { store, clock } = this.deps;
    // The answer is the exchange with its reply, or an empty one once the exchange is no longer this waiter's.
    const taken = async (): Promise<{ exchange?: ExchangeRecord } | undefined> => {
      const exchange = await store.exchanges.get(exchangeId);
      if (!exchange || exchange.waiterRunId !== waiterId) return {};
      if (exchange.replyRunId === null || (exchange.replyState !== 'replied' && exchange.replyState !== 'delivered')) return undefined;
      if (isApiWaiter(waiterId) && exchange.replyState === 'replied') {
        await store.exchanges.transition(exchangeId, { replyStates: ['replied'], waiterRunId: waiterId }, { replyState: 'delivered' }, clock.now());
      }
      return { exchange };
    };
    const answer = await waitUntil(clock.now() + timeoutMs, taken, this.deps.wakeups, (payload) => payload.exchangeId === exchangeId, signal);
    if (answer) return answer.exchange;
    const released = await store.exchanges.transition(exchangeId, { replyStates: ['awaiting'], waiterRunId: waiterId }, { replyState: 'detached', waiterRunId: null }, clock.now());
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
      { retryAfterMs: Math.max(0, limited.oldestAt + RATE_WINDOW_MS - this.deps.clock.now()) },
    );
  }

  /** agents_list: the agents this session may address. */
  listAgents(requester: Requester): { agentId: string; name: string | null; self: boolean }[] {
    const policy = this.policyFor(requester);
    const crossAgent = effectiveVisibility(policy) === 'all' && !policy.sandboxedBy;
    return this.deps.agents
      .list()
      .filter((agent) => agent.config.id === requester.agentId || (crossAgent && agentToAgentAllowed(policy.agentToAgent, requester.agentId, agent.config.id)))
      .map((agent) => ({ agentId: agent.config.id, name: agent.config.identity?.name ?? agent.config.name ?? null, self: agent.config.id === requester.agentId }));
  }

  async listSessions(requester: Requester, filter: { agentId?: string; kind?: SessionKind; activeMinutes?: number; limit?: number }): Promise<SessionSummary[]> {
    const limit = filter.limit ?? 50;
    const updatedSince = filter.activeMinutes === undefined ? undefined : this.deps.clock.now() - filter.activeMinutes * 60_000;
    const sessions = await this.deps.store.sessions.list({ agentId: filter.agentId, updatedSince, limit: 100_000 });
    const known = new Map(sessions.map((session) => [session.key, session] as const));
    const out: SessionSummary[] = [];
    for (const session of sessions) {
      if (out.length >= limit) break;
      const kind = parseSessionKey(session.key)?.kind ?? 'unknown';
      if (filter.kind && kind !== filter.kind) continue;
      try {
        await this.checkAccess(requester, { sessionKey: session.key, agentId: session.agentId }, 'list', (key) => this.inSpawnedTree(requester.sessionKey, key, known));
      } catch {
        continue;
      }
      out.push({ sessionKey: session.key, agentId: session.agentId, kind, label: session.label, state: this.deps.isBusy(session.key) ? 'running' : session.state, updatedAt: session.updatedAt, lastRunAt: session.lastRunAt });
    }
    return out;
  }

  private async reachable(requester: Requester, sessionKey: string, action: AccessAction): Promise<SessionRecord> {
    const target = await this.resolveTarget(requester, { sessionKey });
    await this.checkAccess(requester, target, action);
    if (!target.session) throw new SwitchboardError('SESSION_NOT_FOUND', `no session "${sessionKey}" (sessions_list shows the ones you can reach)`);
    return target.session;
  }

  async history(requester: Requester, sessionKey: string, options: { limit?: number; includeTools?: boolean }) {
    const session = await this.reachable(requester, sessionKey, 'history');
    const entries = await this.deps.store.transcript.list(session.key, { limit: Math.min(options.limit ?? 20, 200) * (options.includeTools ? 1 : 3) });
    const messages = entries.flatMap((entry) => summarizeEntry(entry, options.includeTools ?? false));
    return { sessionKey: session.key, messages: messages.slice(-(options.limit ?? 20)) };
  }

  async status(requester: Requester, sessionKey: string) {
    const session = await this.reachable(requester, sessionKey, 'list');
    const [lastRun] = await this.deps.store.runs.list({ sessionKey: session.key, limit: 1 });
    const { state, queued } = await this.activity(session.key);
    return {
      sessionKey: session.key,
      agentId: session.agentId,
      label: session.label,
      state,
      queuedInputs: queued,
      updatedAt: session.updatedAt,
      lastRun: lastRun
        ? { runId: lastRun.id, status: lastRun.status, startedAt: lastRun.startedAt, endedAt: lastRun.endedAt, finalText: clip(lastRun.finalText ?? '', 500) }
        : null,
    };
  }


  /**
   * sessions_wait: waits until one (`any`) or every (`all`) listed session has settled. A session this
   * requester sent messages to has settled when each of those has a reply (taken here, and so not
   * delivered again as a message); any other session, when it has no run active or queued.
   */
  async waitSessions(requester: Requester, sessionKeys: string[], options: { timeoutMs: number; mode: 'any' | 'all'; signal?: AbortSignal }) {
    const { store, clock } = this.deps;
    for (const key of sessionKeys) await this.reachable(requester, key, 'send');
    const waiterId = requester.runId ?? apiWaiterId();
    for (const key of sessionKeys) {
      for (const exchange of await store.exchanges.list({ requesterSession: requester.sessionKey, targetSession: key, replyStates: ['detached'], limit: 100_000 })) {
        await store.exchanges.transition(exchange.id, { replyStates: ['detached'] }, { replyState: 'awaiting', waiterRunId: waiterId }, clock.now());
      }
    }
    const watched = new Set(sessionKeys);
    const statuses = () => Promise.all(sessionKeys.map((key) => this.waitStatus(requester.sessionKey, key, waiterId)));
    try {
      const done = await waitUntil(
        clock.now() + options.timeoutMs,
        async () => {
          const sessions = await statuses();
          return (options.mode === 'all' ? sessions.every((s) => s.settled) : sessions.some((s) => s.settled)) ? sessions : undefined;
        },
        this.deps.wakeups,
        (payload, sessionKey) => watched.has(String(payload.targetSession)) || (sessionKey !== null && watched.has(sessionKey)),
        options.signal,
      );
      return done ? { timedOut: false, sessions: done } : { timedOut: true, sessions: await statuses() };
    } finally {
      for (const exchange of await store.exchanges.list({ waiterRunId: waiterId, replyStates: ['awaiting'], limit: 100_000 })) {
        await store.exchanges.transition(exchange.id, { replyStates: ['awaiting'], waiterRunId: waiterId }, { replyState: 'detached', waiterRunId: null }, clock.now());
      }
    }
  }

  private async waitStatus(requesterSession: string, sessionKey: string, waiterId: string) {
    const mine = (await this.deps.store.exchanges.list({ waiterRunId: waiterId, targetSession: sessionKey })).filter((exchange) => exchange.requesterSession === requesterSession);
    const pending = mine.filter((exchange) => exchange.replyState === 'awaiting').length;
    const replies = mine
      .filter((exchange) => exchange.replyRunId !== null)
      .map((exchange) => ({ inputId: exchange.requestInputId, runId: exchange.replyRunId, status: exchange.replyStatus === 'succeeded' ? 'ok' : 'error', reply: exchange.replyText }));
    const { state } = await this.activity(sessionKey);
    const settled = mine.length > 0 ? pending === 0 : state === 'idle';
    return { sessionKey, settled, state, waitingForReplies: pending, replies };
  }

  /** Whether a session runs now, has inputs waiting, or is idle. */
  private async activity(sessionKey: string): Promise<{ state: 'running' | 'queued' | 'idle'; queued: number }> {
    const queued = (await this.deps.store.inputs.listQueued(sessionKey)).length;
    return { state: this.deps.isBusy(sessionKey) ? 'running' : queued > 0 ? 'queued' : 'idle', queued };
  }
}

function replyResult(exchange: ExchangeRecord, base: { sessionKey: string; inputId: string; conversationId: string }): AgentSendResult {
  if (exchange.replyStatus === 'succeeded') return { status: 'ok', ...base, runId: exchange.replyRunId, reply: exchange.replyText ?? '' };
  return { status: 'error', ...base, runId: exchange.replyRunId, error: `the target's run ended "${exchange.replyStatus}"${exchange.replyText ? `: ${exchange.replyText}` : ''}` };
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** A transcript entry as sessions_history shows it: text, with tool calls and results only on request. */
function summarizeEntry(entry: TranscriptEntry, includeTools: boolean): Record<string, unknown>[] {
  const at = entry.createdAt;
  if (entry.role === 'user') {
    const from = entry.provenance && entry.provenance.kind !== 'user' ? { kind: entry.provenance.kind, agent: entry.provenance.sourceAgent, session: entry.provenance.sourceSession } : undefined;
    return [{ role: 'user', text: clip(String(entry.content), MAX_HISTORY_TEXT), ...(from ? { from } : {}), at }];
  }
  if (entry.role === 'note') return [{ role: 'note', text: clip(String(entry.content), MAX_HISTORY_TEXT), at }];
  const parts = Array.isArray(entry.content) ? (entry.content as Record<string, unknown>[]) : [{ type: 'text', text: String(entry.content) }];
  if (entry.role === 'assistant') {
    const text = parts.filter((part) => part.type === 'text').map((part) => String(part.text)).join('');
    const calls = includeTools ? parts.filter((part) => part.type === 'tool-call').map((part) => ({ tool: part.toolName, args: part.input })) : [];
    if (!text && calls.length === 0) return [];
    return [{ role: 'assistant', text: clip(text, MAX_HISTORY_TEXT), ...(calls.length > 0 ? { toolCalls: calls } : {}), at }];
  }
  if (!includeTools) return [];
  return parts.map((part) => ({ role: 'tool', tool: part.toolName, result: clip(JSON.stringify(part.output ?? null), 2000), at }));
}
