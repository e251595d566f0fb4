/** The config's rules that zod cannot see one field at a time: ids, models, bindings, lanes, the A2A server. */
import { MAILBOX_NAME_PATTERN } from './schema-mailbox.js';
import { scheduleProblems } from './schema-schedules.js';
import { channelProblems } from './schema-channels.js';
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
  problems.push(...toolProblems(config, seen));
  problems.push(...mailboxProblems(config, seen));
  problems.push(...scheduleProblems(config.schedules, seen, config.gateway.maxMessageChars));
  problems.push(...channelProblems(config.channels));
  return problems;
}

/** The names Claude Code (2.1.332) gives its session's lead and its own messages (docs/teams.md). */
const CLAUDE_RESERVED_NAMES = ['team-lead', 'user', 'system'];

/** Mailbox names are one per agent; a team's lead is an agent, its members agents or mailbox names, each once. */
function mailboxProblems(config: SwitchboardConfig, agentIndex: Map<string, number>): string[] {
  const problems: string[] = [];
  const names = new Map<string, string>();
  config.agents.list.forEach((agent, index) => {
    if (!config.mailbox.enabled || agent.mailbox?.enabled === false) return;
    const name = agent.mailbox?.name ?? agent.id;
    const other = names.get(name);
    if (other === agent.id) return;
    if (other) problems.push(`agents.list[${index}].mailbox.name: "${name}" is already the mailbox name of agent "${other}"`);
    else if (!MAILBOX_NAME_PATTERN.test(name))
      problems.push(
        `agents.list[${index}].mailbox.name: the agent id "${name}" is not a mailbox name (1-50 characters [A-Za-z0-9_-], not starting with "-"); set one`,
      );
    names.set(name, agent.id);
  });
  const teamIds = new Set<string>();
  const agents = [...agentIndex.keys()].join(', ');
  config.teams.forEach((team, index) => {
    if (teamIds.has(team.id)) problems.push(`teams[${index}].id: duplicate team id "${team.id}"`);
    teamIds.add(team.id);
    if (!agentIndex.has(team.lead)) problems.push(`teams[${index}].lead: unknown agent "${team.lead}" (agents: ${agents})`);
    const seen = new Set<string>();
    team.members.forEach((member, at) => {
      if (member === team.lead)
        problems.push(`teams[${index}].members[${at}]: "${member}" is the team's lead; a lead is not also a member`);
      if (seen.has(member)) problems.push(`teams[${index}].members[${at}]: "${member}" is listed twice`);
      seen.add(member);
      if (!agentIndex.has(member) && !MAILBOX_NAME_PATTERN.test(member))
        problems.push(
          `teams[${index}].members[${at}]: "${member}" is neither an agent (agents: ${agents}) nor a mailbox name of an outside process`,
        );
    });
    for (const member of Object.keys(team.skills))
      if (!seen.has(member)) problems.push(`teams[${index}].skills.${member}: "${member}" is not a member of the team`);
    // Mirrored in Claude Code's files, each of our agents is an inbox file named by its id, among Claude Code's own.
    if (team.claudeDir)
      for (const agent of [team.lead, ...team.members].filter((name) => agentIndex.has(name)))
        if (CLAUDE_RESERVED_NAMES.includes(agent) || !MAILBOX_NAME_PATTERN.test(agent))
          problems.push(
            `teams[${index}].claudeDir: agent "${agent}" cannot be a Claude Code teammate: ${
              CLAUDE_RESERVED_NAMES.includes(agent)
                ? `Claude Code keeps the names ${CLAUDE_RESERVED_NAMES.join(', ')} for itself`
                : 'its id is not a mailbox name (1-50 characters [A-Za-z0-9_-], not starting with "-")'
            }; rename the agent or leave it out of the team`,
          );
  });
  return problems;
}

/** MCP servers an agent attaches must exist; a memory grant must be given on both sides (docs/memory.md). */
function toolProblems(config: SwitchboardConfig, agentIndex: Map<string, number>): string[] {
  const problems: string[] = [];
  const servers = Object.keys(config.mcp.servers);
  config.agents.list.forEach((agent, index) => {
    for (const name of agent.mcp ?? [])
      if (!config.mcp.servers[name])
        problems.push(
          `agents.list[${index}].mcp: unknown MCP server "${name}" (configured under mcp.servers: ${servers.join(', ') || 'none'})`,
        );
    const memory = agent.memory;
    memory?.readFrom.forEach((grant, at) => {
      const owner = agentIndex.get(grant.agent);
      if (owner === undefined) {
        problems.push(
          `agents.list[${index}].memory.readFrom[${at}].agent: unknown agent "${grant.agent}" (agents: ${[...agentIndex.keys()].join(', ')})`,
        );
        return;
      }
      if (!config.agents.list[owner].memory?.shareWith.includes(agent.id))
        problems.push(
          `agents.list[${index}].memory.readFrom[${at}]: "${agent.id}" reads the memory of "${grant.agent}", but agents.list[${owner}].memory.shareWith does not list "${agent.id}"; a grant needs both keys`,
        );
    });
    memory?.shareWith.forEach((reader, at) => {
      const readerIndex = agentIndex.get(reader);
      if (readerIndex === undefined) {
        problems.push(
          `agents.list[${index}].memory.shareWith[${at}]: unknown agent "${reader}" (agents: ${[...agentIndex.keys()].join(', ')})`,
        );
        return;
      }
      if (!config.agents.list[readerIndex].memory?.readFrom.some((grant) => grant.agent === agent.id))
        problems.push(
          `agents.list[${index}].memory.shareWith[${at}]: "${agent.id}" shares its memory with "${reader}", but agents.list[${readerIndex}].memory.readFrom has no entry for "${agent.id}"; a grant needs both keys`,
        );
    });
  });
  return problems;
}

/** A host (a name or an address, IPv6 bare or in brackets) that only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare) || /^::ffff:127\./.test(bare);
}
