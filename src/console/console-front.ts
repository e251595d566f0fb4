/**
 * The web console's front (docs/console.md): the built single-page app (dist/web, made by `npm run build`) served at
 * `/` on the control port under a strict Content-Security-Policy, and its login. Everything the console shows comes
 * from the control API, which accepts the console's login cookie as it accepts the bearer token.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import { parseBody, readJson } from '../http/json-body.js';
import type { RouteAdder } from '../http/route.js';
import { ConsoleAuth, type LoginRevocations } from './console-auth.js';

/** No inline script or style, nothing from elsewhere, no framing, no plugin, no form posted off the gateway. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
};

const CONSOLE_PATHS = /^\/($|index\.html$|assets\/|login$|logout$|favicon\.ico$)/;
const ASSET = /^\/assets\/([A-Za-z0-9][A-Za-z0-9._-]{0,200})$/;
const loginBody = z.strictObject({ token: z.string().min(1).max(4096) });

/** The folder of the built app: `dist/web` in the package root, found from this file in src/ or dist/. */
export function webRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i += 1, dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'web');
  }
  return join(dirname(fileURLToPath(import.meta.url)), '..', 'web');
}

export class ConsoleFront {
  readonly auth: ConsoleAuth;
  private index: Buffer | undefined;

  constructor(
    token: string,
    sessionHours: number,
    revocations: LoginRevocations,
    private readonly root = webRoot(),
  ) {
    this.auth = new ConsoleAuth(token, sessionHours * 3_600_000, revocations);
  }

  handles(pathname: string): boolean {
    return CONSOLE_PATHS.test(pathname);
  }

  /** `POST /v1/console/links` (bearer token): a one-time login link for `switchboard console`. */
  routes(route: RouteAdder): void {
    route('POST', /^\/v1\/console\/links$/, async () => {
      const { code, expiresAt } = this.auth.issueLink();
      return { path: `/login?code=${code}`, expiresAt };
    });
  }

  async handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const method = request.method ?? 'GET';
    if (url.pathname === '/login' && method === 'GET') return this.redeemLink(response, url);
    if (url.pathname === '/login' && method === 'POST') return this.logIn(request, response);
    if (url.pathname === '/logout' && method === 'POST') return this.logOut(request, response);
    if (method !== 'GET' && method !== 'HEAD') {
      response.setHeader('Allow', 'GET, HEAD');
      throw new SwitchboardError(
        'METHOD_NOT_ALLOWED',
        `${method} is not supported on ${url.pathname} (the console's pages are read with GET)`,
      );
    }
    if (url.pathname === '/favicon.ico') return this.send(response, 204, 'image/x-icon', Buffer.alloc(0));
    const asset = url.pathname.match(ASSET);
    if (asset) return this.sendAsset(response, asset[1]);
    return this.sendIndex(response);
  }

  /** A one-time link: the code is used up, the login cookie set, and the browser sent to the console. */
  private redeemLink(response: ServerResponse, url: URL): void {
    const code = url.searchParams.get('code') ?? '';
    const valid = this.auth.redeem(code);
    response.writeHead(303, {
      location: valid ? '/' : '/#/login?link=expired',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      ...(valid ? { 'set-cookie': this.auth.loginCookie() } : {}),
    });
    response.end();
  }

  private async logIn(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { token } = parseBody(loginBody, await readJson(request));
    if (!this.auth.tokenMatches(token)) {
      throw new SwitchboardError(
        'UNAUTHORIZED',
        'that is not this gateway\'s control token: print it with "switchboard --config <file> token", or open a link from "switchboard console"',
      );
    }
    response.writeHead(200, {
      'set-cookie': this.auth.loginCookie(),
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
    });
    response.end('{"loggedIn":true}');
  }

  /**
   * Ends the login for good (its id is revoked in the store) and clears the cookie. Like every change made with the
   * cookie, it needs the console's header, which a page on another origin cannot add: such a page cannot log anyone out.
   */
  private async logOut(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.headers['x-switchboard-console'] !== '1') {
      throw new SwitchboardError(
        'FORBIDDEN',
        'logging out must carry the header "X-Switchboard-Console: 1" (the console\'s "Log out" button sends it); the login stays as it was',
      );
    }
    const login = await this.auth.loginOf(request);
    if (login) await this.auth.logOut(login);
    response.writeHead(200, {
      'set-cookie': this.auth.logoutCookie(),
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
    });
    response.end('{"loggedOut":true}');
  }

  private async sendIndex(response: ServerResponse): Promise<void> {
    this.index ??= this.readIndex();
    if (!this.index) {
      const text = 'The console is not built: run "npm run build" in the Switchboard folder (it writes dist/web), then reload.\n';
      return this.send(response, 503, 'text/plain; charset=utf-8', Buffer.from(text));
    }
    return this.send(response, 200, 'text/html; charset=utf-8', this.index, 'no-cache');
  }

  private readIndex(): Buffer | undefined {
    try {
      return readFileSync(join(this.root, 'index.html'));
    } catch {
      return undefined;
    }
  }

  private async sendAsset(response: ServerResponse, name: string): Promise<void> {
    const type = TYPES[extname(name)];
    const body = type ? await readFile(join(this.root, 'assets', name)).catch(() => undefined) : undefined;
    if (!type || !body)
      throw new SwitchboardError('NOT_FOUND', `no console asset "${name}" (rebuild with "npm run build" if the gateway was updated)`);
    // Built names carry a content hash, so a browser may keep them.
    this.send(response, 200, type, body, 'public, max-age=31536000, immutable');
  }

  private send(response: ServerResponse, status: number, type: string, body: Buffer, cache = 'no-store'): void {
    response.writeHead(status, {
      'content-type': type,
      'content-length': body.length,
      'cache-control': cache,
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
    });
    response.end(body);
  }
}
