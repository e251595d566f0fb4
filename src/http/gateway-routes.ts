/**
 * The control API's routes into the gateway (docs/control-api.md): status and config reload, agents, sessions and
 * their history, exchanges, A2A tasks, runs and their forks, sub-agents, the outbox, a store backup, and cancels and
 * kills. Each goes through the gateway's one door.
 */
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import type { ConfigReload } from '../config/reload.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { OutboxStatus } from '../ports/index.js';
import type {
  AgentsAnswer,
  CancelAnswer,
  ExchangeAnswer,
  HistoryAnswer,
  KillAnswer,
  OutboxAnswer,
  RunsAnswer,
  SessionAnswer,
  SessionsAnswer,
  StatusAnswer,
  SubagentsAnswer,
} from './answers.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const MAX_LIMIT = 10_000;
const backupBody = z.strictObject({ path: z.string().min(1).max(4096) });
/** `POST /v1/runs/<id>/fork`: how many of the run's steps the fork keeps (its model is asked from that step on). */
const forkBody = z.strictObject({ step: z.number().int().min(0).max(100_000) });
const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'dead', 'dropped'];

/** `?limit=`: an integer from 1 to 10,000, or none. */
export function limitOf(url: URL): number | undefined {
  const raw = url.searchParams.get('limit');
  if (raw === null) return undefined;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 1 && value <= MAX_LIMIT))
    throw new SwitchboardError('INVALID_REQUEST', `limit: expected an integer from 1 to ${MAX_LIMIT}, got "${raw.slice(0, 40)}"`);
  return value;
}

/** `?archived=true|false`, or none (both). */
function archivedOf(url: URL): boolean | undefined {
  const raw = url.searchParams.get('archived');
  if (raw === null) return undefined;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw new SwitchboardError('INVALID_REQUEST', `archived: expected true or false, got "${raw.slice(0, 40)}"`);
}

export function gatewayRoutes(gw: GatewayApi, route: RouteAdder, reloadConfig?: () => ConfigReload): void {
  route(
    'GET',
    /^\/v1\/status$/,
    async (): Promise<StatusAnswer> => ({ ...gw.status(), outbox: await gw.outboxBacklog(), gateways: await gw.gateways() }),
  );
  route('POST', /^\/v1\/config\/reload$/, async () => {
    if (!reloadConfig) throw new SwitchboardError('NOT_FOUND', 'this gateway was not started from a config file, so it has none to reload');
    return reloadConfig();
  });
  route(
    'GET',
    /^\/v1\/agents$/,
    async (): Promise<AgentsAnswer> => ({
      agents: gw.agents.list().map((agent) => ({
        id: agent.config.id,
        name: agent.config.name ?? null,
        identity: agent.config.identity ?? null,
        model: agent.model,
        workspace: agent.workspace ?? null,
        default: agent === gw.agents.defaultAgent(),
      })),
    }),
  );
  route(
    'GET',
    /^\/v1\/sessions$/,
    async (_req, url): Promise<SessionsAnswer> => ({
      sessions: await gw.listSessions({
        agentId: url.searchParams.get('agentId') ?? undefined,
        archived: archivedOf(url),
        limit: limitOf(url),
      }),
    }),
  );
  route('GET', /^\/v1\/sessions\/([^/]+)$/, async (_req, _url, [key]): Promise<SessionAnswer> => gw.describeSession(key));
  route(
    'GET',
    /^\/v1\/sessions\/([^/]+)\/history$/,
    async (_req, url, [key]): Promise<HistoryAnswer> => ({ entries: await gw.history(key, limitOf(url)) }),
  );
  route('GET', /^\/v1\/exchanges$/, async (_req, url) => ({
    exchanges: await gw.listExchanges({ sessionKey: url.searchParams.get('sessionKey') ?? undefined, limit: limitOf(url) }),
  }));
  route(
    'GET',
    /^\/v1\/exchanges\/([^/]+)$/,
    async (_req, _url, [id]): Promise<ExchangeAnswer> => gw.getExchange(await gw.resolveId('exchange', id)),
  );
  route(
    'GET',
    /^\/v1\/runs$/,
    async (_req, url): Promise<RunsAnswer> => ({
      runs: await gw.listRuns({ sessionKey: url.searchParams.get('sessionKey') ?? undefined, limit: limitOf(url) }),
    }),
  );
  route('GET', /^\/v1\/runs\/([^/]+)$/, async (_req, _url, [given]) => {
    const id = await gw.resolveId('run', given);
    const shown = await gw.getRun(id);
    const { run } = shown;
    return { ...shown, steps: await gw.runSteps(run), toolCalls: await gw.runToolCalls(run), completions: await gw.runCompletions(id) };
  });
  route(
    'GET',
    /^\/v1\/subagents$/,
    async (_req, url): Promise<SubagentsAnswer> => ({
      subagents: await gw.listSubagents(url.searchParams.get('sessionKey') ?? undefined, url.searchParams.get('recursive') === 'true'),
    }),
  );
  route('GET', /^\/v1\/subagents\/([^/]+)$/, async (_req, _url, [target]) => {
    const { view, record } = await gw.getSubagent(await gw.resolveId('subagent', target));
    return {
      ...view,
      task: record.task,
      // What the sub-agent is offered (its spawn's list narrowed by the policy, its role and each tool's check).
      tools: record.runtime ? record.tools : await gw.offeredToolNames(record.sessionKey),
      model: record.model,
      workdir: record.workdir,
      timeoutSeconds: record.timeoutSeconds,
      result: record.result,
      resultHash: record.resultHash,
      usage: record.usage,
      completion: record.completion,
    };
  });
  route(
    'POST',
    /^\/v1\/subagents\/([^/]+)\/kill$/,
    async (_req, _url, [target]): Promise<KillAnswer> => ({
      cancelled: await gw.killSubagent(await gw.resolveId('subagent', target)),
    }),
  );
  route(
    'POST',
    /^\/v1\/runs\/([^/]+)\/cancel$/,
    async (_req, _url, [id]): Promise<CancelAnswer> => ({
      cancelled: await gw.cancelRun(await gw.resolveId('run', id)),
    }),
  );
  route('POST', /^\/v1\/runs\/([^/]+)\/fork$/, async (request, _url, [id]): Promise<{ sessionKey: string; runId: string }> => {
    const { step } = parseBody(forkBody, await readJson(request));
    return gw.forkRun(await gw.resolveId('run', id), step);
  });
  route('POST', /^\/v1\/store\/backup$/, async (request) => {
    const { path } = parseBody(backupBody, await readJson(request));
    return gw.backupStore(path);
  });
  route('GET', /^\/v1\/outbox$/, async (_req, url): Promise<OutboxAnswer> => {
    const status = url.searchParams.get('status') ?? undefined;
    if (status !== undefined && !OUTBOX_STATUSES.includes(status as OutboxStatus)) {
      throw new SwitchboardError('INVALID_REQUEST', `status: expected one of ${OUTBOX_STATUSES.join(', ')}, got "${status.slice(0, 40)}"`);
    }
    return { rows: await gw.listOutbox({ status: status as OutboxStatus | undefined, limit: limitOf(url) }) };
  });
  route('POST', /^\/v1\/outbox\/([^/]+)\/(retry|drop)$/, async (_req, _url, [id, action]) => ({
    row: await gw.settleDeadOutbox(await gw.resolveId('outbox', id), action as 'retry' | 'drop'),
  }));
}
