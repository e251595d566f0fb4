import { describe, expect, it } from 'vitest';
import { refusedTarget } from '../../src/a2a/push.js';

describe('push target guard', () => {
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
  ])('refuses %s', async (url, address) => {
    expect(await refusedTarget(url, false)).toBe(
      `"${url}" resolves to ${address}, a private, loopback or link-local address; push notifications go only to public targets unless a2a.push.allowPrivateTargets is set`,
    );
  });

  it('allows public addresses, and private ones only with the setting; refuses other schemes and non-URLs', async () => {
    expect(await refusedTarget('https://8.8.8.8/hook', false)).toBeUndefined();
    expect(await refusedTarget('http://[2001:4860:4860::8888]/hook', false)).toBeUndefined();
    expect(await refusedTarget('http://127.0.0.1/hook', true)).toBeUndefined();
    expect(await refusedTarget('ftp://8.8.8.8/x', false)).toBe('"ftp://8.8.8.8/x" is not an http(s) URL');
    expect(await refusedTarget('not a url', true)).toBe('"not a url" is not a URL');
  });
});
