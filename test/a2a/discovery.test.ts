/** Reading a peer's Agent Card (`a2a discover`, `a2a add`): what is not a card is refused, saying what was wrong. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readCard } from '../../src/a2a/discovery.js';

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/card') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ name: 'Helper', description: 'helps', skills: [{ id: 'faq' }, { name: 'no id' }], version: '2' }));
    } else if (request.url === '/text') response.end('<html>hello</html>');
    else if (request.url === '/nameless') response.end('{"skills": []}');
    else if (request.url === '/huge') {
      // 2 MB and more, sent for as long as the client reads.
      const chunk = Buffer.alloc(64 * 1024, 'a');
      let sent = 0;
      const more = () => {
        while (sent < 64 && response.write(chunk)) sent += 1;
        if (sent < 64) response.once('drain', more);
        else response.end();
      };
      more();
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());

it("reads a card's name, description, skill ids and version", async () => {
  expect(await readCard(`${base}/card`, fetch)).toEqual({ name: 'Helper', description: 'helps', skills: ['faq'], version: '2' });
});

it('refuses what is not a card: an error status, not JSON, no name, over a megabyte (read no further)', async () => {
  await expect(readCard(`${base}/missing`, fetch)).rejects.toThrow(`${base}/missing answered 404, not an Agent Card`);
  await expect(readCard(`${base}/text`, fetch)).rejects.toThrow(`the card at ${base}/text is not JSON`);
  await expect(readCard(`${base}/nameless`, fetch)).rejects.toThrow(
    `the document at ${base}/nameless is not an Agent Card (it has no name)`,
  );
  await expect(readCard(`${base}/huge`, fetch)).rejects.toThrow(`the card at ${base}/huge is over 1000000 bytes`);
});
