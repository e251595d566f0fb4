/**
 * The MCP server's Streamable HTTP endpoint (`/mcp` on the control port; docs/mcp-server.md): the SDK's web-standard
 * handler (`createMcpHandler`) behind a small node:http adapter. The control API authenticates the request first.
 *
 * Stateless: every HTTP request is served by a fresh server from the factory (the 2026-07-28 protocol is per-request
 * by design, and 2025-era clients are served by the SDK's stateless fallback), so no MCP session lives in this
 * process's memory. A gateway restart, or the next request landing on another gateway of the same database, loses
 * nothing: what a call leaves behind (inputs, runs, sub-agents, tasks) is in the store, and a retried call with the
 * same idempotency key finds it there.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { createMcpHandler, type McpHttpHandler } from '@modelcontextprotocol/server';
import { SwitchboardError } from '../core/errors.js';
import { readBody } from '../http/json-body.js';
import { createSwitchboardMcpServer, type McpServerDeps } from './switchboard-mcp.js';

/** JSON-RPC's code for an error of the server's own (the implementation range), as the SDK answers its own 413 with. */
const SERVER_ERROR = -32000;

export interface McpHttpFront {
  /** Serves one authenticated request to `/mcp`. */
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  close(): Promise<void>;
}

export function createMcpHttpFront(deps: McpServerDeps, onerror?: (error: Error) => void): McpHttpFront {
  const handler: McpHttpHandler = createMcpHandler(() => createSwitchboardMcpServer(deps), { onerror });
  return {
    async handle(request, response) {
      const aborted = new AbortController();
      // The client went away before the answer was complete: the exchange (and the tool's wait) is aborted.
      response.on('close', () => {
        if (!response.writableFinished) aborted.abort();
      });
      let body: string | undefined;
      try {
        // The control API's bound and rule: a body over it is read to its end and answered 413, not cut off.
        body = request.method === 'POST' ? (await readBody(request)).toString('utf8') : undefined;
      } catch (error) {
        if (!(error instanceof SwitchboardError)) throw error;
        // As JSON-RPC, the way the SDK answers its own refusals: its clients raise it as the request's error.
        response.writeHead(error.httpStatus, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: SERVER_ERROR, message: `${error.code}: ${error.message}` }, id: null }),
        );
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
      }
      const web = new Request(new URL(request.url ?? '/mcp', 'http://localhost'), {
        method: request.method,
        headers,
        body,
        signal: aborted.signal,
      });
      const answer = await handler.fetch(web);
      response.writeHead(answer.status, Object.fromEntries(answer.headers));
      response.flushHeaders();
      if (!answer.body) return void response.end();
      const stream = Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream<Uint8Array>);
      stream.on('error', () => response.end());
      aborted.signal.addEventListener('abort', () => stream.destroy());
      stream.pipe(response);
    },
    close: () => handler.close(),
  };
}
