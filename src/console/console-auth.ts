/**
 * The console's login (docs/console.md). Only the control token opens it: typed into the login page, or redeemed
 * through a one-time link that `switchboard console` asks for with the token. A login is a cookie that is HttpOnly
 * and SameSite=Strict, whose value is its expiry signed with the token (HMAC-SHA256). So a login survives a restart of
 * the gateway, and a new token ends every login.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const COOKIE_NAME = 'switchboard_console';
/** How long a one-time login link may wait before it is used. */
export const LINK_TTL_MS = 5 * 60_000;
/** At most this many links wait at once; the oldest is dropped for a new one. */
const MAX_LINKS = 100;

export class ConsoleAuth {
  private readonly links = new Map<string, number>();

  constructor(
    private readonly token: string,
    private readonly sessionMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a typed token is the control token (in constant time). */
  tokenMatches(given: string): boolean {
    return equal(given, this.token);
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
    const value = `v1.${expiresAt}.${this.sign(expiresAt)}`;
    return `${COOKIE_NAME}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.floor(this.sessionMs / 1000)}`;
  }

  /** The Set-Cookie value that ends a login. */
  logoutCookie(): string {
    return `${COOKIE_NAME}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
  }

  /** Whether the request carries a login cookie that is signed with this token and has not expired. */
  loggedIn(request: IncomingMessage): boolean {
    const value = cookieOf(request, COOKIE_NAME);
    const match = value?.match(/^v1\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/);
    if (!match) return false;
    const expiresAt = Number(match[1]);
    return expiresAt > this.now() && equal(match[2], this.sign(expiresAt));
  }

  private sign(expiresAt: number): string {
    return createHmac('sha256', this.token).update(`switchboard-console:${expiresAt}`).digest('base64url');
  }
}

function equal(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieOf(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
