/**
 * The A2A server front: every exposed agent at `/a2a/<agentId>/` with its Agent Card
 * (`.well-known/agent-card.json`), a JSON-RPC endpoint (`jsonrpc`) and an HTTP+JSON one (`rest`), all on
 * the SDK's DefaultRequestHandler with a durable task store and an executor that runs the agent through
 * the gateway. The default agent's card is also at `/.well-known/agent-card.json`. It shares the control
 * API's listener but none of its credentials: peers authenticate with their own.
 */
import { RefusalReporter, REFUSAL_WINDOW_MS } from './refusals.js';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { AGENT_CARD_PATH, type AgentCard } from '@a2a-js/sdk';
import { DefaultExecutionEventBusManager, type DefaultRequestHandler, type ServerCallContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { isLoopbackHost } from '../config/cross-check.js';
import { errorMessage } from '../core/errors.js';
import { matchesAny } from '../core/tool-policy.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { ResolvedAgent } from '../ports/gateway.js';
import type { A2ATaskStore, Clock } from '../ports/index.js';
import { agentBasePath, agentCardToJson, buildAgentCard } from './agent-card.js';
import { a2aErrorHandler, jsonRpcEdge, restEdge } from './edge.js';
import { GatewayAgentExecutor } from './executor.js';
import { GatewayRequestHandler } from './request-handler.js';
import { PeerGuard, userOf } from './peers.js';
import { GatewayPushStore, OutboxPushSender, PUSH_KIND, pushDeliverer } from './push.js';
import { GatewayTaskStore, type StoreFailureListener } from './task-store.js';
import { ActiveTaskCache } from './task-cache.js';
import { A2ATaskWatch, type WatchedAgent } from './task-watch.js';
import { advertiseAgents, type Advertisement, type MdnsTransport } from './mdns.js';

/** How long a client may keep an Agent Card (seconds): the cards change only when the gateway restarts. */
const CARD_MAX_AGE = 300;

type Binding = 'jsonrpc' | 'rest';

/** Where the A2A front reports: failures it cannot answer to a caller, refusals (warn), task state changes (info). */
export interface A2ALog {
  error(error: unknown): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

const QUIET: A2ALog = { error: () => {}, warn: () => {}, info: () => {} };

export class A2AServer {
  private app?: express.Express;
  /** When the cards were built (they are built once, at start): their Last-Modified. */
  private cardsBuiltAt = new Date();
  private watch?: A2ATaskWatch;
  readonly guard: PeerGuard;

  /** The A2A front's own state (its tasks, push configs and replay log), with the active tasks cached. */
  private readonly tasks: ActiveTaskCache;
  private readonly onError = (error: unknown) => this.log.error(error);
  /** A request the store did not take (a lost connection, say): answered as an internal error, logged with its cause. */
  private readonly storeFailed: StoreFailureListener = (failure, error) =>
    this.log.warn(
      { cause: failure.details?.cause },
      `A2A: the store did not take this request (answered as an internal error; the client may send it again): ${errorMessage((error as { cause?: unknown }).cause ?? error)}`,
    );

  constructor(
    private readonly gateway: GatewayApi,
    tasks: A2ATaskStore,
    private readonly clock: Clock = { now: () => Date.now() },
    private readonly log: A2ALog = QUIET,
  ) {
    const onError = this.onError;
    this.tasks = new ActiveTaskCache(tasks, clock, (task, from) => {
      log.info(
        { taskId: task.id, agentId: task.agentId, peer: task.owner, from, state: task.state },
        `A2A task ${task.id} of ${task.agentId}: ${from ?? 'new'} -> ${task.state}`,
      );
      gateway.publishJournal().catch(onError);
    });
    const refusals = new RefusalReporter((refusal) => {
      const who = refusal.peer ? `peer "${refusal.peer}"` : `a caller at ${refusal.address}`;
      const times = refusal.count > 1 ? ` (${refusal.count} times in ${REFUSAL_WINDOW_MS / 1000} s)` : '';
      log.warn({ ...refusal }, `A2A call to ${refusal.agentId} by ${who} refused with ${refusal.status}${times}: ${refusal.message}`);
      gateway.recordEvent({ type: 'a2a.refused', payload: refusal }).catch(onError);
    }, clock);
    this.guard = new PeerGuard(gateway.config, clock, (refusal) => refusals.refused(refusal));
    gateway.registerDelivery(PUSH_KIND, pushDeliverer(this.tasks, gateway.config, clock));
  }

  /** The agents exposed over A2A (`a2a.server.agents`). */
  exposedAgents(): ResolvedAgent[] {
    return this.gateway.agents.list().filter((agent) => matchesAny(agent.config.id, this.gateway.config.a2a.server.agents));
  }

  /** Where each exposed agent's Agent Card is, and the gateway's default card (for the banner). */
  cardUrls(listenUrl: string): { agentId: string; url: string }[] {
    const fallback = this.defaultAgent();
    return [
      ...(fallback ? [{ agentId: `${fallback.config.id} (default)`, url: `${this.baseUrl(listenUrl)}/${AGENT_CARD_PATH}` }] : []),
      ...this.agentCardUrls(listenUrl),
    ];
  }

  private baseUrl(listenUrl: string): string {
    return (this.gateway.config.a2a.server.publicUrl ?? listenUrl).replace(/\/$/, '');
  }

  private agentCardUrls(listenUrl: string): { agentId: string; url: string }[] {
    return this.exposedAgents().map((agent) => ({
      agentId: agent.config.id,
      url: `${this.baseUrl(listenUrl)}${agentBasePath(agent.config.id)}/${AGENT_CARD_PATH}`,
    }));
  }

  /**
   * Advertises each exposed agent on the LAN (a2a.server.mdns) at the URL peers reach it at; `warn` hears when that
   * URL is one no other machine can reach.
   */
  async advertise(listenUrl: string, warn: (warning: string) => void, transport?: MdnsTransport): Promise<Advertisement> {
    const { mdns } = this.gateway.config.a2a.server;
    const base = new URL(this.baseUrl(listenUrl));
    if (isLoopbackHost(base.hostname))
      warn(
        `a2a.server.mdns advertises the cards at ${base.origin}, a loopback address no other machine can reach: set a2a.server.publicUrl to the LAN address (and gateway.host to listen on it)`,
      );
    const port = Number(base.port || (base.protocol === 'https:' ? 443 : 80));
    const agents = this.agentCardUrls(listenUrl).map(({ agentId, url }) => ({ agentId, cardUrl: url }));
    return advertiseAgents(agents, {
      port,
      pi: mdns.pi,
      transport: transport ?? (mdns.interface ? { interface: mdns.interface } : {}),
      onError: this.onError,
    });
  }

  /** The agent whose card is at `/.well-known/agent-card.json`: the one the bindings give channel "a2a" (no peer), if exposed, else the first exposed. */
  defaultAgent(): ResolvedAgent | undefined {
    const exposed = this.exposedAgents();
    const bound = this.gateway.agents.bind({ channel: 'a2a' });
    return exposed.find((agent) => agent === bound) ?? exposed[0];
  }

  /**
   * Builds the routes once the gateway knows the URL peers reach it at, and makes one pass over the
   * unfinished tasks before the gateway reports ready, so a client resubscribing after a restart finds them.
   */
  async start(listenUrl: string): Promise<void> {
    const baseUrl = this.gateway.config.a2a.server.publicUrl ?? listenUrl;
    const app = express();
    this.cardsBuiltAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    app.disable('x-powered-by');
    app.set('env', 'production');
    const stallMs = this.gateway.config.a2a.server.taskStallSeconds * 1000;
    const pushStore = new GatewayPushStore(this.tasks, this.gateway.config, this.clock);
    const cards = new Map<string, DefaultRequestHandler>();
    const routers = new Map<string, Record<Binding, express.RequestHandler>>();
    const watched = new Map<string, WatchedAgent>();
    for (const agent of this.exposedAgents()) {
      const id = agent.config.id;
      const blockingCalls = new WeakSet<ServerCallContext>();
      const executor = new GatewayAgentExecutor(this.gateway, id, this.tasks, this.clock, stallMs, blockingCalls);
      const buses = new DefaultExecutionEventBusManager();
      const push = new OutboxPushSender(this.gateway, pushStore);
      watched.set(id, {
        isActive: (taskId) => executor.handles(taskId),
        adopt: (record, peer) => executor.admission.adopt(record, peer),
        buses,
        push,
      });
      const handler = new GatewayRequestHandler({
        tasks: this.tasks,
        agentId: id,
        blockingCalls,
        card: buildAgentCard(agent, this.gateway.config, baseUrl),
        taskStore: new GatewayTaskStore(
          this.tasks,
          id,
          this.clock,
          this.gateway.gatewayId,
          (task, context) => executor.admission.acceptFollowUp(task, context),
          this.storeFailed,
        ),
        executor,
        buses,
        pushStore,
        push,
        onError: this.onError,
        onStoreFailure: this.storeFailed,
      });
      cards.set(id, handler);
      const base = agentBasePath(id);
      this.serveCard(app, `${base}/${AGENT_CARD_PATH}`, handler);
      const endpoints = {
        jsonrpc: jsonRpcHandler({ requestHandler: handler, userBuilder: userOf, legacyCompat: { enabled: true } }),
        rest: restHandler({ requestHandler: handler, userBuilder: userOf, legacyCompat: { enabled: true } }),
      };
      routers.set(id, endpoints);
      app.use(`${base}/jsonrpc`, this.guard.middleware(id, 'jsonrpc'), ...jsonRpcEdge(), endpoints.jsonrpc);
      app.use(`${base}/rest`, this.guard.middleware(id, 'rest'), restEdge(), endpoints.rest);
    }
    // The gateway's own endpoints: each peer reaches the agent the bindings give it (channel "a2a").
    for (const binding of ['jsonrpc', 'rest'] as const) {
      // Made once, not per request: the edge's handlers keep nothing of a request.
      const edge = binding === 'jsonrpc' ? jsonRpcEdge() : [restEdge()];
      app.use(`/a2a/${binding}`, (request, response, next) => {
        const { peer } = this.guard.identify(request);
        const bound = this.gateway.agents.bind({ channel: 'a2a', ...(peer ? { peer: peer.id } : {}) });
        const endpoints = routers.get(bound.config.id);
        if (!endpoints) {
          const who = peer ? `peer "${peer.id}"` : 'this caller';
          response.status(404).json({
            error: {
              code: 404,
              status: 'NOT_FOUND',
              message: `the bindings route ${who} (channel "a2a") to agent "${bound.config.id}", which is not exposed over A2A (a2a.server.agents)`,
            },
          });
          return;
        }
        runChain([this.guard.middleware(bound.config.id, binding), ...edge, endpoints[binding]], request, response, next);
      });
    }
    const fallback = this.defaultAgent();
    if (fallback) {
      const rootCard = buildAgentCard(fallback, this.gateway.config, baseUrl, '/a2a');
      this.serveCard(app, `/${AGENT_CARD_PATH}`, { getAgentCard: async () => rootCard });
    }
    app.use(a2aErrorHandler(this.onError));
    app.use((request, response) => {
      response.status(404).json({
        error: {
          code: 404,
          status: 'NOT_FOUND',
          message: `no A2A endpoint ${request.method} ${request.originalUrl} (exposed agents: ${[...cards.keys()].join(', ') || 'none'}; see a2a.server.agents)`,
        },
      });
    });
    this.app = app;
    this.watch = new A2ATaskWatch(this.gateway, this.tasks, this.gateway.config, watched, this.clock, this.onError);
    await this.watch.start(this.gateway.config.watchdog.intervalMs);
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
    await this.tasks.flush();
  }

  /**
   * The v1.0 card, which the v1.0 schema accepts and the v1 SDK's v0.3 clients read too (they find the 0.3 interfaces
   * in it); the v0.3-shaped card to a caller that asks for it with `A2A-Version: 0.3`, and to every caller without the
   * header when `a2a.server.defaultCardVersion` is 0.3 (a v0.3 SDK's client sends none and reads only that shape).
   * Cached for CARD_MAX_AGE seconds, with an ETag and the time the cards were built, so a conditional request gets a 304.
   */
  private serveCard(app: express.Express, path: string, provider: { getAgentCard(): Promise<AgentCard> }): void {
    // Without a header the SDK's legacy router takes the request as v0.3 and serves it; with 1.0 it passes it on.
    const legacy = legacyAgentCardRouter({ agentCardProvider: provider, cache: { maxAge: CARD_MAX_AGE } });
    const legacyByDefault = this.gateway.config.a2a.server.defaultCardVersion === '0.3';
    app.use(path, (request, response, next) =>
      request.header('A2A-Version') || legacyByDefault ? legacy(request, response, next) : next(),
    );
    app.get(path, async (request, response) => {
      const body = JSON.stringify(agentCardToJson(await provider.getAgentCard()));
      response.setHeader('Vary', 'A2A-Version');
      response.setHeader('Cache-Control', `public, max-age=${CARD_MAX_AGE}`);
      response.setHeader('ETag', `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`);
      response.setHeader('Last-Modified', this.cardsBuiltAt.toUTCString());
      if (request.fresh) {
        response.status(304).end();
        return;
      }
      response.type('application/json').send(body);
    });
  }

  /** Whether a request path belongs to the A2A front rather than the control API. */
  handles(pathname: string): boolean {
    return pathname.startsWith('/a2a/') || pathname === `/${AGENT_CARD_PATH}`;
  }

  handle(request: IncomingMessage, response: ServerResponse): void {
    if (!this.app) {
      response
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 503, status: 'UNAVAILABLE', message: 'the A2A server is starting' } }));
      return;
    }
    this.app(request as express.Request, response as express.Response);
  }
}

/** Runs express handlers one after another, as a router would; an error goes to `next`. */
function runChain(
  handlers: express.RequestHandler[],
  request: express.Request,
  response: express.Response,
  next: express.NextFunction,
): void {
  const step = (index: number) => (error?: unknown) => {
    if (error !== undefined && error !== 'route') return next(error);
    if (index >= handlers.length) return next();
    try {
      void handlers[index](request, response, step(index + 1));
    } catch (thrown) {
      next(thrown);
    }
  };
  step(0)();
}
