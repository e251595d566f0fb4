/**
 * Inbound A2A security: credentials are required unless the operator turned them off. A peer presents
 * its bearer token or API key; it may call only the agents (and skills) its entry allows, at most
 * `maxRequestsPerMinute` times a minute. Refusals use HTTP 401, 403 and 429 in each binding's A2A error shape: a
 * JSON-RPC error with a `google.rpc.ErrorInfo` in its `data` array, or a google.rpc.Status body with one in `details`.
 */
import { sameSecret } from '../kit/same-secret.js';
import type { RefusalReport } from './refusals.js';
import type { NextFunction, Request, Response } from 'express';
import type { User } from '@a2a-js/sdk/server';
import { ANONYMOUS_PEER, type A2APeerConfig, type SwitchboardConfig } from '../config/schema.js';
import { MemoryRateLimiter, retryAfterMs } from '../core/rate-limit.js';
import { matchesAny } from '../core/tool-policy.js';
import type { Clock } from '../ports/index.js';
import { API_KEY_HEADER } from './agent-card.js';
import { errorInfo, GATEWAY_ERROR_DOMAIN } from './edge.js';

/** The caller as the SDK sees it; `peer` is its config entry (absent for an anonymous caller). */
export class PeerUser implements User {
  constructor(readonly peer: A2APeerConfig | undefined) {}

  get isAuthenticated(): boolean {
    return this.peer !== undefined;
  }

  get userName(): string {
    return this.peer?.id ?? ANONYMOUS_PEER;
  }
}

type Refusal = {
  status: 401 | 403 | 429;
  reason: 'UNAUTHENTICATED' | 'PERMISSION_DENIED' | 'RESOURCE_EXHAUSTED';
  message: string;
  retryAfterS?: number;
  /** The peer refused, when its credentials were valid. */
  peer?: string;
  /** The config key that set the limit or the list that refused. */
  setting?: string;
};

/**
 * JSON-RPC codes for refusals before the A2A layer. A2A 1.0 defines no error for any of them: it calls an
 * authentication or authorization error a "JSON-RPC custom error" (section 3.3.2), so 401 and 403 use codes outside
 * JSON-RPC's reserved range and A2A's own, where no client mistakes "unauthenticated" for "task not found"; a rate
 * limit is one of its "system errors", so 429 uses -32000, the one code of JSON-RPC's implementation-defined server
 * error range (-32000 to -32099) that A2A does not keep for its own errors (-32001 to -32099). The ErrorInfo beside
 * each (reason, and domain "switchboard") says which refusal it is.
 */
export const PEER_ERROR_CODES: Record<number, number> = { 401: -31401, 403: -31403, 429: -32000 };

/** ErrorInfo's reason for each refusal. */
const ERROR_INFO_REASONS: Record<number, string> = { 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 429: 'RATE_LIMIT_EXCEEDED' };

export class PeerGuard {
  /** Per peer, in memory: it guards this process before any work, and a restart may forget it. */
  private readonly requests = new MemoryRateLimiter();

  constructor(
    private readonly config: SwitchboardConfig,
    private readonly clock: Clock,
    /** Each refusal the middleware answers (journaled and logged by the server through a RefusalReporter). */
    private readonly onRefused: (refusal: Omit<RefusalReport, 'count'>) => void = () => {},
  ) {}

  /** Who is calling, from the Authorization or X-API-Key header; undefined when nobody matches. */
  identify(request: Request): { peer?: A2APeerConfig; presented: boolean } {
    const header = request.header('authorization');
    const bearer = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
    const apiKey = request.header(API_KEY_HEADER);
    const peers = this.config.a2a.server.peers;
    const peer =
      (bearer !== undefined
        ? peers.find((candidate) => candidate.token !== undefined && sameSecret(bearer, candidate.token))
        : undefined) ??
      (apiKey !== undefined
        ? peers.find((candidate) => candidate.apiKey !== undefined && sameSecret(apiKey, candidate.apiKey))
        : undefined);
    return { peer, presented: bearer !== undefined || apiKey !== undefined };
  }

  check(request: Request, agentId: string): { user: PeerUser } | Refusal {
    const { peer, presented } = this.identify(request);
    if (!peer) {
      if (!this.config.a2a.server.requireAuth && !presented) return this.admitAnonymous(request);
      return {
        status: 401,
        reason: 'UNAUTHENTICATED',
        message: presented
          ? 'the credentials are not valid for this gateway'
          : `credentials required: send "Authorization: Bearer <token>" or "${API_KEY_HEADER}: <key>"`,
      };
    }
    if (!matchesAny(agentId, peer.agents)) {
      return {
        status: 403,
        reason: 'PERMISSION_DENIED',
        message: `peer "${peer.id}" may not call agent "${agentId}" (a2a.server.peers[].agents allows ${peer.agents.join(', ')})`,
        peer: peer.id,
        setting: 'a2a.server.peers[].agents',
      };
    }
    const limited = this.limit(
      `a2a-peer:${peer.id}`,
      peer.maxRequestsPerMinute,
      `peer "${peer.id}"`,
      'a2a.server.peers[].maxRequestsPerMinute',
    );
    return limited ? { ...limited, peer: peer.id } : { user: new PeerUser(peer) };
  }

  /** A caller without credentials: the shared peer `anonymous`, limited per remote address. */
  private admitAnonymous(request: Request): { user: PeerUser } | Refusal {
    const address = request.socket.remoteAddress ?? 'unknown';
    const max = this.config.a2a.server.anonymousMaxRequestsPerMinute;
    const limited = this.limit(
      `a2a-anonymous:${address}`,
      max,
      `the caller without credentials at ${address}`,
      'a2a.server.anonymousMaxRequestsPerMinute',
    );
    return limited ?? { user: new PeerUser(undefined) };
  }

  private limit(bucket: string, max: number, who: string, key: string): Refusal | undefined {
    const now = this.clock.now();
    const rate = { bucket, windowMs: 60_000, max };
    const reached = this.requests.take(rate, now);
    if (!reached) return undefined;
    return {
      status: 429,
      reason: 'RESOURCE_EXHAUSTED',
      message: `${who} made ${reached.limited.count} requests in the last minute, its limit (${key}); retry later`,
      retryAfterS: Math.max(1, Math.ceil(retryAfterMs(rate, reached.limited, now) / 1000)),
      setting: key,
    };
  }

  /** Express middleware for one agent's endpoints; `binding` picks the error body's shape. */
  middleware(agentId: string, binding: 'jsonrpc' | 'rest') {
    return (request: Request, response: Response, next: NextFunction) => {
      const result = this.check(request, agentId);
      if ('user' in result) {
        (request as Request & { a2aUser?: PeerUser }).a2aUser = result.user;
        return next();
      }
      this.onRefused({
        agentId,
        status: result.status,
        reason: result.reason,
        message: result.message,
        peer: result.peer ?? null,
        address: request.socket.remoteAddress ?? 'unknown',
      });
      if (result.status === 401) response.setHeader('WWW-Authenticate', 'Bearer realm="switchboard"');
      if (result.retryAfterS) response.setHeader('Retry-After', String(result.retryAfterS));
      // A2A 1.0's error details (sections 9.5, 11.6): an ErrorInfo, and for a rate limit a RetryInfo as well.
      const details = [
        errorInfo(ERROR_INFO_REASONS[result.status]!, GATEWAY_ERROR_DOMAIN, {
          agent: agentId,
          ...(result.peer ? { peer: result.peer } : {}),
          ...(result.setting ? { setting: result.setting } : {}),
          ...(result.retryAfterS ? { retryAfterSeconds: String(result.retryAfterS) } : {}),
        }),
        ...(result.retryAfterS ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${result.retryAfterS}s` }] : []),
      ];
      const body =
        binding === 'jsonrpc'
          ? { jsonrpc: '2.0', id: null, error: { code: PEER_ERROR_CODES[result.status], message: result.message, data: details } }
          : { error: { code: result.status, status: result.reason, message: result.message, details } };
      response.status(result.status).json(body);
    };
  }
}

/** The SDK's UserBuilder: the user the guard attached to the request. */
export async function userOf(request: Request): Promise<User> {
  return (request as Request & { a2aUser?: PeerUser }).a2aUser ?? new PeerUser(undefined);
}
