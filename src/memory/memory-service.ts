/** Agents' memory as one service (docs/memory.md): the index kept current, the memory tools, and what the control API asks of it. */
import type { SwitchboardConfig } from '../config/schema.js';
import { SwitchboardError } from '../core/errors.js';
import type { GatewayTool } from '../ports/tools.js';
import type { Clock, MemoryHit, MemoryStore, SessionStore, TranscriptStore } from '../ports/index.js';
import { searchScopes } from './grants.js';
import { MemoryIndex, type AgentMemoryStatus } from './memory-index.js';
import { createMemoryTools } from './memory-tools.js';

export class MemoryService {
  readonly tools: readonly GatewayTool[];
  private readonly index: MemoryIndex;

  constructor(
    private readonly config: SwitchboardConfig,
    private readonly parts: {
      stores: { memory: MemoryStore; sessions: SessionStore; transcript: TranscriptStore };
      clock: Clock;
      log: (message: string) => void;
    },
  ) {
    const store = parts.stores;
    this.index = new MemoryIndex({
      config,
      memory: store.memory,
      sessions: store.sessions,
      transcript: store.transcript,
      clock: parts.clock,
      log: parts.log,
    });
    this.tools = createMemoryTools(config, store.memory, () => this.index.indexed);
  }

  async start(): Promise<void> {
    this.index.start();
  }

  stop(): Promise<void> {
    return this.index.stop();
  }

  status(): Promise<AgentMemoryStatus[]> {
    return this.index.status();
  }

  /** A search as `agent` would make it (its own memory and what is shared with it), for `switchboard memory search`. */
  async search(agent: string, query: string, limit?: number): Promise<MemoryHit[]> {
    this.known(agent);
    const scopes = searchScopes(this.config, agent);
    if ('refused' in scopes) throw new SwitchboardError('VISIBILITY_DENIED', scopes.refused);
    await this.index.indexed;
    return this.parts.stores.memory.search(query, scopes, limit ?? this.config.memory.maxResults);
  }

  async reindex(agent?: string): Promise<AgentMemoryStatus[]> {
    if (agent) this.known(agent);
    for (const id of agent ? [agent] : this.config.agents.list.map((candidate) => candidate.id)) await this.index.reindex(id);
    return this.status();
  }

  private known(agent: string): void {
    if (!this.config.agents.list.some((candidate) => candidate.id === agent))
      throw new SwitchboardError(
        'AGENT_NOT_FOUND',
        `unknown agent "${agent}" (agents: ${this.config.agents.list.map((candidate) => candidate.id).join(', ')})`,
      );
  }
}
