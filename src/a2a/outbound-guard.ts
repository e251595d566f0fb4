/**
 * The SSRF guard for outbound HTTP (push notifications, remote agents reached by URL). A URL is checked
 * before the request, and the connection itself is made only to an address the guard accepted: the
 * guarded fetch resolves the name in its own `lookup`, so a second DNS answer (rebinding) cannot swap in
 * a private address after the check.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { errorMessage } from '../core/errors.js';

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b:1::', 48]] as const) PRIVATE.addSubnet(net, prefix, 'ipv6');

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

/** Why this URL may not be called, or undefined when it may. `setting` names the key that would allow it. */
export async function refusedTarget(url: string, allowPrivate: boolean, setting: string, isPrivate = isPrivateAddress): Promise<string | undefined> {
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
  } catch (error) {
    return `cannot resolve "${host}": ${errorMessage(error)}`;
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
      if (inside) return callback(Object.assign(new Error(privateMessage(hostname, inside.address, setting)), { code: 'EPRIVATEADDRESS' }), []);
      if (options.all) return callback(null, answers);
      callback(null, answers[0].address, answers[0].family);
    });
  };
}

/**
 * A fetch whose connections go only to public addresses: the URL is checked first (literal addresses
 * never reach a lookup), and the socket's own lookup refuses private answers.
 */
export function guardedFetch(setting: string, isPrivate: (address: string) => boolean = isPrivateAddress): typeof fetch {
  // undici is loaded with the first call: most gateways never make one, and loading it costs startup time.
  let guarded: Promise<{ dispatcher: import('undici').Agent; fetch: typeof import('undici').fetch }> | undefined;
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const refused = await refusedTarget(url, false, setting, isPrivate);
    if (refused) throw Object.assign(new TypeError(refused), { code: 'EPRIVATEADDRESS' });
    guarded ??= import('undici').then(({ Agent, fetch }) => ({ dispatcher: new Agent({ connect: { lookup: publicOnlyLookup(setting, isPrivate) as never } }), fetch }));
    const { dispatcher, fetch } = await guarded;
    return fetch(input as never, { ...(init as object), dispatcher } as never);
  }) as unknown as typeof fetch;
}
