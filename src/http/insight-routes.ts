/**
 * What the console shows beyond the plain lists (docs/control-api.md): the collaboration graph, tokens and cost per
 * agent (over time, for the charts), the input queues, the path one message took, a collaboration's trace, and a
 * person's labels and archive marks on sessions. Scriptable like every route.
 */
import { collaborationGraph, type LinkSource } from '../core/collaboration.js';
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import type { Control, Presence, Queries, TraceQuery } from '../ports/gateway.js';

/** What the insight routes ask of the door. */
type InsightGateway = Pick<Presence, 'config'> &
  Pick<Queries, 'collaborationLinks' | 'messagePath' | 'resolveId' | 'usageSince' | 'usageByTime' | 'inputQueues' | 'traceView'> &
  Pick<Control, 'annotateSession'>;
import type { IdKind, UsageTotal } from '../ports/index.js';
import type { AnnotatedSessionAnswer, GraphAnswer, MessagePathAnswer, QueuesAnswer, TraceAnswer, UsageAnswer } from './answers.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const DAY_MS = 86_400_000;
/** The narrowest usage slice, and the most slices one answer has. */
const MIN_BUCKET_MS = 60_000;
const MAX_BUCKETS = 1000;
/** `GET /v1/traces?<name>=<id>`: what each names, and the kind of id it resolves. */
const TRACE_OF: readonly [string, keyof TraceQuery, IdKind][] = [
  ['input', 'inputId', 'input'],
  ['run', 'runId', 'run'],
  ['subagent', 'subagent', 'subagent'],
  ['task', 'taskId', 'board_task'],
];
const annotateBody = z
  .strictObject({ label: z.string().trim().min(1).max(256).nullable().optional(), archived: z.boolean().optional() })
  .refine((body) => body.label !== undefined || body.archived !== undefined, {
    error: 'give label (a string, or null to remove it) or archived',
  });

/** `?<name>=<ms since the epoch>`, or the fallback. */
function timeOf(url: URL, name: string, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value))
    throw new SwitchboardError('INVALID_REQUEST', `${name}: expected a time in milliseconds since the epoch, got "${raw.slice(0, 40)}"`);
  return value;
}

/** `?bucket=<ms>`: the usage slices' size, from a minute up to what makes at most MAX_BUCKETS slices until now. */
function bucketOf(url: URL, since: number): number | undefined {
  if (!url.searchParams.has('bucket')) return undefined;
  const raw = url.searchParams.get('bucket') ?? '';
  const bucketMs = /^\d{1,12}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isNaN(bucketMs))
    throw new SwitchboardError('INVALID_REQUEST', `bucket: expected a slice size in milliseconds, got "${raw.slice(0, 40)}"`);
  const fewest = Math.max(MIN_BUCKET_MS, Math.ceil((Date.now() - since) / MAX_BUCKETS));
  if (bucketMs < fewest)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `bucket: at least ${fewest} ms from since=${since} (a minute, and at most ${MAX_BUCKETS} slices); got ${bucketMs}`,
    );
  return bucketMs;
}

/** Midnight UTC of the day `now` falls on. */
function startOfDay(now: number): number {
  return now - (now % DAY_MS);
}

/** A front's hand-offs in a window, for the collaboration map (the A2A front's tasks, the board's). */
export type MapSource = (window: { since: number; until: number }) => Promise<LinkSource>;

export function insightRoutes(gw: InsightGateway, route: RouteAdder, mapSources: readonly MapSource[] = []): void {
  route('GET', /^\/v1\/graph$/, async (_req, url): Promise<GraphAnswer> => {
    const now = Date.now();
    const until = timeOf(url, 'until', now);
    const since = timeOf(url, 'since', until - DAY_MS);
    if (since > until) throw new SwitchboardError('INVALID_REQUEST', `since (${since}) is after until (${until})`);
    const window = { since, until };
    return collaborationGraph(await Promise.all([gw.collaborationLinks(window), ...mapSources.map((source) => source(window))]), window);
  });
  route('GET', /^\/v1\/usage$/, async (_req, url): Promise<UsageAnswer> => {
    const since = timeOf(url, 'since', startOfDay(Date.now()));
    const prices = gw.config.models.prices;
    const rows = (await gw.usageSince(since)).map((row) => ({ ...row, cost: costOf(row, prices[row.model]) }));
    const agents = new Map<string, { agentId: string; runs: number; inputTokens: number; outputTokens: number; cost: number | null }>();
    for (const row of rows) {
      const agent = agents.get(row.agentId) ?? { agentId: row.agentId, runs: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
      agent.runs += row.runs;
      agent.inputTokens += row.inputTokens;
      agent.outputTokens += row.outputTokens;
      // A cost is only a sum when every model behind it is priced.
      agent.cost = agent.cost === null || row.cost === null ? null : agent.cost + row.cost;
      agents.set(row.agentId, agent);
    }
    const bucketMs = bucketOf(url, since);
    if (bucketMs === undefined) return { since, currency: 'USD', models: rows, agents: [...agents.values()] };
    const slices = (await gw.usageByTime(since, bucketMs)).map((row) => ({ ...row, cost: costOf(row, prices[row.model]) }));
    return { since, currency: 'USD', models: rows, agents: [...agents.values()], bucketMs, slices };
  });
  route('GET', /^\/v1\/queues$/, async (): Promise<QueuesAnswer> => ({ at: Date.now(), sessions: await gw.inputQueues() }));
  route('GET', /^\/v1\/traces\/([^/]+)$/, async (_req, _url, [traceId]): Promise<TraceAnswer> => gw.traceView({ traceId }));
  route('GET', /^\/v1\/traces$/, async (_req, url): Promise<TraceAnswer> => {
    const given = TRACE_OF.filter(([name]) => url.searchParams.has(name));
    if (given.length !== 1)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `give one of ${TRACE_OF.map(([name]) => `${name}=<id>`).join(', ')} (or GET /v1/traces/<traceId>)${given.length > 1 ? `, not ${given.length}` : ''}`,
      );
    const [name, field, kind] = given[0]!;
    return gw.traceView({ [field]: await gw.resolveId(kind, url.searchParams.get(name) ?? '') });
  });
  route(
    'GET',
    /^\/v1\/inputs\/([^/]+)\/path$/,
    async (_req, _url, [id]): Promise<MessagePathAnswer> => gw.messagePath(await gw.resolveId('input', id)),
  );
  route('PATCH', /^\/v1\/sessions\/([^/]+)$/, async (request, _url, [key]): Promise<AnnotatedSessionAnswer> => {
    const body = parseBody(annotateBody, await readJson(request));
    return { session: await gw.annotateSession(key, body) };
  });
}

function costOf(row: UsageTotal, price: { input: number; output: number; cachedInput?: number } | undefined): number | null {
  if (!price) return null;
  const cached = price.cachedInput === undefined ? 0 : row.cachedInputTokens;
  const fresh = row.inputTokens - cached;
  return (fresh * price.input + cached * (price.cachedInput ?? 0) + row.outputTokens * price.output) / 1_000_000;
}
