import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { guardedFetch, isPrivateAddress } from '../../src/net/outbound-guard.js';
import { pushDeliverer, refusedPushTarget } from '../../src/a2a/push.js';
import { configSchema } from '../../src/config/schema.js';
import { PermanentDeliveryError } from '../../src/kit/retry.js';
import type { A2ATaskStore, OutboxRecord } from '../../src/ports/index.js';

describe('outbound guard', () => {
  it.each([
    ['http://10.1.2.3/hook', '10.1.2.3'],
    ['http://172.20.0.5/hook', '172.20.0.5'],
    ['http://192.168.1.1/hook', '192.168.1.1'],
    ['http://127.0.0.1:8080/hook', '127.0.0.1'],
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['http://100.64.0.1/', '100.64.0.1'],
    ['http://0.0.0.0/', '0.0.0.0'],
    ['http://[::1]/hook', '::1'],
    ['http://[fd12::1]/hook', 'fd12::1'],
    ['http://[fe80::1]/hook', 'fe80::1'],
    ['http://[::ffff:127.0.0.1]/hook', '::ffff:7f00:1'],
    // NAT64, 6to4 and IPv4-compatible forms of private IPv4 addresses.
    ['http://[64:ff9b::7f00:1]/hook', '64:ff9b::7f00:1'],
    ['http://[64:ff9b::a9fe:a9fe]/hook', '64:ff9b::a9fe:a9fe'],
    ['http://[2002:7f00:1::]/hook', '2002:7f00:1::'],
    ['http://[2002:a00:1::1]/hook', '2002:a00:1::1'],
    ['http://[::127.0.0.1]/hook', '::7f00:1'],
    ['http://[::a00:1]/hook', '::a00:1'],
  ])('refuses %s', async (url, address) => {
    expect(await refusedPushTarget(url, false)).toBe(
      `"${url}" resolves to ${address}, a private, loopback or link-local address; only public targets are allowed unless a2a.push.allowPrivateTargets is set`,
    );
  });

  it('allows public addresses, also in NAT64 and 6to4 form, and private ones only with the setting; refuses other schemes and non-URLs', async () => {
    expect(await refusedPushTarget('https://8.8.8.8/hook', false)).toBeUndefined();
    expect(await refusedPushTarget('http://[2001:4860:4860::8888]/hook', false)).toBeUndefined();
    expect(isPrivateAddress('64:ff9b::808:808')).toBe(false);
    expect(isPrivateAddress('2002:808:808::1')).toBe(false);
    expect(await refusedPushTarget('http://127.0.0.1/hook', true)).toBeUndefined();
    expect(await refusedPushTarget('ftp://8.8.8.8/x', false)).toBe('"ftp://8.8.8.8/x" is not an http(s) URL');
    expect(await refusedPushTarget('not a url', true)).toBe('"not a url" is not a URL');
  });

  // `.invalid` never resolves (RFC 2606), with or without DNS on the machine.
  it('does not refuse a name that does not resolve: the request fails as a network error, and a push to it is retried, not given up', async () => {
    const url = 'https://hook.example.invalid/a2a';
    expect(await refusedPushTarget(url, false)).toBeUndefined();
    const failure = await guardedFetch({ setting: 'a2a.push.allowPrivateTargets' })(url, { method: 'POST' }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as Error).message).toMatch(
      /^"https:\/\/hook\.example\.invalid\/a2a" could not be reached: getaddrinfo (ENOTFOUND|EAI_AGAIN) hook\.example\.invalid$/,
    );
    expect((failure as { code?: string }).code).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    expect((failure as { cause?: { code?: string } }).cause?.code).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);

    const logged: unknown[] = [];
    const tasks = { appendEvent: async (_taskId: string, _type: string, detail: unknown) => void logged.push(detail) };
    const config = configSchema.parse({ agents: { list: [{ id: 'a', model: 'scripted/x' }] } });
    const deliver = pushDeliverer(tasks as unknown as A2ATaskStore, config, { now: () => 0 });
    const payload = { taskId: 't1', configId: 'c1', url, headers: {}, body: '{}', contentType: 'application/json' };
    const attempt = await deliver({ payload, attempts: 0, idempotencyKey: 'push:t1:c1:1' } as unknown as OutboxRecord).catch(
      (error: unknown) => error,
    );
    expect(attempt).toBeInstanceOf(Error);
    expect(attempt).not.toBeInstanceOf(PermanentDeliveryError);
    expect(logged).toEqual([{ url, configId: 'c1', attempt: 1, outcome: 'failed', error: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/) }]);
  });

  it('a push to a target that is private when it is sent is refused for good, and logged as refused', async () => {
    const logged: unknown[] = [];
    const tasks = { appendEvent: async (_taskId: string, _type: string, detail: unknown) => void logged.push(detail) };
    const config = configSchema.parse({ agents: { list: [{ id: 'a', model: 'scripted/x' }] } });
    const deliver = pushDeliverer(tasks as unknown as A2ATaskStore, config, { now: () => 0 });
    const url = 'http://127.0.0.1:1/hook';
    const payload = { taskId: 't1', configId: 'c1', url, headers: {}, body: '{}', contentType: 'application/json' };
    const attempt = await deliver({ payload, attempts: 2, idempotencyKey: 'push:t1:c1:2' } as unknown as OutboxRecord).catch(
      (error: unknown) => error,
    );
    const refusal = `"${url}" resolves to 127.0.0.1, a private, loopback or link-local address; only public targets are allowed unless a2a.push.allowPrivateTargets is set`;
    expect(attempt).toBeInstanceOf(PermanentDeliveryError);
    expect((attempt as Error).message).toBe(refusal);
    expect(logged).toEqual([{ url, configId: 'c1', attempt: 3, outcome: 'refused', error: refusal }]);
  });

  it('the guarded fetch never connects to a private address, by literal or by name', async () => {
    let hits = 0;
    let seen: Record<string, unknown> = {};
    const server = createServer((req, res) => {
      hits += 1;
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        seen = { method: req.method, token: req.headers['x-token'], body };
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const post = guardedFetch({ setting: 'a2a.push.allowPrivateTargets' });
      await expect(post(`http://127.0.0.1:${port}/hook`, { method: 'POST' })).rejects.toThrow(
        /resolves to 127\.0\.0\.1, a private, loopback or link-local address/,
      );
      await expect(post(`http://localhost:${port}/hook`, { method: 'POST' })).rejects.toThrow(/a private, loopback or link-local address/);
      expect(hits).toBe(0);
      // An address the guard accepts is reached, with the method, headers and body the caller gave.
      const asPublic = guardedFetch({
        setting: 'a2a.push.allowPrivateTargets',
        isPrivate: (address) => address !== '127.0.0.1' && isPrivateAddress(address),
      });
      const passed = await asPublic(`http://127.0.0.1:${port}/hook`, { method: 'POST', headers: { 'x-token': 'abc' }, body: '{"a":1}' });
      expect({ status: passed.status, text: await passed.text(), hits }).toEqual({ status: 200, text: 'ok', hits: 1 });
      expect(seen).toEqual({ method: 'POST', token: 'abc', body: '{"a":1}' });
    } finally {
      server.close();
    }
  });
});

interface Seen {
  method: string;
  path: string;
  body: string;
  authorization?: string;
}

/** A server that records what reached it; `answer` picks the status and headers per request. */
async function recorder(host: string, answer: (req: IncomingMessage) => { status: number; headers?: Record<string, string> }) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', body, authorization: req.headers.authorization });
      const { status, headers } = answer(req);
      res.writeHead(status, headers).end(`reached ${req.url}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return { seen, port, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('outbound guard: redirects', () => {
  // 127.0.0.3 stands for a public host: the guard is told it is public; every other loopback address is private.
  const isPrivate = (address: string) => address !== '127.0.0.3' && isPrivateAddress(address);
  const guarded = guardedFetch({ setting: 'a2a.client.allowPrivateTargets', isPrivate });

  it.each([301, 302, 307, 308])(
    'a %i to a private address is refused before it connects, by literal, IPv6, NAT64, 6to4 or name',
    async (status) => {
      const inside = await recorder('127.0.0.1', () => ({ status: 200 }));
      const insideV6 = await recorder('::1', () => ({ status: 200 }));
      const targets = [
        [`http://127.0.0.1:${inside.port}/secret`, '127.0.0.1'],
        [`http://[::1]:${insideV6.port}/secret`, '::1'],
        [`http://[64:ff9b::7f00:1]:${inside.port}/secret`, '64:ff9b::7f00:1'],
        [`http://[2002:7f00:1::]:${inside.port}/secret`, '2002:7f00:1::'],
        [`http://localhost:${inside.port}/secret`, undefined],
      ] as const;
      let next = 0;
      const outside = await recorder('127.0.0.3', () => ({ status, headers: { location: targets[next].at(0) as string } }));
      try {
        for (; next < targets.length; next += 1) {
          const [target, address] = targets[next];
          const call = guarded(`http://127.0.0.3:${outside.port}/card`, { method: 'POST', body: '{"secret":true}' });
          await expect(call).rejects.toThrow(
            address
              ? `redirected to a refused target: "${target}" resolves to ${address}, a private, loopback or link-local address; only public targets are allowed unless a2a.client.allowPrivateTargets is set`
              : /redirected to a refused target: "http:\/\/localhost:\d+\/secret" resolves to (127\.0\.0\.1|::1), a private, loopback or link-local address/,
          );
        }
        expect(outside.seen).toHaveLength(targets.length);
        expect(inside.seen.length + insideV6.seen.length).toBe(0);
      } finally {
        await Promise.all([inside.close(), insideV6.close(), outside.close()]);
      }
    },
  );

  it('a redirect to a public address is followed: 307/308 keep the method and body, 301/302/303 of a POST go on as a GET', async () => {
    const target = await recorder('127.0.0.3', () => ({ status: 200 }));
    const results: Array<{ status: number; text: string }> = [];
    for (const status of [301, 302, 303, 307, 308]) {
      const source = await recorder('127.0.0.3', () => ({
        status,
        headers: { location: `http://127.0.0.3:${target.port}/moved-${status}` },
      }));
      const response = await guarded(`http://127.0.0.3:${source.port}/start`, {
        method: 'POST',
        body: 'payload',
        headers: { 'content-type': 'text/plain' },
      });
      results.push({ status: response.status, text: await response.text() });
      await source.close();
    }
    await target.close();
    expect(results.map((result) => result.text)).toEqual([
      'reached /moved-301',
      'reached /moved-302',
      'reached /moved-303',
      'reached /moved-307',
      'reached /moved-308',
    ]);
    expect(target.seen.map(({ method, body }) => `${method} ${body}`)).toEqual(['GET ', 'GET ', 'GET ', 'POST payload', 'POST payload']);
  });

  it('a hop to another origin drops the credentials; manual hands back the 3xx; a loop ends after maxRedirects', async () => {
    const target = await recorder('127.0.0.3', () => ({ status: 200 }));
    const source = await recorder('127.0.0.3', (req) =>
      req.url === '/loop'
        ? { status: 302, headers: { location: '/loop' } }
        : { status: 307, headers: { location: `http://127.0.0.3:${target.port}/next` } },
    );
    try {
      await guarded(`http://127.0.0.3:${source.port}/start`, {
        headers: { authorization: 'Bearer s3cret', 'x-api-key': 'k', accept: 'text/plain' },
      });
      expect(source.seen[0].authorization).toBe('Bearer s3cret');
      expect(target.seen).toEqual([{ method: 'GET', path: '/next', body: '', authorization: undefined }]);
      const manual = await guarded(`http://127.0.0.3:${source.port}/start`, { redirect: 'manual' });
      expect([manual.status, manual.headers.get('location')]).toEqual([307, `http://127.0.0.3:${target.port}/next`]);
      await expect(guarded(`http://127.0.0.3:${source.port}/start`, { redirect: 'error' })).rejects.toThrow(
        `"http://127.0.0.3:${source.port}/start" answered 307 with a redirect, and this request does not follow redirects`,
      );
      await expect(guarded(`http://127.0.0.3:${source.port}/loop`)).rejects.toThrow(
        `"http://127.0.0.3:${source.port}/loop" redirected more than 5 times; giving up`,
      );
      expect(source.seen.filter((seen) => seen.path === '/loop')).toHaveLength(6);
    } finally {
      await Promise.all([target.close(), source.close()]);
    }
  });

  it('with private targets allowed, redirects are followed to them but never to another scheme', async () => {
    const open = guardedFetch({ setting: 'a2a.client.allowPrivateTargets', allowPrivate: true });
    const target = await recorder('127.0.0.1', () => ({ status: 200 }));
    const source = await recorder('127.0.0.1', (req) => ({
      status: 302,
      headers: { location: req.url === '/file' ? 'file:///etc/passwd' : `http://127.0.0.1:${target.port}/in` },
    }));
    try {
      expect(await (await open(`http://127.0.0.1:${source.port}/`)).text()).toBe('reached /in');
      await expect(open(`http://127.0.0.1:${source.port}/file`)).rejects.toThrow(
        'redirected to a refused target: "file:///etc/passwd" is not an http(s) URL',
      );
    } finally {
      await Promise.all([target.close(), source.close()]);
    }
  });
});
