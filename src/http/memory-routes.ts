/** The control API's memory routes (docs/memory.md): what each agent's index holds, a search as an agent, a reindex. */
import { z } from 'zod';
import type { MemoryService } from '../memory/memory-service.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const searchBody = z.strictObject({
  agent: z.string().min(1).max(64),
  query: z.string().min(1).max(2000),
  limit: z.number().int().min(1).max(100).optional(),
});
const reindexBody = z.strictObject({ agent: z.string().min(1).max(64).optional() });

export function memoryRoutes(memory: MemoryService, route: RouteAdder): void {
  route('GET', /^\/v1\/memory$/, async () => ({ agents: await memory.status() }));
  route('POST', /^\/v1\/memory\/search$/, async (request) => {
    const body = parseBody(searchBody, await readJson(request));
    return { hits: await memory.search(body.agent, body.query, body.limit) };
  });
  route('POST', /^\/v1\/memory\/reindex$/, async (request) => {
    const body = parseBody(reindexBody, await readJson(request));
    return { agents: await memory.reindex(body.agent) };
  });
}
