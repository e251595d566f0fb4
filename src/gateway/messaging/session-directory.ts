/**
 * Who may see and reach which session, and what they see there: the target resolution and the layered
 * access checks every agent-to-agent call goes through (visibility, the agent-to-agent policy, the
 * spawned tree), and the read-only session tools (agents_list, sessions_list, sessions_history,
 * session_status). AgentMessaging holds one and builds sends and waits with it.
 */
import { REACHED_OUT } from '../../tools/tool-contract.js';
import type { AvailabilityContext } from '../../ports/tools.js';
import { SwitchboardError } from '../../core/errors.js';
import {
  checkSessionAccess,
  type AccessAction,
  type AccessPolicy,
  agentToAgentAllowed,
  effectiveVisibility,
  sandboxedBy,
} from '../../core/session-access.js';
import { mainSessionKey, parseSessionKey, type SessionKind } from '../../core/session-key.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { Clock, SessionRecord, Store, TranscriptEntry } from '../../ports/index.js';
import type { AgentRegistry } from '../agents/registry.js';
import type { Requester, TargetRef, SessionSummary } from '../../ports/gateway.js';

const MAX_HISTORY_TEXT = 4000;

export interface SessionDirectoryDeps {
  config: SwitchboardConfig;
  store: Store;
  agents: AgentRegistry;
  clock: Clock;
  isBusy: (sessionKey: string) => boolean;
}

/** Answers who a requester session may see and reach, and what it sees there; it never writes. */
export class SessionDirectory {
  constructor(private readonly deps: SessionDirectoryDeps) {}

  /** The policy that applies to a requester session; sandboxing comes from its agent's config. */
  policyFor(requester: Pick<Requester, 'sessionKey' | 'agentId'>): AccessPolicy {
    const { config } = this.deps;
    const sandbox = sandboxedBy(this.deps.agents.get(requester.agentId).config, requester.sessionKey);
    return {
      visibility: config.tools.sessions.visibility,
      agentToAgent: config.tools.agentToAgent,
      ...(sandbox ? { sandboxedBy: sandbox } : {}),
    };
  }

  /**
   * Whether a send from this session could reach anyone: another agent the policy allows, another session
   * of its own agent (visibility `agent` or `all`), or a session it spawned (visibility `tree`).
   */
  canSendAnywhere(session: AvailabilityContext): Promise<boolean> {
    return session.once('reach', async () => {
      if (this.listAgents(session).some((agent) => !agent.self)) return true;
      const visibility = effectiveVisibility(this.policyFor(session));
      if (visibility === 'agent' || visibility === 'all') return true;
      return visibility === 'tree' && (await this.hasSpawned(session));
    });
  }

  /** Whether the session has spawned anyone yet (the `subagents` tool is offered from then on). */
  async hasSpawned(session: AvailabilityContext): Promise<boolean> {
    return (await this.reachedOut(session)).spawned;
  }

  /** Whether there is anything for sessions_wait: a reply still to come to this session, or a session it spawned. */
  async hasSomethingToWaitFor(session: AvailabilityContext): Promise<boolean> {
    const { spawned, sent } = await this.reachedOut(session);
    return spawned || sent;
  }

  /** Both facts in one query, once per model step. */
  private reachedOut(session: AvailabilityContext): Promise<{ spawned: boolean; sent: boolean }> {
    return session.once(REACHED_OUT, () => this.deps.store.sessions.reachedOut(session.sessionKey));
  }

  /** Throws VISIBILITY_DENIED or A2A_POLICY_DENIED (details.layer names the layer) when not allowed. */
  async checkAccess(
    requester: Requester,
    target: { sessionKey: string; agentId: string },
    action: AccessAction,
    spawned?: (key: string) => Promise<boolean>,
  ): Promise<void> {
    const inTree =
      target.sessionKey === requester.sessionKey ||
      (await (spawned ?? ((key) => this.inSpawnedTree(requester.sessionKey, key)))(target.sessionKey));
    const denial = checkSessionAccess(
      {
        requesterSession: requester.sessionKey,
        requesterAgent: requester.agentId,
        targetSession: target.sessionKey,
        targetAgent: target.agentId,
        inSpawnedTree: inTree,
        action,
      },
      this.policyFor(requester),
    );
    if (denial)
      throw new SwitchboardError(denial.layer === 'visibility' ? 'VISIBILITY_DENIED' : 'A2A_POLICY_DENIED', denial.error, {
        layer: denial.layer,
      });
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
        throw new SwitchboardError(
          'INVALID_REQUEST',
          `sessionKey "${ref.sessionKey}" belongs to agent "${agent.config.id}", not "${ref.agentId}"; give one or the other`,
        );
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
        throw new SwitchboardError(
          'LABEL_AMBIGUOUS',
          `label "${ref.label}" names ${reachable.length} sessions (${reachable.map((s) => s.key).join(', ')}); pass agentId or the sessionKey`,
        );
      }
      if (denied) throw denied;
      throw new SwitchboardError(
        'SESSION_NOT_FOUND',
        `no session labelled "${ref.label}"${ref.agentId ? ` for agent "${ref.agentId}"` : ''}`,
      );
    }
    if (ref.agentId) {
      const agent = this.deps.agents.get(ref.agentId);
      const key = mainSessionKey(agent.config.id);
      return { sessionKey: key, agentId: agent.config.id, session: await this.deps.store.sessions.get(key) };
    }
    throw new SwitchboardError(
      'INVALID_REQUEST',
      "name the target: sessionKey, or label (with agentId to narrow it), or agentId for that agent's main session",
    );
  }

  /** agents_list: the agents this session may address. */
  listAgents(requester: Pick<Requester, 'sessionKey' | 'agentId'>): { agentId: string; name: string | null; self: boolean }[] {
    const policy = this.policyFor(requester);
    const crossAgent = effectiveVisibility(policy) === 'all' && !policy.sandboxedBy;
    return this.deps.agents
      .list()
      .filter(
        (agent) =>
          agent.config.id === requester.agentId ||
          (crossAgent && agentToAgentAllowed(policy.agentToAgent, requester.agentId, agent.config.id)),
      )
      .map((agent) => ({
        agentId: agent.config.id,
        name: agent.config.identity?.name ?? agent.config.name ?? null,
        self: agent.config.id === requester.agentId,
      }));
  }

  async listSessions(
    requester: Requester,
    filter: { agentId?: string; kind?: SessionKind; activeMinutes?: number; limit?: number },
  ): Promise<SessionSummary[]> {
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
        await this.checkAccess(requester, { sessionKey: session.key, agentId: session.agentId }, 'list', (key) =>
          this.inSpawnedTree(requester.sessionKey, key, known),
        );
      } catch {
        continue;
      }
      out.push({
        sessionKey: session.key,
        agentId: session.agentId,
        kind,
        label: session.label,
        state: this.deps.isBusy(session.key) ? 'running' : session.state,
        updatedAt: session.updatedAt,
        lastRunAt: session.lastRunAt,
      });
    }
    return out;
  }

  /** The session at `sessionKey`, if the requester may take `action` on it; SESSION_NOT_FOUND when there is none. */
  async reachable(requester: Requester, sessionKey: string, action: AccessAction): Promise<SessionRecord> {
    const target = await this.resolveTarget(requester, { sessionKey });
    await this.checkAccess(requester, target, action);
    if (!target.session)
      throw new SwitchboardError('SESSION_NOT_FOUND', `no session "${sessionKey}" (sessions_list shows the ones you can reach)`);
    return target.session;
  }

  async history(requester: Requester, sessionKey: string, options: { limit?: number; includeTools?: boolean }) {
    const session = await this.reachable(requester, sessionKey, 'history');
    const entries = await this.deps.store.transcript.list(session.key, {
      limit: Math.min(options.limit ?? 20, 200) * (options.includeTools ? 1 : 3),
    });
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
        ? {
            runId: lastRun.id,
            status: lastRun.status,
            startedAt: lastRun.startedAt,
            endedAt: lastRun.endedAt,
            finalText: clip(lastRun.finalText ?? '', 500),
          }
        : null,
    };
  }

  /** Whether a session runs now, has inputs waiting, or is idle. */
  async activity(sessionKey: string): Promise<{ state: 'running' | 'queued' | 'idle'; queued: number }> {
    const queued = (await this.deps.store.inputs.listQueued(sessionKey)).length;
    return { state: this.deps.isBusy(sessionKey) ? 'running' : queued > 0 ? 'queued' : 'idle', queued };
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** A transcript entry as sessions_history shows it: text, with tool calls and results only on request. */
function summarizeEntry(entry: TranscriptEntry, includeTools: boolean): Record<string, unknown>[] {
  const at = entry.createdAt;
  if (entry.role === 'user') {
    const from =
      entry.provenance && entry.provenance.kind !== 'user'
        ? { kind: entry.provenance.kind, agent: entry.provenance.sourceAgent, session: entry.provenance.sourceSession }
        : undefined;
    return [{ role: 'user', text: clip(String(entry.content), MAX_HISTORY_TEXT), ...(from ? { from } : {}), at }];
  }
  if (entry.role === 'note') return [{ role: 'note', text: clip(String(entry.content), MAX_HISTORY_TEXT), at }];
  const parts = Array.isArray(entry.content)
    ? (entry.content as Record<string, unknown>[])
    : [{ type: 'text', text: String(entry.content) }];
  if (entry.role === 'assistant') {
    const text = parts
      .filter((part) => part.type === 'text')
      .map((part) => String(part.text))
      .join('');
    const calls = includeTools
      ? parts.filter((part) => part.type === 'tool-call').map((part) => ({ tool: part.toolName, args: part.input }))
      : [];
    if (!text && calls.length === 0) return [];
    return [{ role: 'assistant', text: clip(text, MAX_HISTORY_TEXT), ...(calls.length > 0 ? { toolCalls: calls } : {}), at }];
  }
  if (!includeTools) return [];
  return parts.map((part) => ({ role: 'tool', tool: part.toolName, result: clip(JSON.stringify(part.output ?? null), 2000), at }));
}
