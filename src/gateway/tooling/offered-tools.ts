/**
 * The tools a session is offered: its agent's tools after the policy, narrowed for a sub-agent by its spawn and its
 * role (tool-offer.ts), and, for `subagents show`, after each tool's availability check as a run's step asks it.
 */
import { isSpawnedKind, parseSessionKey } from '../../core/session-key.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { Store } from '../../ports/index.js';
import type { GatewayTool } from '../../ports/tools.js';
import type { AgentRegistry } from '../agents/registry.js';
import { availabilityContext, availableTools } from './run-tools.js';
import { offeredTools } from './tool-offer.js';

export class OfferedTools {
  constructor(
    private readonly deps: {
      config: SwitchboardConfig;
      store: Store;
      agents: AgentRegistry;
      /** Every tool an agent's sessions may be offered: the gateway's, and those its extensions give this agent (MCP). */
      toolsFor(agentId: string): Promise<readonly GatewayTool[]>;
    },
  ) {}

  /** The tools a session is offered now (for a sub-agent: narrowed by its spawn and its role). */
  async toolsOf(sessionKey: string): Promise<GatewayTool[]> {
    return (await this.offeredToolsOf(sessionKey)).tools;
  }

  /**
   * The names of the tools the session's next model step is offered (`subagents show`): its tools after the policy,
   * its spawn and its role (offeredTools), then each tool's availability check, as a run's step asks them. None for a
   * session whose agent is no longer configured.
   */
  async offeredToolNames(sessionKey: string): Promise<string[]> {
    // A session whose agent left the config (a reload) is offered nothing: it runs no more.
    const agentId = parseSessionKey(sessionKey)?.agentId;
    if (agentId === undefined || !this.deps.agents.has(agentId)) return [];
    const agent = this.deps.agents.agentOfSession(sessionKey);
    const { tools, spawned } = await this.offeredToolsOf(sessionKey);
    const session = availabilityContext({ sessionKey, agentId: agent.config.id, workspace: spawned?.workdir ?? agent.workspace });
    const available = await availableTools(tools, session);
    return tools.filter((tool) => available.has(tool.name)).map((tool) => tool.name);
  }

  async offeredToolsOf(sessionKey: string) {
    const agent = this.deps.agents.agentOfSession(sessionKey);
    const spawned = isSpawnedKind(parseSessionKey(sessionKey)?.kind) ? await this.deps.store.subagents.getBySession(sessionKey) : undefined;
    return { ...offeredTools(agent, this.deps.config, await this.deps.toolsFor(agent.config.id), sessionKey, spawned), spawned };
  }
}
