/**
 * The control API: JSON over HTTP on 127.0.0.1, a bearer token on every request, and an SSE stream
 * of the event journal. A thin edge: it validates, calls the gateway, and maps SwitchboardError codes
 * to HTTP statuses. The routes are in gateway-routes.ts, send-routes.ts and board-routes.ts.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorMessage, SwitchboardError, toSwitchboardError } from '../core/errors.js';
import type { ConfigReload } from '../config/reload.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { A2ATaskStore, EventRecord } from '../ports/index.js';
import type { BoardService } from '../board/board.js';
import { boardRoutes } from './board-routes.js';
import { memoryRoutes } from './memory-routes.js';
import { gateRoutes } from './gate-routes.js';
import { channelRoutes, type ChannelControl, WEBHOOK_PATH } from './channel-routes.js';
import { teamRoutes } from './team-routes.js';
import { scheduleRoutes } from './schedule-routes.js';
import type { ScheduleRunner } from '../schedules/schedule-runner.js';
import type { Teams } from '../mailbox/teams.js';
import type { MemoryService } from '../memory/memory-service.js';
import { a2aTaskRoutes } from './a2a-task-routes.js';
import { gatewayRoutes, limitOf } from './gateway-routes.js';
import { insightRoutes, type MapSource } from './insight-routes.js';
import type { Handler, RouteAdder } from './route.js';
import { sendRoutes } from './send-routes.js';
import { readBody } from './json-body.js';
import { parseTraceparent, traceScope } from '../kit/trace-context.js';

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
  /** The A2A tasks this gateway served (/v1/a2a/tasks...): the A2A front's own store port. */
  a2aTasks?: Pick<A2ATaskStore, 'list' | 'get' | 'listEvents'>;
  /** The fronts' hand-offs for the collaboration map (`GET /v1/graph`), beside the gateway's own. */
  mapSources?: readonly MapSource[];
  /** The task board's routes (/v1/board/...), when the gateway has one. */
  board?: BoardService;
  /** The memory routes (/v1/memory...), when the gateway has memory. */
  memory?: MemoryService;
  /** The team routes (/v1/teams...). */
  teams?: Teams;
  /** The chat channels (/v1/channels..., and the platforms' webhooks at /channels/<channel>/<account>). */
  channels?: ChannelControl;
  /** The schedule routes (/v1/schedules). */
  schedules?: ScheduleRunner;
  /** Push notifications from remote A2A agents (`/a2a-callback/<taskId>`); false when the task's secret does not match. */
  a2aCallback?: (taskId: string, token: string | undefined) => Promise<boolean>;
  /** The web console (src/console): its pages and login on this listener, and its login cookie accepted by the API. */
  console?: {
    handles(pathname: string): boolean;
    handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
    routes(route: RouteAdder): void;
    auth: { loggedIn(request: IncomingMessage): Promise<boolean>; onLogout(listener: () => void): () => void };
  };
  /** `POST /v1/config/reload`: the config file read again and applied (app.ts). */
  reloadConfig?: () => ConfigReload;
  /** Switchboard as an MCP server (`/mcp`, docs/mcp-server.md), behind the token; absent when mcpServer.enabled is false. */
  mcp?: { handle(request: IncomingMessage, response: ServerResponse): Promise<void>; close(): Promise<void> };
  /** `GET /metrics` for Prometheus, behind the token (src/telemetry), when telemetry.metrics is on. */
  metrics?: (request: IncomingMessage, response: ServerResponse) => void;
  /** The gateway's log: a request the store did not take (warn) and one that failed inside (error). Default: none. */
  log?: (level: 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
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
    await this.options.mcp?.close();
    for (const stream of this.streams) stream.end();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private route(method: string, pattern: RegExp, handler: Handler): void {
    this.routes.push({ method, pattern, handler });
  }

  private defineRoutes(): void {
    const route: RouteAdder = (method, pattern, handler) => this.route(method, pattern, handler);
    gatewayRoutes(this.gateway, route, this.options.reloadConfig);
    if (this.options.a2aTasks) a2aTaskRoutes(this.options.a2aTasks, this.gateway, route, limitOf);
    insightRoutes(this.gateway, route, this.options.mapSources);
    if (this.options.board) boardRoutes(this.options.board, route, limitOf);
    if (this.options.memory) memoryRoutes(this.options.memory, route);
    if (this.options.teams) teamRoutes(this.options.teams, route);
    if (this.options.schedules) scheduleRoutes(this.options.schedules, route);
    sendRoutes(this.gateway, route);
    gateRoutes(this.gateway, route, limitOf);
    if (this.options.channels) channelRoutes(this.options.channels, route, limitOf);
    this.options.console?.routes(route);
  }

  /** A request that carries a W3C `traceparent` (a remote gateway's A2A call, a traced script) joins the caller's trace. */
  private handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const caller = parseTraceparent(request.headers.traceparent);
    return caller ? traceScope.run(caller, () => this.serve(request, response)) : this.serve(request, response);
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (this.options.front?.handles(url.pathname)) return this.options.front.handle(request, response);
      if (!this.options.front && A2A_PATHS.test(url.pathname)) {
        throw new SwitchboardError(
          'NOT_FOUND',
          `the A2A server is off on this gateway, so ${url.pathname} serves nothing: set a2a.server.enabled: true in its config (with a2a.server.peers) and restart it`,
        );
      }
      if (this.options.console?.handles(url.pathname)) return await this.options.console.handle(request, response, url);
      const webhook = this.options.channels && request.method === 'POST' ? url.pathname.match(WEBHOOK_PATH) : null;
      if (webhook && this.options.channels) {
        // A platform's webhook: its account checks the platform's signature, not the control token.
        const answer = await this.options.channels.webhook(webhook[1], webhook[2], {
          headers: request.headers,
          body: await readBody(request),
        });
        return sendJson(response, answer.status, answer.body ?? {});
      }
      const callback = url.pathname.match(/^\/a2a-callback\/([^/]+)$/);
      if (callback && request.method === 'POST') return await this.receivePush(request, response, decodeSegment(callback[1]));
      // Probes for process supervisors: no token, and nothing in the answer but the state.
      if (request.method === 'GET' && url.pathname === '/healthz') return sendJson(response, 200, { status: 'ok' });
      if (request.method === 'GET' && url.pathname === '/readyz') {
        const ready = await this.gateway.ready();
        return sendJson(response, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
      }
      await this.authorize(request);
      if (url.pathname === '/mcp') return await this.serveMcp(request, response);
      if (request.method === 'GET' && url.pathname === '/metrics') return this.serveMetrics(request, response);
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
      this.logFailure(request, caught, error);
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

  /**
   * A request the store did not take is answered 503 and can be sent again, but the operator needs to see it (a
   * database that restarts, a gateway paused past its lease): each is logged with the driver's cause. So is a failure
   * inside the gateway (500); refusals of the request itself are the client's to read, not logged.
   */
  private logFailure(request: IncomingMessage, failure: SwitchboardError, error: unknown): void {
    if (failure.code !== 'STORE_FAILED' && failure.code !== 'INTERNAL') return;
    const where = `${request.method} ${(request.url ?? '/').split('?')[0]}`;
    // The driver's own words, when the store already named the failure (connect-failures.ts).
    const driver = SwitchboardError.isInstance(error) && error.cause !== undefined ? error.cause : error;
    if (failure.code === 'STORE_FAILED')
      this.options.log?.('warn', `${where}: the store did not take this request (answered 503 STORE_FAILED): ${errorMessage(driver)}`, {
        cause: failure.details?.cause,
      });
    else this.options.log?.('error', `${where}: failed inside the gateway (answered 500 INTERNAL): ${errorMessage(error)}`, {});
  }

  /** The task board's routes (/v1/board/...), when the gateway has one. */
  board?: BoardService;
  private serveMetrics(request: IncomingMessage, response: ServerResponse): void {
    if (!this.options.metrics)
      throw new SwitchboardError(
        'NOT_FOUND',
        'metrics are off on this gateway, or served on their own listener (telemetry.metrics.listen): set telemetry.metrics.enabled: true and restart it (docs/observability.md)',
      );
    this.options.metrics(request, response);
  }

  private serveMcp(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!this.options.mcp)
      throw new SwitchboardError(
        'NOT_FOUND',
        'the MCP server is off on this gateway: set mcpServer.enabled: true in its config and restart it (docs/mcp-server.md)',
      );
    return this.options.mcp.handle(request, response);
  }

  /** Push notifications from remote A2A agents; each task's own secret authenticates them, not the control token. */
  private async receivePush(request: IncomingMessage, response: ServerResponse, taskId: string): Promise<void> {
    // The body is not trusted for state (the follower reads the task itself), only drained.
    await readBody(request);
    const token = request.headers['x-a2a-notification-token'];
    const accepted = (await this.options.a2aCallback?.(taskId, typeof token === 'string' ? token : undefined)) ?? false;
    if (!accepted) throw new SwitchboardError('UNAUTHORIZED', 'unknown task or wrong notification token');
    sendJson(response, 200, { received: true });
  }

  private async authorize(request: IncomingMessage): Promise<void> {
    const header = request.headers.authorization;
    if (header === undefined && (await this.options.console?.auth.loggedIn(request))) {
      // The cookie goes with any request from this host, whatever page made it (SameSite does not look at ports): a
      // change must also carry the console's header, which no other page can add without a CORS preflight this API
      // never answers.
      if (request.method !== 'GET' && request.headers['x-switchboard-console'] !== '1') {
        throw new SwitchboardError(
          'FORBIDDEN',
          'a change made with the console\'s login must carry the header "X-Switchboard-Console: 1"; scripts use "Authorization: Bearer <token>"',
        );
      }
      return;
    }
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
    // A stream opened with the console's login ends with it: at once after a logout on this gateway, and at the next
    // heartbeat after one on another gateway of the store.
    const auth = request.headers.authorization === undefined ? this.options.console?.auth : undefined;
    const recheck = async () => {
      if (auth && !(await auth.loggedIn(request).catch(() => true))) response.end();
    };
    const unlisten = auth?.onLogout(() => void recheck());
    const heartbeat = setInterval(() => {
      response.write(': keep-alive\n\n');
      void recheck();
    }, 15_000);
    request.on('close', () => {
      clearInterval(heartbeat);
      unlisten?.();
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
