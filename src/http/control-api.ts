/**
 * The control API: JSON over HTTP on 127.0.0.1, a bearer token on every request, and an SSE stream
 * of the event journal. A thin edge: it validates, calls the gateway, and maps SwitchboardError codes
 * to HTTP statuses.
 */
import { randomUUID } from 'node:crypto';
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import { SwitchboardError, toSwitchboardError } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import type { ConfigReload } from '../gateway/config-reload.js';
import type { GatewayApi } from '../gateway/gateway-api.js';
import type { EventRecord, OutboxStatus } from '../ports/index.js';
import type { BoardService } from '../board/board.js';
import { boardRoutes } from './board-routes.js';
import { parseBody, readBody, readJson } from './json-body.js';

const MAX_LIMIT = 10_000;
const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'dead', 'dropped'];

const sendBody = z.strictObject({
  target: z.string().min(1).optional(),
  message: z.string(),
  mode: z.enum(QUEUE_MODES).optional(),
  idempotencyKey: z.string().min(1).max(512).optional(),
  wait: z.boolean().optional(),
  timeoutSeconds: z.number().positive().max(3600).optional(),
  channel: z.string().min(1).max(64).optional(),
  peer: z.string().min(1).max(256).optional(),
  account: z.string().min(1).max(256).optional(),
  /** Send as this agent session (sessions_send's checks apply); the reply belongs to that session. */
  from: z.string().min(1).max(512).optional(),
  /** With `from`: the target session's label (`target`, if given, is then the agent id). */
  label: z.string().min(1).max(512).optional(),
});

type Handler = (request: IncomingMessage, url: URL, params: string[]) => Promise<unknown>;

interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

export interface ControlApiOptions {
  host: string;
  port: number;
  token: string;
  /** A front served on the same listener with its own authentication (the A2A server). */
  front?: {
    handles(pathname: string): boolean;
    handle(request: IncomingMessage, response: ServerResponse): void;
    start(listenUrl: string): Promise<void>;
    stop(): Promise<void>;
  };
  /** The task board's routes (/v1/board/...), when the gateway has one. */
  board?: BoardService;
  /** Push notifications from remote A2A agents (`/a2a-callback/<taskId>`); false when the task's secret does not match. */
  a2aCallback?: (taskId: string, token: string | undefined) => Promise<boolean>;
  /** `POST /v1/config/reload`: the config file read again and applied (app.ts). */
  reloadConfig?: () => ConfigReload;
}

/**
 * Anyone may be told how to get a token, but not where this gateway's files are: the hint names the config as a
 * placeholder. The CLI, which knows its config, names it in full (cli/client.ts).
 */
/** Where the A2A server answers when it is on (its endpoints, and the v1.0 and v0.3 card paths). */
const A2A_PATHS = /^\/(a2a\/|\.well-known\/agent-card\.json$|\.well-known\/agent\.json$)/;

const TOKEN_HINT = 'print it with "switchboard --config <file> token", <file> being the config this gateway was started with';

export class ControlApi {
  private readonly server: Server;
  private readonly routes: Route[] = [];
  private readonly streams = new Set<ServerResponse>();

  constructor(
    private readonly gateway: GatewayApi,
    private readonly options: ControlApiOptions,
  ) {
    this.server = createServer((request, response) => void this.handle(request, response));
    // A CONNECT (a proxy's tunnel request) is not a request event: answered like any method the API lacks.
    this.server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
      const body = JSON.stringify({
        error: new SwitchboardError(
          'METHOD_NOT_ALLOWED',
          `CONNECT is not supported: this is the gateway's control API, not a proxy`,
        ).toJSON(),
      });
      socket.on('error', () => socket.destroy());
      socket.end(
        `HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    this.defineRoutes();
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `http://${host}:${address.port}`;
    await this.options.front?.start(url);
    return url;
  }

  async close(): Promise<void> {
    await this.options.front?.stop();
    for (const stream of this.streams) stream.end();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private route(method: string, pattern: RegExp, handler: Handler): void {
    this.routes.push({ method, pattern, handler });
  }

  private defineRoutes(): void {
    const gw = this.gateway;
    const limit = (url: URL) => {
      const raw = url.searchParams.get('limit');
      if (raw === null) return undefined;
      const value = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
      if (!(value >= 1 && value <= MAX_LIMIT))
        throw new SwitchboardError('INVALID_REQUEST', `limit: expected an integer from 1 to ${MAX_LIMIT}, got "${raw.slice(0, 40)}"`);
      return value;
    };
    this.route('GET', /^\/v1\/status$/, async () => gw.status());
    this.route('POST', /^\/v1\/config\/reload$/, async () => {
      if (!this.options.reloadConfig)
        throw new SwitchboardError('NOT_FOUND', 'this gateway was not started from a config file, so it has none to reload');
      return this.options.reloadConfig();
    });
    this.route('GET', /^\/v1\/agents$/, async () => ({
      agents: gw.agents.list().map((agent) => ({
        id: agent.config.id,
        name: agent.config.name ?? null,
        identity: agent.config.identity ?? null,
        model: agent.model,
        workspace: agent.workspace ?? null,
        default: agent === gw.agents.defaultAgent(),
      })),
    }));
    this.route('GET', /^\/v1\/sessions$/, async (_req, url) => ({
      sessions: await gw.listSessions({ agentId: url.searchParams.get('agentId') ?? undefined, limit: limit(url) }),
    }));
    this.route('GET', /^\/v1\/sessions\/([^/]+)$/, async (_req, _url, [key]) => gw.describeSession(key));
    this.route('GET', /^\/v1\/sessions\/([^/]+)\/history$/, async (_req, url, [key]) => ({ entries: await gw.history(key, limit(url)) }));
    this.route('GET', /^\/v1\/exchanges$/, async (_req, url) => ({
      exchanges: await gw.listExchanges({ sessionKey: url.searchParams.get('sessionKey') ?? undefined, limit: limit(url) }),
    }));
    this.route('GET', /^\/v1\/a2a\/tasks$/, async (_req, url) => ({
      tasks: await gw.listA2ATasks({ agentId: url.searchParams.get('agentId') ?? undefined, limit: limit(url) }),
    }));
    this.route('GET', /^\/v1\/exchanges\/([^/]+)$/, async (_req, _url, [id]) => gw.getExchange(await gw.resolveId('exchange', id)));
    this.route('GET', /^\/v1\/a2a\/tasks\/([^/]+)$/, async (_req, _url, [id]) => gw.getA2ATask(await gw.resolveId('a2a_task', id)));
    this.route('GET', /^\/v1\/runs$/, async (_req, url) => ({
      runs: await gw.listRuns({ sessionKey: url.searchParams.get('sessionKey') ?? undefined, limit: limit(url) }),
    }));
    this.route('GET', /^\/v1\/runs\/([^/]+)$/, async (_req, _url, [given]) => {
      const id = await gw.resolveId('run', given);
      return { ...(await gw.getRun(id)), completions: await gw.runCompletions(id) };
    });
    this.route('GET', /^\/v1\/subagents$/, async (_req, url) => ({
      subagents: await gw.listSubagents(url.searchParams.get('sessionKey') ?? undefined, url.searchParams.get('recursive') === 'true'),
    }));
    this.route('GET', /^\/v1\/subagents\/([^/]+)$/, async (_req, _url, [target]) => {
      const { view, record } = await gw.getSubagent(await gw.resolveId('subagent', target));
      return {
        ...view,
        task: record.task,
        tools: record.tools,
        model: record.model,
        workdir: record.workdir,
        timeoutSeconds: record.timeoutSeconds,
        result: record.result,
        resultHash: record.resultHash,
        usage: record.usage,
        completion: record.completion,
      };
    });
    this.route('POST', /^\/v1\/subagents\/([^/]+)\/kill$/, async (_req, _url, [target]) => ({
      cancelled: await gw.killSubagent(await gw.resolveId('subagent', target)),
    }));
    this.route('POST', /^\/v1\/runs\/([^/]+)\/cancel$/, async (_req, _url, [id]) => ({
      cancelled: await gw.cancelRun(await gw.resolveId('run', id)),
    }));
    this.route('GET', /^\/v1\/outbox$/, async (_req, url) => {
      const status = url.searchParams.get('status') ?? undefined;
      if (status !== undefined && !OUTBOX_STATUSES.includes(status as OutboxStatus)) {
        throw new SwitchboardError(
          'INVALID_REQUEST',
          `status: expected one of ${OUTBOX_STATUSES.join(', ')}, got "${status.slice(0, 40)}"`,
        );
      }
      return { rows: await gw.listOutbox({ status: status as OutboxStatus | undefined, limit: limit(url) }) };
    });
    this.route('POST', /^\/v1\/outbox\/([^/]+)\/(retry|drop)$/, async (_req, _url, [id, action]) => ({
      row: await gw.settleDeadOutbox(await gw.resolveId('outbox', id), action as 'retry' | 'drop'),
    }));
    if (this.options.board) boardRoutes(this.options.board, (method, pattern, handler) => this.route(method, pattern, handler), limit);
    this.route('POST', /^\/v1\/send$/, async (request) => {
      const body = parseBody(sendBody, await readJson(request));
      if (body.from) return this.sendAs(body);
      if (body.label)
        throw new SwitchboardError(
          'INVALID_REQUEST',
          'label is only used with from (a send as an agent session); address your own sends with target',
        );
      const sent = await gw.send({
        target: body.target,
        message: body.message,
        mode: body.mode,
        idempotencyKey: body.idempotencyKey,
        waiting: body.wait === true,
        inbound: {
          channel: body.channel ?? 'api',
          ...(body.peer ? { peer: body.peer } : {}),
          ...(body.account ? { account: body.account } : {}),
        },
      });
      const accepted = {
        status: 'accepted',
        inputId: sent.input.id,
        sessionKey: sent.sessionKey,
        created: sent.created,
        mode: sent.input.mode,
      };
      if (!body.wait) return accepted;
      const timeoutMs = (body.timeoutSeconds ?? gw.config.gateway.waitTimeoutSeconds) * 1000;
      const result = await gw.waitForInput(sent.input.id, timeoutMs);
      switch (result.status) {
        case 'completed':
          return {
            ...accepted,
            status: 'ok',
            reply: result.reply,
            runId: result.run.id,
            runStatus: result.run.status,
            error: result.run.errorMessage,
          };
        case 'stored':
          return { ...accepted, status: 'stored' };
        case 'dropped':
          return { ...accepted, status: 'dropped', error: result.input.note };
        case 'timeout':
          // "Delivered" is an acknowledgement: the input, accepted unsynced for a waited send, is made durable first.
          await gw.durable();
          return { ...accepted, status: 'timeout', delivered: true };
      }
    });
  }

  private async sendAs(body: z.infer<typeof sendBody>): Promise<unknown> {
    if (body.channel || body.peer || body.account) {
      throw new SwitchboardError(
        'INVALID_REQUEST',
        "channel, peer and account describe a user's channel; a send with from comes from an agent session and takes none of them",
      );
    }
    const target = body.target;
    const ref = body.label
      ? { label: body.label, agentId: target }
      : target?.startsWith('agent:')
        ? { sessionKey: target }
        : { agentId: target };
    if (!ref.label && !ref.sessionKey && !ref.agentId)
      throw new SwitchboardError('INVALID_REQUEST', 'a send with from needs a target (an agent id or a session key) or a label');
    const timeoutSeconds = body.wait ? (body.timeoutSeconds ?? this.gateway.config.gateway.waitTimeoutSeconds) : 0;
    return this.gateway.sendAs(body.from!, {
      ...ref,
      message: body.message,
      mode: body.mode,
      timeoutSeconds,
      idempotencyKey: body.idempotencyKey ?? `api:${randomUUID()}`,
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (this.options.front?.handles(url.pathname)) return this.options.front.handle(request, response);
      if (!this.options.front && A2A_PATHS.test(url.pathname)) {
        throw new SwitchboardError(
          'NOT_FOUND',
          `the A2A server is off on this gateway, so ${url.pathname} serves nothing: set a2a.server.enabled: true in its config (with a2a.server.peers) and restart it`,
        );
      }
      const callback = url.pathname.match(/^\/a2a-callback\/([^/]+)$/);
      if (callback && request.method === 'POST') return await this.receivePush(request, response, decodeSegment(callback[1]));
      // Probes for process supervisors: no token, and nothing in the answer but the state.
      if (request.method === 'GET' && url.pathname === '/healthz') return sendJson(response, 200, { status: 'ok' });
      if (request.method === 'GET' && url.pathname === '/readyz') {
        const ready = await this.gateway.ready();
        return sendJson(response, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
      }
      this.authorize(request);
      if (request.method === 'GET' && url.pathname === '/v1/events') return await this.streamEvents(request, response, url);
      for (const route of this.routes) {
        const match = url.pathname.match(route.pattern);
        if (!match) continue;
        if (route.method !== request.method) continue;
        const params = match.slice(1).map(decodeSegment);
        const result = await route.handler(request, url, params);
        return sendJson(response, 200, result);
      }
      const allowed = this.routes.filter((route) => route.pattern.test(url.pathname)).map((route) => route.method);
      if (allowed.length > 0) {
        response.setHeader('Allow', [...new Set(allowed)].join(', '));
        throw new SwitchboardError(
          'METHOD_NOT_ALLOWED',
          `${request.method} is not supported on ${url.pathname} (use ${[...new Set(allowed)].join(' or ')})`,
        );
      }
      throw new SwitchboardError('NOT_FOUND', `no such endpoint: ${request.method} ${url.pathname}`);
    } catch (error) {
      const caught = toSwitchboardError(error);
      const failure =
        caught.code === 'INTERNAL' || caught.code === 'MODEL_PROVIDER_ERROR'
          ? new SwitchboardError(caught.code, this.gateway.redact(caught.message), caught.details)
          : caught;
      if (!response.headersSent) {
        // Overload and rate refusals say when to come back, as HTTP clients and proxies expect; limits that
        // waiting does not lift (hops, sub-agent counts) carry no retryAfterMs, so no header.
        const retryAfterMs = failure.details?.retryAfterMs;
        if (typeof retryAfterMs === 'number') response.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
        sendJson(response, failure.httpStatus, { error: failure.toJSON() });
      } else response.end();
    }
  }

  /** The task board's routes (/v1/board/...), when the gateway has one. */
  board?: BoardService;
  /** Push notifications from remote A2A agents; each task's own secret authenticates them, not the control token. */
  private async receivePush(request: IncomingMessage, response: ServerResponse, taskId: string): Promise<void> {
    // The body is not trusted for state (the follower reads the task itself), only drained.
    await readBody(request);
    const token = request.headers['x-a2a-notification-token'];
    const accepted = (await this.options.a2aCallback?.(taskId, typeof token === 'string' ? token : undefined)) ?? false;
    if (!accepted) throw new SwitchboardError('UNAUTHORIZED', 'unknown task or wrong notification token');
    sendJson(response, 200, { received: true });
  }

  private authorize(request: IncomingMessage): void {
    const header = request.headers.authorization;
    if (!header?.startsWith('Bearer ')) {
      throw new SwitchboardError('UNAUTHORIZED', `missing bearer token: send "Authorization: Bearer <token>" (${TOKEN_HINT})`);
    }
    const given = Buffer.from(header.slice('Bearer '.length).trim());
    const expected = Buffer.from(this.options.token);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new SwitchboardError('UNAUTHORIZED', `invalid bearer token (${TOKEN_HINT})`);
    }
  }

  /**
   * SSE: journal events after `?after=<seq>` (or the Last-Event-ID header), then live ones.
   * `?sessionKey=` and `?type=` (a prefix: `board.`) filter; `?deltas=1` adds streamed model text as `delta` events.
   */
  private async streamEvents(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const sessionKey = url.searchParams.get('sessionKey') ?? undefined;
    const typePrefix = url.searchParams.get('type') ?? undefined;
    const deltas = url.searchParams.get('deltas') === '1';
    const afterRaw = url.searchParams.get('after') ?? request.headers['last-event-id'];
    let lastSeq = afterRaw === undefined ? undefined : Number(afterRaw);
    if (lastSeq !== undefined && !Number.isInteger(lastSeq))
      throw new SwitchboardError('INVALID_REQUEST', `after: expected an event sequence number, got "${afterRaw}"`);
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    response.write(': switchboard events\n\n');
    this.streams.add(response);
    const pending: EventRecord[] = [];
    let replaying = true;
    const write = (event: EventRecord) => {
      if (sessionKey && event.sessionKey !== sessionKey) return;
      if (typePrefix && !event.type.startsWith(typePrefix)) return;
      if (lastSeq !== undefined && event.seq <= lastSeq) return;
      lastSeq = event.seq;
      response.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    };
    const unsubscribe = this.gateway.subscribe((live) => {
      if (live.type === 'journal') {
        if (replaying) pending.push(live.event);
        else write(live.event);
      } else if (live.type === 'delta' && deltas && (!sessionKey || live.sessionKey === sessionKey)) {
        response.write(`event: delta\ndata: ${JSON.stringify(live)}\n\n`);
      }
    });
    const unwatch = deltas ? this.gateway.watchDeltas(sessionKey) : undefined;
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
    request.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
      unwatch?.();
      this.streams.delete(response);
    });
    if (lastSeq !== undefined) {
      for (;;) {
        const page = await this.gateway.journalAfter(lastSeq, { sessionKey, limit: 500 });
        page.forEach(write);
        if (page.length < 500) break;
      }
    }
    replaying = false;
    pending.forEach(write);
  }
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** A path segment's percent-escapes decoded; a malformed one is the caller's error, not ours. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `the path segment "${segment.slice(0, 80)}" has a malformed percent-escape; encode it with encodeURIComponent`,
    );
  }
}
