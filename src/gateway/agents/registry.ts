/** The address book: agents from the config, bindings from channels to agents, targets to session keys. */
import { SwitchboardError } from '../../core/errors.js';
import { directSessionKey, groupSessionKey, mainSessionKey, parseSessionKey } from '../../core/session-key.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { ResolvedAgent, Inbound } from '../../ports/gateway.js';

export class AgentRegistry {
  private readonly agents = new Map<string, ResolvedAgent>();

  constructor(private readonly config: SwitchboardConfig) {
    this.reload();
  }

  /** Rebuilt from the config's agents, after a reload replaced them. */
  reload(): void {
    const { config } = this;
    const defaults = config.agents.defaults;
    this.agents.clear();
    for (const agent of config.agents.list) {
      this.agents.set(agent.id, {
        config: agent,
        model: (agent.model ?? defaults.model)!,
        workspace: agent.workspace ?? defaults.workspace,
        maxSteps: agent.maxSteps ?? defaults.maxSteps,
        historyLimit: agent.historyLimit ?? defaults.historyLimit,
        timeoutSeconds: agent.timeoutSeconds ?? defaults.timeoutSeconds,
        durability: agent.durability ?? defaults.durability,
      });
    }
  }

  list(): ResolvedAgent[] {
    return [...this.agents.values()];
  }

  get(agentId: string): ResolvedAgent {
    const agent = this.agents.get(agentId);
    if (!agent) {
      throw new SwitchboardError(
        'AGENT_NOT_FOUND',
        `unknown agent "${agentId}" (configured agents: ${[...this.agents.keys()].join(', ')})`,
        { agentId },
      );
    }
    return agent;
  }

  has(agentId: string): boolean {
    return this.agents.has(agentId);
  }

  /** The agent marked `default: true`, else the first in the list. */
  defaultAgent(): ResolvedAgent {
    return this.list().find((agent) => agent.config.default) ?? this.list()[0];
  }

  /** The configured agent a session key belongs to; SESSION_NOT_FOUND for a malformed key, AGENT_NOT_FOUND for an unknown agent. */
  agentOfSession(sessionKey: string): ResolvedAgent {
    const parsed = parseSessionKey(sessionKey);
    if (!parsed) {
      throw new SwitchboardError(
        'SESSION_NOT_FOUND',
        `"${sessionKey}" is not a valid session key (expected agent:<agentId>:main, agent:<agentId>:<channel>:direct:<peer>, agent:<agentId>:<channel>:group:<id>, agent:<agentId>:subagent:<id> or agent:<agentId>:a2a:<peer>:<contextId>)`,
      );
    }
    return this.get(parsed.agentId);
  }

  /**
   * Which agent an inbound message is routed to: the most specific binding wins (peer, then group, then account,
   * then channel alone); with none, the default agent.
   */
  bind(inbound: Inbound): ResolvedAgent {
    let best: { agentId: string; score: number } | undefined;
    for (const binding of this.config.bindings) {
      const match = binding.match;
      if (match.channel !== inbound.channel) continue;
      if (match.account !== undefined && match.account !== inbound.account) continue;
      if (match.peer !== undefined && match.peer !== inbound.peer) continue;
      if (match.group !== undefined && match.group !== inbound.group) continue;
      const score = (match.peer ? 8 : 0) + (match.group ? 4 : 0) + (match.account ? 2 : 0) + 1;
      if (!best || score > best.score) best = { agentId: binding.agentId, score };
    }
    return best ? this.get(best.agentId) : this.defaultAgent();
  }

  /**
   * A send target is an agent id (its main session, or the channel's direct/group session when the
   * inbound names a peer or group) or a full session key of a configured agent.
   */
  resolveTarget(target: string, inbound?: Inbound): { sessionKey: string; agent: ResolvedAgent } {
    if (target.startsWith('agent:')) return { sessionKey: target, agent: this.agentOfSession(target) };
    const agent = this.get(target);
    if (inbound?.group) return { sessionKey: groupSessionKey(agent.config.id, inbound.channel, inbound.group), agent };
    if (inbound?.peer) return { sessionKey: directSessionKey(agent.config.id, inbound.channel, inbound.peer), agent };
    return { sessionKey: mainSessionKey(agent.config.id), agent };
  }
}
