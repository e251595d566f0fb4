/**
 * The one fetch for every outbound request (push notifications, the A2A client, MCP over HTTP). Each hop is
 * checked before it is made and again at connect time: the URL's host, an IP literal included, must not be a
 * private address (unless the key in `setting` allows it), and the socket's own lookup refuses private answers,
 * so neither a second DNS answer (rebinding) nor a redirect can reach inside.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b:1::', 48],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/** The 8 groups of an IPv6 address, or undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.toLowerCase().split('%')[0];
  const v4 = text.match(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, -v4[0].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

const v4Of = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/**
 * The IPv4 address an IPv6 address carries and routes to: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
 * `::a.b.c.d`, NAT64 `64:ff9b::/96` and 6to4 `2002::/16`.
 */
function embeddedIPv4(groups: number[]): string | undefined {
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && (groups[5] === 0xffff || groups[5] === 0) && !(groups[5] === 0 && groups[6] === 0)) return v4Of(groups[6], groups[7]);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4Of(groups[6], groups[7]);
  if (groups[0] === 0x2002) return v4Of(groups[1], groups[2]);
  return undefined;
}

/** True for loopback, private, link-local, shared, reserved and multicast addresses, in any IPv6 disguise. */
export function isPrivateAddress(address: string): boolean {
  const groups = ipv6Groups(address);
  if (!groups) return isIP(address) === 4 ? PRIVATE.check(address, 'ipv4') : true;
  const v4 = embeddedIPv4(groups);
  if (v4) return PRIVATE.check(v4, 'ipv4');
  return PRIVATE.check(groups.map((g) => g.toString(16)).join(':'), 'ipv6');
}

function privateMessage(url: string, address: string, setting: string): string {
  return `"${url}" resolves to ${address}, a private, loopback or link-local address; only public targets are allowed unless ${setting} is set`;
}

/**
 * Why this URL may not be called, or undefined when it may. `setting` names the key that would allow it.
 *
 * A name that does not resolve now is not refused: whatever it resolves to later is checked by the connection's own
 * lookup (publicOnlyLookup), and a lookup that fails there fails the request as any network error does, so a caller
 * that retries (the outbox) tries again. DNS down for a moment, or a machine with no DNS at all, is not a private
 * target.
 */
export async function refusedTarget(
  url: string,
  allowPrivate: boolean,
  setting: string,
  isPrivate = isPrivateAddress,
): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url}" is not a URL`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `"${url}" is not an http(s) URL`;
  if (allowPrivate) return undefined;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    return undefined;
  }
  const inside = addresses.find(isPrivate);
  return inside ? privateMessage(url, inside, setting) : undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A DNS lookup for sockets that fails when any answer is a private address. */
function publicOnlyLookup(setting: string, isPrivate: (address: string) => boolean) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, answers) => {
      if (error) return callback(error, []);
      const inside = answers.find((answer) => isPrivate(answer.address));
      if (inside)
        return callback(Object.assign(new Error(privateMessage(hostname, inside.address, setting)), { code: 'EPRIVATEADDRESS' }), []);
      if (options.all) return callback(null, answers);
      callback(null, answers[0].address, answers[0].family);
    });
  };
}

export interface OutboundFetchOptions {
  /** The config key that would allow private targets; refusals name it. */
  setting: string;
  /** The key is set: private, loopback and link-local targets are reached too (redirects are still handled here). */
  allowPrivate?: boolean;
  /** How many redirects a request that lets them be followed (`redirect: 'follow'`, the default) may take. */
  maxRedirects?: number;
  /** Which addresses count as private (tests make a loopback address "public"). */
  isPrivate?: (address: string) => boolean;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * fetch's own "fetch failed" says neither where nor why. The same TypeError, naming the URL and what failed (its
 * cause: a refused connection, a name that does not resolve, a private address), with the cause and its code kept.
 */
function unreachable(url: string, error: unknown): unknown {
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (!(error instanceof TypeError) || !(cause instanceof Error)) return error;
  const code = (cause as { code?: unknown }).code;
  return Object.assign(new TypeError(`"${url}" could not be reached: ${cause.message}`, { cause }), code === undefined ? {} : { code });
}

/** Headers that carry credentials: a redirect to another origin does not take them along. */
const CREDENTIALS = /^(authorization|proxy-authorization|cookie)$|token|secret|api-?key/i;

const refusal = (message: string) => Object.assign(new TypeError(message), { code: 'EPRIVATEADDRESS' });

/**
 * A fetch for outbound requests. Redirects are followed here, not by undici, so that every hop is checked
 * like the first: its URL before the request (an IP literal never reaches a lookup) and its connection in the
 * socket's lookup. A 303, or a 301/302 of a POST, goes on as a GET without the body, as browsers do; a 307/308
 * keeps the method and body. A hop to another origin drops the headers that carry credentials.
 * `redirect: 'manual'` hands back the 3xx, and `redirect: 'error'` fails on one.
 */
export function guardedFetch(options: OutboundFetchOptions): typeof fetch {
  const { setting, allowPrivate = false, maxRedirects = 5, isPrivate = isPrivateAddress } = options;
  // undici is loaded with the first call: most gateways never make one, and loading it costs startup time.
  let guarded: Promise<{ dispatcher: import('undici').Agent; fetch: typeof import('undici').fetch }> | undefined;
  const load = () =>
    (guarded ??= import('undici').then(({ Agent, fetch }) => ({
      dispatcher: allowPrivate ? new Agent() : new Agent({ connect: { lookup: publicOnlyLookup(setting, isPrivate) as never } }),
      fetch,
    })));
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const request = input instanceof Request ? input : undefined;
    let url = request ? request.url : typeof input === 'string' ? input : (input as URL).href;
    let method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers ?? request?.headers);
    let body = init.body ?? (request?.body ? await request.arrayBuffer() : undefined);
    const mode = init.redirect ?? request?.redirect ?? 'follow';
    const { dispatcher, fetch } = await load();
    for (let hop = 0; ; hop += 1) {
      const refused = await refusedTarget(url, allowPrivate, setting, isPrivate);
      if (refused) throw refusal(hop === 0 ? refused : `redirected to a refused target: ${refused}`);
      const response = (await fetch(url, {
        ...(init as object),
        method,
        headers,
        body,
        redirect: 'manual',
        dispatcher,
      } as never).catch((error: unknown) => {
        throw unreachable(url, error);
      })) as unknown as Response;
      const location = response.headers.get('location');
      if (mode === 'manual' || !REDIRECTS.has(response.status) || location === null) return response;
      await response.body?.cancel();
      if (mode === 'error')
        throw new TypeError(`"${url}" answered ${response.status} with a redirect, and this request does not follow redirects`);
      if (hop >= maxRedirects) throw new TypeError(`"${url}" redirected more than ${maxRedirects} times; giving up`);
      const next = new URL(location, url);
      if (next.origin !== new URL(url).origin) for (const name of [...headers.keys()]) if (CREDENTIALS.test(name)) headers.delete(name);
      if (response.status === 303 ? method !== 'HEAD' : response.status <= 302 && method === 'POST') {
        method = 'GET';
        body = undefined;
        for (const name of ['content-type', 'content-length', 'content-encoding']) headers.delete(name);
      }
      url = next.href;
    }
  }) as unknown as typeof fetch;
}
