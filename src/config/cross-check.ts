/** The config's rules that zod cannot see one field at a time: ids, models, bindings, lanes, the A2A server. */
import type { SwitchboardConfig } from './schema.js';

/** Rules zod cannot see one field at a time. */
export function crossCheck(config: SwitchboardConfig): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  config.agents.list.forEach((agent, index) => {
    const first = seen.get(agent.id);
    if (first !== undefined) problems.push(`agents.list[${index}].id: duplicate agent id "${agent.id}" (also agents.list[${first}].id)`);
    else seen.set(agent.id, index);
    const model = agent.model ?? config.agents.defaults.model;
    if (!model) {
      problems.push(`agents.list[${index}].model: required (or set agents.defaults.model), expected "<provider>/<model>", got nothing`);
      return;
    }
    const at = agent.model ? `agents.list[${index}].model` : 'agents.defaults.model';
    const [providerName, ...rest] = model.split('/');
    const modelId = rest.join('/');
    const provider = config.models.providers[providerName];
    if (!provider) {
      const known = Object.keys(config.models.providers);
      problems.push(
        `${at}: unknown model provider "${providerName}" in "${model}" (configured under models.providers: ${known.length ? known.join(', ') : 'none'})`,
      );
    } else if (provider.type === 'scripted' && !provider.models[modelId]) {
      problems.push(
        `${at}: scripted model "${modelId}" is not defined under models.providers.${providerName}.models (defined: ${Object.keys(provider.models).join(', ') || 'none'})`,
      );
    }
  });
  const defaults = config.agents.list.filter((agent) => agent.default);
  if (defaults.length > 1) problems.push(`agents.list: more than one agent has "default: true" (${defaults.map((a) => a.id).join(', ')})`);
  config.bindings.forEach((binding, index) => {
    if (!seen.has(binding.agentId))
      problems.push(`bindings[${index}].agentId: unknown agent "${binding.agentId}" (agents: ${[...seen.keys()].join(', ')})`);
  });
  const laneCap = config.lanes.subagent.maxConcurrent;
  if (laneCap !== undefined && laneCap !== config.agents.defaults.subagents.maxConcurrent) {
    problems.push(
      `lanes.subagent.maxConcurrent: ${laneCap} disagrees with agents.defaults.subagents.maxConcurrent (${config.agents.defaults.subagents.maxConcurrent}); both set the subagent lane, so keep one`,
    );
  }
  const server = config.a2a.server;
  const peerIds = new Set<string>();
  server.peers.forEach((peer, index) => {
    if (!peer.token && !peer.apiKey) problems.push(`a2a.server.peers[${index}]: give the peer a token or an apiKey (or both)`);
    if (peerIds.has(peer.id)) problems.push(`a2a.server.peers[${index}].id: duplicate peer id "${peer.id}"`);
    peerIds.add(peer.id);
  });
  if (server.enabled && !server.requireAuth && !server.allowAnonymous && !isLoopbackHost(config.gateway.host)) {
    problems.push(
      `a2a.server.requireAuth: false on gateway.host "${config.gateway.host}" lets anyone who can reach it call your agents, all as one peer that shares its tasks; add peers, listen on 127.0.0.1, or set a2a.server.allowAnonymous: true`,
    );
  }
  if (server.enabled && server.requireAuth && server.peers.length === 0) {
    problems.push(
      'a2a.server.peers: the A2A server requires credentials and has no peers; add peers, or set a2a.server.requireAuth: false to let anyone in',
    );
  }
  return problems;
}

/** A host the gateway can listen on that only this machine reaches. */
function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare) || /^::ffff:127\./.test(bare);
}
