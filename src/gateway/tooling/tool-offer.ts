/**
 * Which tools a session is offered, and why each other tool is not: the policy layers (global -> agent ->
 * sandbox -> sub-agent, each only narrowing), each tool's own session kinds, the spawn depth, then for a
 * sub-agent its spawn's tools and its role (a leaf gets no session tools). A model that calls a tool it was
 * not offered is told the reason, with the layer and key, as `send --from` is (run-executor.ts).
 */
import { sandboxedBy } from '../../core/session-access.js';
import { parseSessionKey } from '../../core/session-key.js';
import { resolveLimits, roleAllowsTool, type SubagentRole } from '../../core/subagent.js';
import { toolPolicyDenial, type ToolPolicyLayer } from '../../core/tool-policy.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { ResolvedAgent } from '../../ports/gateway.js';
import type { GatewayTool } from '../../ports/tools.js';

/** What a sub-agent session may use at most: its spawn's tool list and its role. */
export interface SpawnedTools {
  tools: readonly string[];
  role: SubagentRole;
}

/** A tool the session may not use, and why (as a tool result: status, layer, error). */
export interface RefusedTool {
  name: string;
  refusal: { status: 'forbidden'; layer: 'tool'; error: string };
}

/** The tool policy's layers for a session, from the widest: global, agents.defaults, the agent, its sandbox, sub-agent ones. */
export function policyLayers(agent: ResolvedAgent, config: SwitchboardConfig, sessionKey: string): ToolPolicyLayer[] {
  const kind = parseSessionKey(sessionKey)?.kind ?? 'main';
  const id = agent.config.id;
  const layers: ToolPolicyLayer[] = [
    { source: 'tools', allow: config.tools.allow, deny: config.tools.deny, ask: config.tools.ask },
    { source: 'agents.defaults.tools', ...config.agents.defaults.tools },
    { source: `agents.list[${id}].tools`, ...agent.config.tools },
  ];
  if (agent.config.sandbox?.tools && sandboxedBy(agent.config, sessionKey))
    layers.push({ source: `agents.list[${id}].sandbox.tools`, ...agent.config.sandbox.tools });
  if (kind === 'subagent') {
    layers.push({ source: 'agents.defaults.subagents.tools', ...config.agents.defaults.subagents.tools });
    if (agent.config.subagents?.tools) layers.push({ source: `agents.list[${id}].subagents.tools`, ...agent.config.subagents.tools });
  }
  return layers;
}

/** What every tool's check reads of the session: worked out once per offer, not once per tool. */
interface OfferContext {
  agent: ResolvedAgent;
  config: SwitchboardConfig;
  sessionKey: string;
  parsed: ReturnType<typeof parseSessionKey>;
  layers: ToolPolicyLayer[];
  spawned?: SpawnedTools;
}

/** Why this session may not use the tool, or undefined when it may. */
function refusalOf(tool: GatewayTool, { agent, config, sessionKey, parsed, layers, spawned }: OfferContext): string | undefined {
  const kind = parsed?.kind ?? 'main';
  const id = agent.config.id;
  const denied = toolPolicyDenial(tool.name, layers);
  if (denied) return `agent "${id}" may not use ${tool.name}: the tool policy leaves it out (${denied})`;
  const ownRefusal = tool.refusedTo?.({ agentId: id, sessionKey });
  if (ownRefusal) return ownRefusal;
  if (tool.name === 'sessions_spawn' || tool.name === 'subagents') {
    // The deepest level never spawns (seed 002 section 2.2): past maxSpawnDepth there is nothing to manage either.
    const limits = resolveLimits(config.agents.defaults.subagents, agent.config.subagents, id);
    if ((parsed?.depth ?? 0) >= limits.maxSpawnDepth) {
      return `this session is at spawn depth ${parsed?.depth ?? 0}, and maxSpawnDepth (agents.defaults.subagents.maxSpawnDepth, or the agent's own) is ${limits.maxSpawnDepth}: it cannot spawn`;
    }
  }
  if (tool.sessionKinds && !tool.sessionKinds.includes(kind))
    return `${tool.name} is offered only in ${tool.sessionKinds.join(' and ')} sessions, and this is a ${kind} session`;
  if (spawned && !spawned.tools.includes(tool.name)) return `this sub-agent was spawned without ${tool.name} (its spawn's tool list)`;
  if (spawned && !roleAllowsTool(spawned.role, tool.name))
    return `a ${spawned.role} sub-agent does not get the session tools (${tool.name}); only an orchestrator does`;
  return undefined;
}

/** The tools this session is offered, and the others with the reason each is refused. */
export function offeredTools(
  agent: ResolvedAgent,
  config: SwitchboardConfig,
  tools: readonly GatewayTool[],
  sessionKey: string,
  spawned?: SpawnedTools,
): { tools: GatewayTool[]; refusedTools: RefusedTool[] } {
  const offered: GatewayTool[] = [];
  const refusedTools: RefusedTool[] = [];
  const session: OfferContext = {
    agent,
    config,
    sessionKey,
    parsed: parseSessionKey(sessionKey),
    layers: policyLayers(agent, config, sessionKey),
    spawned,
  };
  for (const tool of tools) {
    const refusal = refusalOf(tool, session);
    if (refusal === undefined) offered.push(tool);
    else refusedTools.push({ name: tool.name, refusal: { status: 'forbidden', layer: 'tool', error: refusal } });
  }
  return { tools: offered, refusedTools };
}
