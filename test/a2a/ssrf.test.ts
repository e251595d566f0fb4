import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { guardedFetch, isPrivateAddress } from '../../src/a2a/outbound-guard.js';
import { refusedPushTarget } from '../../src/a2a/push.js';

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
      const post = guardedFetch('a2a.push.allowPrivateTargets');
      await expect(post(`http://127.0.0.1:${port}/hook`, { method: 'POST' })).rejects.toThrow(/resolves to 127\.0\.0\.1, a private, loopback or link-local address/);
      await expect(post(`http://localhost:${port}/hook`, { method: 'POST' })).rejects.toThrow(/a private, loopback or link-local address/);
      expect(hits).toBe(0);
      // An address the guard accepts is reached, with the method, headers and body the caller gave.
      const asPublic = guardedFetch('a2a.push.allowPrivateTargets', (address) => address !== '127.0.0.1' && isPrivateAddress(address));
      const passed = await asPublic(`http://127.0.0.1:${port}/hook`, { method: 'POST', headers: { 'x-token': 'abc' }, body: '{"a":1}' });
      expect({ status: passed.status, text: await passed.text(), hits }).toEqual({ status: 200, text: 'ok', hits: 1 });
      expect(seen).toEqual({ method: 'POST', token: 'abc', body: '{"a":1}' });
    } finally {
      server.close();
    }
  });
});
