/**
 * Whether a spawn may go ahead (seed 002 section 2.2): the depth, the role, the agents a spawner may spawn, the
 * tools a child may have and its timeout, each refusal naming its limit and config key. A decision as a pure
 * function of the request and the limits; the live-children count is decided in the spawn's transaction.
 */
import { SwitchboardError } from './errors.js';
import { ORCHESTRATOR_TOOLS, type SubagentRole, type resolveLimits } from './subagent.js';
import { matchesAny } from './tool-policy.js';

export type ResolvedLimits = ReturnType<typeof resolveLimits>;

export interface SpawnAsk {
  spawnerAgent: string;
  /** The child's depth: its spawner's plus one. */
  depth: number;
  role: SubagentRole;
  agentId: string;
  /** The tools the spawner asked for the child, if it named any. */
  tools?: readonly string[];
  /** The spawner's own tools: a child's are a subset of them. */
  parentTools: readonly string[];
  timeoutSeconds: number;
}

/** The refusal of this spawn, or undefined when the limits allow it. */
export function spawnRefusal(ask: SpawnAsk, limits: ResolvedLimits): SwitchboardError | undefined {
  const { depth, spawnerAgent, agentId } = ask;
  if (depth > limits.maxSpawnDepth) {
    const why =
      limits.maxSpawnDepth === 0
        ? `sub-agents are off for agent "${spawnerAgent}" (${limits.source('maxSpawnDepth')} is 0)`
        : `a sub-agent spawned here would be at depth ${depth}, past ${limits.source('maxSpawnDepth')} (${limits.maxSpawnDepth})`;
    return new SwitchboardError('SPAWN_DENIED', `${why}; do the work yourself${limits.maxSpawnDepth > 0 ? ', or raise the limit' : ''}`, {
      layer: 'spawn',
      limit: 'maxSpawnDepth',
    });
  }
  if (ask.role === 'orchestrator' && depth >= limits.maxSpawnDepth) {
    return new SwitchboardError(
      'SPAWN_DENIED',
      `a sub-agent at depth ${depth} can never spawn (${limits.source('maxSpawnDepth')} is ${limits.maxSpawnDepth}), so it cannot be an orchestrator; spawn it with role "leaf", or raise the limit`,
      { layer: 'spawn', limit: 'maxSpawnDepth' },
    );
  }
  if (agentId !== spawnerAgent && !matchesAny(agentId, limits.allowAgents)) {
    return new SwitchboardError(
      'SPAWN_DENIED',
      `agent "${spawnerAgent}" may not spawn sub-agents of agent "${agentId}": it is not in ${limits.source('allowAgents')} (${limits.allowAgents.length ? limits.allowAgents.join(', ') : 'empty'})`,
      { layer: 'spawn', limit: 'allowAgents' },
    );
  }
  const extra = ask.tools?.filter((name) => !ask.parentTools.includes(name)) ?? [];
  if (extra.length > 0) {
    return new SwitchboardError(
      'TOOL_DENIED',
      `a sub-agent's tools are a subset of yours; you do not have ${extra.map((name) => `"${name}"`).join(', ')} (yours: ${ask.parentTools.join(', ') || 'none'})`,
      { layer: 'tool', extra },
    );
  }
  if (ask.timeoutSeconds > limits.runTimeoutSeconds) {
    return new SwitchboardError(
      'SUBAGENT_LIMIT',
      `timeoutSeconds ${ask.timeoutSeconds} is past ${limits.source('runTimeoutSeconds')} (${limits.runTimeoutSeconds}); ask for ${limits.runTimeoutSeconds} or less`,
      { limit: 'runTimeoutSeconds', max: limits.runTimeoutSeconds },
    );
  }
  return undefined;
}

/** The refusal of one spawn too many: `live` children already pending or running. */
export function childLimitRefusal(live: number, limits: ResolvedLimits): SwitchboardError {
  return new SwitchboardError(
    'SUBAGENT_LIMIT',
    `this session already has ${live} sub-agents pending or running, the limit of ${limits.source('maxChildrenPerAgent')} (${limits.maxChildrenPerAgent}); wait for one to finish (subagents wait) before spawning another`,
    { limit: 'maxChildrenPerAgent', max: limits.maxChildrenPerAgent },
  );
}

/** A child's tools: those asked for (plus, for an orchestrator, the spawner's session tools it needs), else the spawner's. */
export function childTools(ask: Pick<SpawnAsk, 'tools' | 'parentTools' | 'role'>): string[] {
  if (!ask.tools) return [...new Set(ask.parentTools)];
  const orchestrating = ask.role === 'orchestrator' ? ORCHESTRATOR_TOOLS.filter((name) => ask.parentTools.includes(name)) : [];
  return [...new Set([...ask.tools, ...orchestrating])];
}

/** What a spawn on an external runtime asks (docs/runtimes.md): which runtime, from which session. */
export interface RuntimeAsk {
  spawnerAgent: string;
  kind: 'acp' | 'process';
  /** The runtime's name under `acp.agents` or `runtimes`. */
  name: string;
  /** The names configured for that kind. */
  configured: readonly string[];
  /** Set when the spawning session is sandboxed: the config key that sandboxes it. */
  sandboxedBy?: string;
  /** Whether the child has a folder to work in (the agent's workspace, a folder of it, or a worktree). */
  hasWorkdir: boolean;
}

/** The refusal of a spawn on an external runtime, or undefined when it may go ahead (the other checks still apply). */
export function runtimeRefusal(ask: RuntimeAsk, limits: ResolvedLimits): SwitchboardError | undefined {
  const { kind, name } = ask;
  const section = kind === 'acp' ? 'acp.agents' : 'runtimes';
  if (!ask.configured.includes(name)) {
    return new SwitchboardError(
      'RUNTIME_UNAVAILABLE',
      `no ${kind} runtime "${name}" in ${section} (configured: ${ask.configured.length ? ask.configured.join(', ') : 'none'})`,
    );
  }
  if (ask.sandboxedBy) {
    return new SwitchboardError(
      'SPAWN_DENIED',
      `external runtimes run on the host, never from a sandboxed session (${ask.sandboxedBy}); spawn a model sub-agent instead`,
      { layer: 'sandbox' },
    );
  }
  if (!matchesAny(`${kind}:${name}`, limits.allowRuntimes)) {
    return new SwitchboardError(
      'SPAWN_DENIED',
      `agent "${ask.spawnerAgent}" may not spawn on runtime "${kind}:${name}": it is not in ${limits.source('allowRuntimes')} (${limits.allowRuntimes.length ? limits.allowRuntimes.join(', ') : 'empty'})`,
      { layer: 'spawn', limit: 'allowRuntimes' },
    );
  }
  if (!ask.hasWorkdir) {
    return new SwitchboardError(
      'INVALID_REQUEST',
      `a ${kind} sub-agent needs a folder to work in: give agent "${ask.spawnerAgent}" a workspace (agents.list[${ask.spawnerAgent}].workspace)`,
    );
  }
  return undefined;
}
