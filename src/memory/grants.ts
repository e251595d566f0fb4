/**
 * Who may read whose memory (docs/memory.md): an agent its own, and another's only where both sides say so, the
 * reader in `memory.readFrom` (optionally narrowed to path prefixes) and the owner in `memory.shareWith`. Checked at
 * every search and read, against the running config; a refusal names the key that is missing.
 */
import type { SwitchboardConfig } from '../config/schema.js';
import type { MemoryScope } from '../ports/index.js';

export type Refused = { refused: string };

function agentOf(config: SwitchboardConfig, id: string) {
  return config.agents.list.find((agent) => agent.id === id);
}

/** The grant `reader` holds on `owner`'s memory, or why it holds none. */
function grant(config: SwitchboardConfig, reader: string, owner: string): MemoryScope | Refused {
  if (owner === reader) return { agentId: owner };
  if (!agentOf(config, owner))
    return { refused: `unknown agent "${owner}" (agents: ${config.agents.list.map((agent) => agent.id).join(', ')})` };
  const entry = agentOf(config, reader)?.memory?.readFrom.find((candidate) => candidate.agent === owner);
  if (!entry)
    return {
      refused: `agent "${reader}" has no grant to read the memory of "${owner}": add { agent: "${owner}" } to agents.list[${reader}].memory.readFrom, and "${reader}" to agents.list[${owner}].memory.shareWith`,
    };
  if (!agentOf(config, owner)?.memory?.shareWith.includes(reader))
    return {
      refused: `agent "${owner}" does not share its memory with "${reader}": agents.list[${owner}].memory.shareWith does not list it`,
    };
  return { agentId: owner, ...(entry.paths ? { paths: entry.paths } : {}) };
}

/** What `reader` searches: its own memory and every granted one, or only `owner`'s when given. */
export function searchScopes(config: SwitchboardConfig, reader: string, owner?: string): MemoryScope[] | Refused {
  if (owner !== undefined) {
    const scope = grant(config, reader, owner);
    return 'refused' in scope ? scope : [scope];
  }
  const granted = (agentOf(config, reader)?.memory?.readFrom ?? []).map((entry) => grant(config, reader, entry.agent));
  return [{ agentId: reader }, ...granted.filter((scope): scope is MemoryScope => !('refused' in scope))];
}

/** Whether `reader` may read `path` of `owner`'s memory. */
export function mayRead(config: SwitchboardConfig, reader: string, owner: string, path: string): true | Refused {
  const scope = grant(config, reader, owner);
  if ('refused' in scope) return scope;
  if (scope.paths && !scope.paths.some((prefix) => path.startsWith(prefix)))
    return {
      refused: `agent "${reader}" may read only ${scope.paths.map((prefix) => `"${prefix}"`).join(', ')} of the memory of "${owner}" (agents.list[${reader}].memory.readFrom), not "${path}"`,
    };
  return true;
}
