/** What an A2A server without credentials promises (docs/a2a.md): loopback unless allowed, and a rate limit per address. */
import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { PeerGuard } from '../../src/a2a/peers.js';
import { parseConfigText } from '../../src/config/load.js';

const base = `agents: { list: [{ id: "a", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } }`;
const parse = (extra: string) => parseConfigText(`{ ${base}, ${extra} }`, '/etc/sb.json5', {}).config;
const errorOf = (extra: string) => {
  try {
    parse(extra);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
};

/** The parts of an express request the guard reads. */
const request = (remoteAddress: string, headers: Record<string, string> = {}) =>
  ({ header: (name: string) => headers[name.toLowerCase()], socket: { remoteAddress } }) as unknown as Request;

describe('A2A server without credentials', () => {
  it('refuses to listen beyond loopback unless a2a.server.allowAnonymous is set, in one line naming the keys', () => {
    for (const host of ['0.0.0.0', '::', '192.0.2.10', 'gateway.example.com']) {
      expect(errorOf(`gateway: { host: "${host}" }, a2a: { server: { enabled: true, requireAuth: false } }`)).toBe(
        `invalid config /etc/sb.json5:\n  a2a.server.requireAuth: false on gateway.host "${host}" lets anyone who can reach it call your agents, all as one peer that shares its tasks; add peers, listen on 127.0.0.1, or set a2a.server.allowAnonymous: true`,
      );
    }
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]']) {
      expect(parse(`gateway: { host: "${host}" }, a2a: { server: { enabled: true, requireAuth: false } }`).a2a.server.requireAuth).toBe(
        false,
      );
    }
    expect(
      parse(`gateway: { host: "0.0.0.0" }, a2a: { server: { enabled: true, requireAuth: false, allowAnonymous: true } }`).a2a.server
        .allowAnonymous,
    ).toBe(true);
    // With credentials required, any host is fine: every caller is a configured peer.
    expect(
      parse(`gateway: { host: "0.0.0.0" }, a2a: { server: { enabled: true, peers: [{ id: "p", token: "0123456789abcdef" }] } }`).gateway
        .host,
    ).toBe('0.0.0.0');
  });

  it('a configured peer may not be called "anonymous", the owner every caller without credentials shares', () => {
    expect(errorOf(`a2a: { server: { enabled: true, peers: [{ id: "anonymous", token: "0123456789abcdef" }] } }`)).toBe(
      'invalid config /etc/sb.json5:\n  a2a.server.peers[0].id: "anonymous" is reserved for callers without credentials; give the peer another id',
    );
  });

  it('callers without credentials are rate-limited per address, like peers; a caller with bad credentials is not let in anonymously', () => {
    let now = 1_000_000;
    const guard = new PeerGuard(parse(`a2a: { server: { enabled: true, requireAuth: false, anonymousMaxRequestsPerMinute: 2 } }`), {
      now: () => now,
    });
    const outcomes = () =>
      [guard.check(request('10.9.0.1'), 'a'), guard.check(request('10.9.0.2'), 'a')].map((result) =>
        'user' in result ? result.user.userName : result.status,
      );
    expect(outcomes()).toEqual(['anonymous', 'anonymous']);
    expect(outcomes()).toEqual(['anonymous', 'anonymous']);
    const refused = guard.check(request('10.9.0.1'), 'a');
    expect(refused).toEqual({
      status: 429,
      reason: 'RESOURCE_EXHAUSTED',
      message:
        'the caller without credentials at 10.9.0.1 made 2 requests in the last minute, its limit (a2a.server.anonymousMaxRequestsPerMinute); retry later',
      retryAfterS: 60,
      setting: 'a2a.server.anonymousMaxRequestsPerMinute',
    });
    now += 60_001;
    expect(outcomes()).toEqual(['anonymous', 'anonymous']);
    expect(guard.check(request('10.9.0.3', { authorization: 'Bearer wrong' }), 'a')).toMatchObject({
      status: 401,
      message: 'the credentials are not valid for this gateway',
    });
  });
});
