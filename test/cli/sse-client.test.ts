/** The CLI's SSE reader: the whole format, as any server may send it (CRLF, multi-line data, comments, split chunks). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/cli/client.js';

describe('ControlClient.stream', () => {
  it('reads CRLF line ends, multi-line data, comments and events split across chunks', async () => {
    const server = createServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keep-alive\r\n\r\n');
      res.write('event: run.completed\r\nid: 7\r\ndata: {"a":\r\n');
      await new Promise((resolve) => setTimeout(resolve, 20));
      res.write('data: 1}\r\n\r\n');
      res.write('data: plain\n\n');
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const events: { event: string; id?: string; data: string }[] = [];
    try {
      await new ControlClient({ url: `http://127.0.0.1:${port}`, token: 't' }).stream('/v1/events', (event) => events.push(event));
    } finally {
      server.close();
    }
    expect(events).toEqual([
      { event: 'run.completed', id: '7', data: '{"a":\n1}' },
      { event: 'message', id: undefined, data: 'plain' },
    ]);
  });
});
