/**
 * Configurations that load but cannot do what they say: one layer allows what another makes impossible.
 * The gateway logs each at start, naming both keys and the fix; nothing here refuses a config.
 */
import { agentToAgentAllowed } from '../core/session-access.js';
import type { SwitchboardConfig } from './schema.js';

export function configWarnings(config: SwitchboardConfig): string[] {
  const warnings: string[] = [];
  const { agentToAgent, sessions } = config.tools;
  const ids = config.agents.list.map((agent) => agent.id);
  const pairs = ids.flatMap((from) =>
    ids.filter((to) => to !== from && agentToAgentAllowed(agentToAgent, from, to)).map((to) => `${from} -> ${to}`),
  );
  if (pairs.length > 0 && (sessions.visibility === 'self' || sessions.visibility === 'tree')) {
    const shown = pairs.length > 4 ? `${pairs.slice(0, 4).join(', ')} and ${pairs.length - 4} more` : pairs.join(', ');
    warnings.push(
      `tools.agentToAgent.allow lets agents message each other (${shown}), but tools.sessions.visibility is "${sessions.visibility}", which reaches no other agent's sessions, so sessions_send to them is refused; set tools.sessions.visibility: "all" for the agents to talk`,
    );
  }
  if (!agentToAgent.enabled && agentToAgent.allow.length > 0) {
    warnings.push(
      `tools.agentToAgent.allow is set (${JSON.stringify(agentToAgent.allow)}) but tools.agentToAgent.enabled is false, so no agent may message another; set tools.agentToAgent.enabled: true`,
    );
  }
  return warnings;
}
