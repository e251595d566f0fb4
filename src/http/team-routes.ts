/** The control API's team routes (docs/teams.md): each team's status, and the lead's shutdown and resume. */
import { z } from 'zod';
import type { Teams } from '../mailbox/teams.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const shutdownBody = z.strictObject({ release: z.boolean().optional() });

export function teamRoutes(teams: Teams, route: RouteAdder): void {
  route('GET', /^\/v1\/teams$/, async () => ({ teams: await Promise.all(teams.list().map((team) => teams.status(team.id))) }));
  route('GET', /^\/v1\/teams\/([^/]+)$/, async (_request, _url, [id]) => teams.status(decodeURIComponent(id)));
  route('POST', /^\/v1\/teams\/([^/]+)\/shutdown$/, async (request, _url, [id]) => {
    const body = parseBody(shutdownBody, await readJson(request));
    return teams.shutdown(decodeURIComponent(id), body.release === true);
  });
  route('POST', /^\/v1\/teams\/([^/]+)\/resume$/, async (_request, _url, [id]) => teams.resume(decodeURIComponent(id)));
}
