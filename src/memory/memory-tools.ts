/**
 * The memory tools (docs/memory.md): `memory_search` over the agent's own memory and what is shared with it, each hit
 * with its source agent, path, line range and age; `memory_get` to read a document (or part of one); `memory_write`
 * to keep an entry in the agent's own memory, once per call even when a crashed run is retried.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { SwitchboardConfig } from '../config/schema.js';
import { defineTool, unlisted } from '../tools/tool-contract.js';
import type { GatewayTool } from '../ports/tools.js';
import type { MemoryStore } from '../ports/index.js';
import { number, text } from '../tools/schema.js';
import { mayRead, searchScopes } from './grants.js';

const HIT_CHARS = 500;
const GET_CHARS = 32 * 1024;
const ENTRY_CHARS = 8000;

/** "3d", "5h", "12m", "now": how long ago, in the largest whole unit. */
export function age(from: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - from) / 1000));
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
  ] as const)
    if (seconds >= size) return `${Math.floor(seconds / size)}${unit}`;
  return 'now';
}

/** `indexed`: resolves once the gateway's first scan of the memory folders is done; a search waits for it. */
export function createMemoryTools(
  config: SwitchboardConfig,
  memory: MemoryStore,
  indexed: () => Promise<void> = async () => {},
): GatewayTool[] {
  // Offered to an agent with a memory: a workspace (its memory/ folder), or a memory section of its own.
  const available = async (session: { agentId: string; workspace: string | undefined }) =>
    session.workspace !== undefined || config.agents.list.some((agent) => agent.id === session.agentId && agent.memory !== undefined);
  const search = defineTool({
    name: 'memory_search',
    description: 'Search your memory (and memory shared with you).',
    deferred: true,
    available,
    parameters: z.object({ query: text(), agent: unlisted(text().optional()) }),
    async execute({ query, agent }, context) {
      const scopes = searchScopes(config, context.agentId, agent);
      if ('refused' in scopes) return { status: 'forbidden', error: scopes.refused };
      await indexed();
      const now = context.clock.now();
      const hits = await memory.search(query, scopes, config.memory.maxResults);
      if (hits.length === 0)
        return {
          hits: [],
          note: `nothing in the memory of ${scopes.map((scope) => scope.agentId).join(', ')} matches; memory_write keeps what you learn`,
        };
      return {
        hits: hits.map((hit) => ({
          agent: hit.agentId,
          path: hit.path,
          lines: `${hit.startLine}-${hit.endLine}`,
          age: age(hit.modifiedAt, now),
          text: hit.text.length > HIT_CHARS ? `${hit.text.slice(0, HIT_CHARS)}…` : hit.text,
        })),
      };
    },
  });
  const get = defineTool({
    name: 'memory_get',
    description: 'Read a memory document found by memory_search.',
    deferred: true,
    available,
    parameters: z.object({ path: text(), agent: text().optional(), fromLine: unlisted(number(1, 10_000_000).optional()) }),
    async execute({ path, agent, fromLine = 1 }, context) {
      const owner = agent ?? context.agentId;
      const allowed = mayRead(config, context.agentId, owner, path);
      if (allowed !== true) return { status: 'forbidden', error: allowed.refused };
      await indexed();
      const found = await memory.read(owner, path);
      if (!found) return { status: 'error', error: `no memory document "${path}" for agent "${owner}"; memory_search finds them` };
      const chunks = found.chunks.filter((chunk) => chunk.endLine >= fromLine);
      let content = '';
      let lastLine = fromLine - 1;
      for (const chunk of chunks) {
        if (content.length + chunk.text.length > GET_CHARS && content) break;
        content += `${content ? '\n' : ''}${chunk.text}`;
        lastLine = chunk.endLine;
      }
      const more = chunks.some((chunk) => chunk.startLine > lastLine);
      return {
        agent: owner,
        path,
        source: found.document.source,
        age: age(found.document.modifiedAt, context.clock.now()),
        content,
        ...(more ? { next: `memory_get with fromLine: ${lastLine + 1} for the rest` } : {}),
      };
    },
  });
  const write = defineTool({
    name: 'memory_write',
    description: 'Keep a note in your memory for later runs.',
    deferred: true,
    available,
    effects: true,
    parameters: z.object({ text: text() }),
    async execute({ text: note }, context) {
      if (note.length > ENTRY_CHARS)
        return { status: 'error', error: `text is ${note.length} characters; an entry takes at most ${ENTRY_CHARS}` };
      const written = await memory.write({
        agentId: context.agentId,
        path: `entries/${randomUUID()}`,
        text: note,
        key: `memory:${context.idempotencyKey}`,
        modifiedAt: context.clock.now(),
      });
      return { status: 'ok', path: written.path, ...(written.created ? {} : { note: 'kept already by an earlier attempt of this run' }) };
    },
  });
  return [search, get, write];
}
