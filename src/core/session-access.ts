/**
 * Which sessions a session may reach through the session tools (ARCHITECTURE.md section 7, seed 001
 * sections 3-4). Layers apply in order and each only narrows: visibility (clamped to the spawned tree
 * when the requester is sandboxed), then the agent-to-agent policy. Pure: the caller supplies whether
 * the target is in the requester's spawned tree.
 */
import { mainSessionKey } from './session-key.js';
import { matchesPattern } from './tool-policy.js';

export type SessionVisibility = 'self' | 'tree' | 'agent' | 'all';
/** send: sessions_send and sessions_wait; history: sessions_history; list: sessions_list and session_status. */
export type AccessAction = 'send' | 'history' | 'list';
export type AccessLayer = 'visibility' | 'agentToAgent';

export interface AgentToAgentPolicy {
  enabled: boolean;
  allow: readonly string[];
  /** Whether history of another agent's sessions may be read once sending is allowed. */
  history: boolean;
  /** Whether another agent's sessions may be listed and their status read. */
  list: boolean;
}

export interface AccessPolicy {
  visibility: SessionVisibility;
  agentToAgent: AgentToAgentPolicy;
  /** Set when the requester session is sandboxed: names the config key that sandboxes it. */
  sandboxedBy?: string;
}

export interface AccessRequest {
  requesterSession: string;
  requesterAgent: string;
  targetSession: string;
  targetAgent: string;
  /** The target is the requester or was spawned (directly or not) by it. */
  inSpawnedTree: boolean;
  action: AccessAction;
}

export interface AccessDenial {
  status: 'forbidden';
  layer: AccessLayer;
  error: string;
}

/** An empty allow list allows every agent, as in OpenClaw. Patterns are case-insensitive with `*`. */
export function agentAllowed(policy: AgentToAgentPolicy, agentId: string): boolean {
  return policy.allow.length === 0 || policy.allow.some((pattern) => pattern.trim() !== '' && matchesPattern(agentId, pattern.trim()));
}

/** Requester and target must both match; the same agent is always allowed. */
export function agentToAgentAllowed(policy: AgentToAgentPolicy, requesterAgent: string, targetAgent: string): boolean {
  if (requesterAgent === targetAgent) return true;
  return policy.enabled && agentAllowed(policy, requesterAgent) && agentAllowed(policy, targetAgent);
}

/** The config key that sandboxes this session of the agent, or undefined when it is not sandboxed. */
export function sandboxedBy(agent: { id: string; sandbox?: { mode: 'off' | 'non-main' | 'all' } }, sessionKey: string): string | undefined {
  const mode = agent.sandbox?.mode ?? 'off';
  const sandboxed = mode === 'all' || (mode === 'non-main' && sessionKey !== mainSessionKey(agent.id));
  return sandboxed ? `agents.list[${agent.id}].sandbox.mode "${mode}"` : undefined;
}

/** The visibility actually applied: a sandboxed session never sees past its spawned tree. */
export function effectiveVisibility(policy: AccessPolicy): SessionVisibility {
  return policy.sandboxedBy && (policy.visibility === 'agent' || policy.visibility === 'all') ? 'tree' : policy.visibility;
}

const VERB: Record<AccessAction, string> = { send: 'send to', history: 'read the history of', list: 'see' };

export function checkSessionAccess(request: AccessRequest, policy: AccessPolicy): AccessDenial | undefined {
  const visibility = effectiveVisibility(policy);
  const verb = VERB[request.action];
  const deny = (layer: AccessLayer, error: string): AccessDenial => ({ status: 'forbidden', layer, error });

  if (request.targetAgent !== request.requesterAgent) {
    if (policy.sandboxedBy) {
      return deny(
        'visibility',
        `cannot ${verb} session "${request.targetSession}" of agent "${request.targetAgent}": this session is sandboxed (${policy.sandboxedBy}) and may only reach itself and the sessions it spawned; no other setting lifts that`,
      );
    }
    if (visibility !== 'all') {
      return deny(
        'visibility',
        `cannot ${verb} session "${request.targetSession}" of agent "${request.targetAgent}": tools.sessions.visibility is "${visibility}", and reaching another agent's sessions needs "all"`,
      );
    }
    const a2a = policy.agentToAgent;
    if (!a2a.enabled) {
      return deny(
        'agentToAgent',
        `cannot ${verb} agent "${request.targetAgent}": agent-to-agent messaging is disabled (set tools.agentToAgent.enabled: true)`,
      );
    }
    for (const agentId of [request.requesterAgent, request.targetAgent]) {
      if (!agentAllowed(a2a, agentId)) {
        return deny(
          'agentToAgent',
          `cannot ${verb} agent "${request.targetAgent}": agent "${agentId}" is not in tools.agentToAgent.allow (${JSON.stringify(a2a.allow)}); requester and target must both match`,
        );
      }
    }
    if (request.action === 'history' && !a2a.history) {
      return deny(
        'agentToAgent',
        `cannot read the history of agent "${request.targetAgent}": tools.agentToAgent.history is false (sending is allowed, reading history is not)`,
      );
    }
    if (request.action === 'list' && !a2a.list) {
      return deny(
        'agentToAgent',
        `cannot see the sessions of agent "${request.targetAgent}": tools.agentToAgent.list is false (sending is allowed, listing is not)`,
      );
    }
    return undefined;
  }

  if (request.targetSession === request.requesterSession) return undefined;
  if (visibility === 'self') {
    return deny(
      'visibility',
      `cannot ${verb} session "${request.targetSession}": tools.sessions.visibility is "self", which allows only this session (use "tree", "agent" or "all")`,
    );
  }
  if (visibility === 'tree' && !request.inSpawnedTree) {
    const why = policy.sandboxedBy
      ? `this session is sandboxed (${policy.sandboxedBy}) and may only reach the sessions it spawned`
      : `tools.sessions.visibility is "tree", which allows this session and the sessions it spawned (use "agent" for every session of agent "${request.requesterAgent}")`;
    return deny('visibility', `cannot ${verb} session "${request.targetSession}": ${why}`);
  }
  return undefined;
}
