/**
 * `sessions tail` prints every event it receives, even when what it reads about the event's run (its messages, its
 * tool calls) cannot be had: a gateway going away just then loses the details, never the event.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const KEY = 'agent:main:main';
const started = { seq: 5, type: 'run.started', sessionKey: KEY, runId: 'r1aaaaaaaa', payload: {}, createdAt: 0 };
const server = createServer((request, response) => {
  const json = (status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  const url = new URL(request.url ?? '/', 'http://x');
  if (url.pathname === `/v1/sessions/${encodeURIComponent(KEY)}`) return json(200, { session: { key: KEY } });
  if (url.pathname === '/v1/status') return json(200, { journalSeq: 4 });
  if (url.pathname === '/v1/runs/r1aaaaaaaa')
    return json(503, { error: { code: 'STORE_FAILED', message: 'the store is unavailable for a moment' } });
  if (url.pathname === '/v1/events') {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(`id: 5\nevent: run.started\ndata: ${JSON.stringify(started)}\n\n`);
    return; // held open, as a live stream is
  }
  json(404, { error: { code: 'NOT_FOUND', message: url.pathname } });
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe('sessions tail', () => {
  it("prints an event whose run's details cannot be read, with the reason, instead of dropping it", async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const child = spawn(process.execPath, [BIN, '--url', `http://127.0.0.1:${port}`, 'sessions', 'tail', KEY], {
      cwd: ROOT,
      env: { ...process.env, SWITCHBOARD_TOKEN: 't' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    try {
      await waitUntil('the tail printed the event', () => out.includes('#5 run r1aaaaaa started') || child.exitCode !== null, 20_000);
      expect(out).toContain('#5 run r1aaaaaa started');
      expect(out).toContain('  (its messages could not be read: the store is unavailable for a moment)');
      expect(err).toBe('');
    } finally {
      child.kill();
    }
  });
});
