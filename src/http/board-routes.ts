/**
 * The control API's board routes (docs/control-api.md, "Board"). Outside workers claim, heartbeat,
 * complete, block and release with the claim's token; people and programs create, move, link, review
 * and comment. Watch with `/v1/events?type=board.` (every change is a `board.updated` journal event).
 */
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { BLOCK_KINDS, BOARD_STATES } from '../core/board.js';
import { SwitchboardError } from '../core/errors.js';
import { parseBoardState, type BoardActor, type BoardService } from '../board/board.js';
import type { BoardTaskView } from '../ports/index.js';
import type { BoardTasksAnswer } from './answers.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const name = z.string().min(1).max(256);
const token = z.number().int().min(1);
const TASK = /^\/v1\/board\/tasks\/([^/]+)$/;
const action = (verb: string) => new RegExp(`^/v1/board/tasks/([^/]+)/${verb}$`);

const createBody = z.strictObject({
  title: z.string().min(1).max(512),
  body: z.string().max(65_536).optional(),
  board: z.string().min(1).max(64).optional(),
  assignee: name.nullable().optional(),
  priority: z.number().int().min(-1000).max(1000).optional(),
  labels: z.array(name).max(20).optional(),
  dependsOn: z.array(name).max(100).optional(),
  idempotencyKey: z.string().min(1).max(512).optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  maxRuntimeSeconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 86_400)
    .optional(),
  triage: z.boolean().optional(),
  /** Who creates it, when not the person behind the token (a worker creating a follow-up, say). */
  creator: name.optional(),
});
const claimBody = z.strictObject({
  worker: name,
  board: z.string().min(1).max(64).optional(),
  assignee: name.optional(),
  taskId: name.optional(),
  ttlSeconds: z.number().int().min(1).max(86_400).optional(),
});
const heartbeatBody = z.strictObject({ token, ttlSeconds: z.number().int().min(1).max(86_400).optional() });
const completeBody = z.strictObject({
  token,
  result: z.string().max(1_000_000),
  summary: z.string().max(4096).optional(),
  review: z.boolean().optional(),
});
const blockBody = z.strictObject({ token, kind: z.enum(BLOCK_KINDS), reason: z.string().min(1).max(65_536) });
const releaseBody = z.strictObject({ token, reason: z.string().max(4096).optional() });
const moveBody = z.strictObject({ state: z.enum(BOARD_STATES), reason: z.string().max(4096).optional(), by: name.optional() });
const reviewBody = z.strictObject({ approve: z.boolean(), comment: z.string().min(1).max(65_536).optional(), by: name.optional() });
const commentBody = z.strictObject({
  body: z.string().min(1).max(65_536),
  by: name.optional(),
  worker: name.optional(),
  token: token.optional(),
});
const linkBody = z.strictObject({ dependsOn: name, by: name.optional() });

const user = (by?: string): BoardActor => ({ kind: 'user', name: by ?? 'user' });

export function boardRoutes(board: BoardService, route: RouteAdder, limit: (url: URL) => number | undefined): void {
  const body = async <T>(schema: z.ZodType<T>, request: IncomingMessage) => parseBody(schema, await readJson(request));
  route('GET', /^\/v1\/board\/tasks$/, async (_req, url): Promise<BoardTasksAnswer> => {
    const states = url.searchParams.get('state')?.split(',').map(parseBoardState);
    const tasks = await board.list(
      {
        board: url.searchParams.get('board') ?? undefined,
        states,
        assignee: url.searchParams.get('assignee') ?? undefined,
        limit: limit(url),
      },
      user(),
    );
    const deps = await board.dependencies(tasks.map((task) => task.id));
    return { tasks: tasks.map((task) => ({ ...task, dependsOn: deps[task.id] ?? [] })) };
  });
  route('POST', /^\/v1\/board\/tasks$/, async (request) => {
    const { creator, ...task } = await body(createBody, request);
    return board.create(task, user(creator));
  });
  route('GET', TASK, async (_req, _url, [id]): Promise<BoardTaskView> => board.view(id, user()));
  route('POST', action('move'), async (request, _url, [id]) => {
    const { state, reason, by } = await body(moveBody, request);
    return { task: await board.move(id, state, user(by), reason) };
  });
  route('POST', action('review'), async (request, _url, [id]) => {
    const { approve, comment, by } = await body(reviewBody, request);
    return { task: await board.review(id, approve, user(by), comment) };
  });
  route('POST', action('comments'), async (request, _url, [id]) => {
    const given = await body(commentBody, request);
    if ((given.worker === undefined) !== (given.token === undefined))
      throw new SwitchboardError('INVALID_REQUEST', 'worker and token go together: a worker comments under its claim');
    const author = given.worker !== undefined ? { kind: 'worker' as const, name: given.worker, token: given.token! } : user(given.by);
    return { comment: await board.comment(id, given.body, author) };
  });
  route('POST', action('links'), async (request, _url, [id]) => {
    const { dependsOn, by } = await body(linkBody, request);
    return { task: await board.link(id, dependsOn, user(by)) };
  });
  route('POST', /^\/v1\/board\/claim$/, async (request) => {
    const answer = await board.claim(await body(claimBody, request));
    return answer ? { claim: answer.claim, ...answer.view } : { claim: null };
  });
  route('POST', action('heartbeat'), async (request, _url, [id]) => {
    const { token: given, ttlSeconds } = await body(heartbeatBody, request);
    return { claim: await board.heartbeat(id, given, ttlSeconds) };
  });
  route('POST', action('complete'), async (request, _url, [id]) => {
    const given = await body(completeBody, request);
    return { task: await board.complete(id, given.token, given.result, { summary: given.summary, review: given.review }) };
  });
  route('POST', action('block'), async (request, _url, [id]) => {
    const given = await body(blockBody, request);
    return { task: await board.block(id, given.token, given.kind, given.reason) };
  });
  route('POST', action('release'), async (request, _url, [id]) => {
    const given = await body(releaseBody, request);
    return { task: await board.release(id, given.token, given.reason) };
  });
  route('GET', /^\/v1\/board\/events$/, async (_req, url) => {
    const after = url.searchParams.get('after');
    if (after !== null && !/^\d{1,15}$/.test(after))
      throw new SwitchboardError('INVALID_REQUEST', `after: expected an event sequence number, got "${after.slice(0, 40)}"`);
    return {
      events: await board.events({
        taskId: url.searchParams.get('taskId') ?? undefined,
        afterSeq: after === null ? undefined : Number(after),
        limit: limit(url),
      }),
    };
  });
}
