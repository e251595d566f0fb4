/**
 * `GET /v1/a2a/tasks` and `/v1/a2a/tasks/<id>`: the A2A tasks this gateway served, read from the A2A front's own store
 * port (the gateway does not hold them), with the ids a person types resolved through the door.
 */
import { SwitchboardError } from '../core/errors.js';
import type { Queries } from '../ports/gateway.js';
import type { A2ATaskStore } from '../ports/index.js';
import type { A2ATaskAnswer, A2ATasksAnswer } from './answers.js';
import type { RouteAdder } from './route.js';

export function a2aTaskRoutes(
  tasks: Pick<A2ATaskStore, 'list' | 'get' | 'listEvents'>,
  ids: Pick<Queries, 'resolveId'>,
  route: RouteAdder,
  limit: (url: URL) => number | undefined,
): void {
  route(
    'GET',
    /^\/v1\/a2a\/tasks$/,
    async (_req, url): Promise<A2ATasksAnswer> => ({
      // Most recently active first.
      tasks: await tasks.list({ agentId: url.searchParams.get('agentId') ?? undefined, limit: limit(url) ?? 50 }),
    }),
  );
  route('GET', /^\/v1\/a2a\/tasks\/([^/]+)$/, async (_req, _url, [given]): Promise<A2ATaskAnswer> => {
    const taskId = await ids.resolveId('a2a_task', given);
    const task = await tasks.get(taskId);
    if (!task) throw new SwitchboardError('TASK_NOT_FOUND', `no A2A task "${taskId}" (list them with "switchboard a2a tasks list")`);
    return { task, events: await tasks.listEvents(taskId) };
  });
}
