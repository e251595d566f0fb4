/**
 * The console's login (docs/console.md). Only the control token opens it: typed into the login page, or redeemed
 * through a one-time link that `switchboard console` asks for with the token. A login is a cookie that is HttpOnly
 * and SameSite=Strict, whose value is its expiry and a random login id, signed with the token (HMAC-SHA256). So a login
 * survives a restart of the gateway, and a new token ends every login. Logging out revokes the login id in the store,
 * which every gateway on it checks on each request: a copy of the cookie kept elsewhere is refused from then on.
 */
import { sameSecret } from '../kit/same-secret.js';
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { GatewayRegistry } from '../ports/gateways.js';

export const COOKIE_NAME = 'switchboard_console';
/** How long a one-time login link may wait before it is used. */
export const LINK_TTL_MS = 5 * 60_000;
/** At most this many links wait at once; the oldest is dropped for a new one. */
const MAX_LINKS = 100;
const COOKIE_VALUE = /^v2\.(\d{1,16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/** Logins ended by "Log out". Contract: once `revoke` resolves, `revoked` answers true for that id on every gateway. */
export interface LoginRevocations {
  revoke(loginId: string, expiresAt: number): Promise<void>;
  revoked(loginId: string): Promise<boolean>;
}

/** Revocations kept as shared entries of the store, so that they survive a restart and hold on every gateway of it. */
export function storedRevocations(registry: Pick<GatewayRegistry, 'sharedSecret' | 'sharedSecretOf'>): LoginRevocations {
  const name = (loginId: string) => `console-logout:${loginId}`;
  return {
    revoke: async (loginId, expiresAt) => void (await registry.sharedSecret(name(loginId), String(expiresAt))),
    revoked: async (loginId) => (await registry.sharedSecretOf(name(loginId))) !== undefined,
  };
}

/** A login the cookie proves: its id and expiry. */
export interface Login {
  id: string;
  expiresAt: number;
}

export class ConsoleAuth {
  private readonly links = new Map<string, number>();
  private readonly logoutListeners = new Set<() => void>();

  constructor(
    private readonly token: string,
    private readonly sessionMs: number,
    private readonly revocations: LoginRevocations,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a typed token is the control token (in constant time). */
  tokenMatches(given: string): boolean {
    return sameSecret(given, this.token);
  }

  /** A new one-time login code, valid for LINK_TTL_MS. */
  issueLink(): { code: string; expiresAt: number } {
    const now = this.now();
    for (const [code, expiresAt] of this.links) if (expiresAt <= now) this.links.delete(code);
    while (this.links.size >= MAX_LINKS) this.links.delete(this.links.keys().next().value!);
    const code = randomBytes(24).toString('base64url');
    const expiresAt = now + LINK_TTL_MS;
    this.links.set(code, expiresAt);
    return { code, expiresAt };
  }

  /** Uses up a one-time code; false when it is unknown, used or expired. */
  redeem(code: string): boolean {
    const expiresAt = this.links.get(code);
    this.links.delete(code);
    return expiresAt !== undefined && expiresAt > this.now();
  }

  /** The Set-Cookie value of a new login. */
  loginCookie(): string {
    const expiresAt = this.now() + this.sessionMs;
    const id = randomBytes(16).toString('base64url');
    const value = `v2.${expiresAt}.${id}.${this.sign(expiresAt, id)}`;
    return `${COOKIE_NAME}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(this.sessionMs / 1000)}`;
  }

  /** The Set-Cookie value that ends a login. */
  logoutCookie(): string {
    return `${COOKIE_NAME}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
  }

  /** The login of the request's cookie when it is signed with this token, not expired and not logged out. */
  async loginOf(request: IncomingMessage): Promise<Login | undefined> {
    const match = cookieOf(request, COOKIE_NAME)?.match(COOKIE_VALUE);
    if (!match) return undefined;
    const expiresAt = Number(match[1]);
    const id = match[2];
    if (expiresAt <= this.now() || !sameSecret(match[3], this.sign(expiresAt, id))) return undefined;
    return (await this.revocations.revoked(id)) ? undefined : { id, expiresAt };
  }

  async loggedIn(request: IncomingMessage): Promise<boolean> {
    return (await this.loginOf(request)) !== undefined;
  }

  /** Ends a login for good: its cookie is refused from now on, wherever it is kept. */
  async logOut(login: Login): Promise<void> {
    await this.revocations.revoke(login.id, login.expiresAt);
    for (const listener of this.logoutListeners) listener();
  }

  /** Called after each logout on this gateway (its open streams check their own login again). */
  onLogout(listener: () => void): () => void {
    this.logoutListeners.add(listener);
    return () => this.logoutListeners.delete(listener);
  }

  private sign(expiresAt: number, id: string): string {
    return createHmac('sha256', this.token).update(`switchboard-console:v2:${expiresAt}:${id}`).digest('base64url');
  }
}

function cookieOf(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
