/**
 * A local OTLP/HTTP trace collector for the telemetry benchmark, in a process of its own so that its CPU is not counted
 * as the gateway's: it answers every POST /v1/traces with 200 and counts the spans in it (the JSON encoding the
 * OpenTelemetry JS exporter sends). It keeps counts only, never the spans, so a long load does not grow it.
 * GET /count answers `{ spans, posts, names }`, names counting the spans by the first word of their name.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

let spans = 0;
let posts = 0;
const names: Record<string, number> = {};

const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/count') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ spans, posts, names }));
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    posts += 1;
    const body = Buffer.concat(chunks);
    const text = (request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
    const sent = JSON.parse(text) as { resourceSpans?: { scopeSpans?: { spans?: { name: string }[] }[] }[] };
    for (const resource of sent.resourceSpans ?? [])
      for (const scope of resource.scopeSpans ?? [])
        for (const span of scope.spans ?? []) {
          spans += 1;
          const kind = span.name.split(' ')[0]!;
          names[kind] = (names[kind] ?? 0) + 1;
        }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
