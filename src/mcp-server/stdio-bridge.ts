/**
 * `switchboard mcp serve` (docs/mcp-server.md): MCP over stdio, bridged to the running gateway's `/mcp` endpoint, so
 * that one server (the gateway's) answers both transports. Each message read from stdin is POSTed with the control
 * token and the headers the Streamable HTTP binding asks for (MCP-Protocol-Version, Mcp-Method, Mcp-Name); the
 * answer, a JSON body or an SSE stream (progress notifications, then the result), is written to stdout message by
 * message. The endpoint is stateless, so requests are independent: several go on at once, and a cancellation aborts
 * its request's HTTP exchange.
 */
import type { Readable, Writable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

/** The reserved `_meta` key a 2026-07-28 request names its protocol version with. */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
/** Which param the Mcp-Name header mirrors, by method (the Streamable HTTP binding's table). */
const NAME_PARAM: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};
/** A JSON-RPC error code for "the bridge could not get an answer from the gateway" (the implementation range). */
const GATEWAY_ERROR = -32000;

export interface StdioBridgeOptions {
  /** The gateway's `/mcp` URL. */
  url: string;
  token: string;
  /** What to tell the client when the gateway cannot be reached (how to start it). */
  unreachable: string;
  stdin?: Readable;
  stdout?: Writable;
}

type Message = { jsonrpc: '2.0'; id?: string | number; method?: string; params?: Record<string, unknown>; result?: unknown };

/** Bridges until stdin ends; resolves then, once the requests in flight are answered or aborted. */
export function bridgeStdio(options: StdioBridgeOptions): Promise<void> {
  const transport = new StdioServerTransport(options.stdin, options.stdout);
  const inFlight = new Map<string | number, AbortController>();
  const pending = new Set<Promise<void>>();
  /** The version a 2025-era `initialize` agreed on: sent with every later request of that era. */
  let legacyVersion: string | undefined;

  const write = (message: unknown) => transport.send(message as JSONRPCMessage).catch(() => {});
  const fail = (id: string | number | undefined, message: string) => {
    if (id !== undefined) void write({ jsonrpc: '2.0', id, error: { code: GATEWAY_ERROR, message } });
  };

  const forward = async (message: Message): Promise<void> => {
    const isRequest = message.method !== undefined && message.id !== undefined;
    if (message.method === 'notifications/cancelled') {
      // Stateless on the far side: cancelling is ending the request's HTTP exchange.
      inFlight.get((message.params?.requestId as string | number) ?? '')?.abort();
      return;
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${options.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const claimed = (message.params?._meta as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
    const version = typeof claimed === 'string' ? claimed : legacyVersion;
    if (version) headers['mcp-protocol-version'] = version;
    if (message.method && typeof claimed === 'string') {
      headers['mcp-method'] = message.method;
      const field = NAME_PARAM[message.method];
      const value = field ? message.params?.[field] : undefined;
      if (typeof value === 'string') headers['mcp-name'] = headerValue(value);
    }
    const abort = new AbortController();
    if (isRequest) inFlight.set(message.id!, abort);
    try {
      let response: Response;
      try {
        response = await fetch(options.url, { method: 'POST', headers, body: JSON.stringify(message), signal: abort.signal });
      } catch {
        if (!abort.signal.aborted) fail(isRequest ? message.id : undefined, options.unreachable);
        return;
      }
      const type = response.headers.get('content-type') ?? '';
      const deliver = (answer: Message) => {
        if (message.method === 'initialize' && answer.id === message.id) {
          const agreed = (answer.result as { protocolVersion?: unknown } | undefined)?.protocolVersion;
          if (typeof agreed === 'string') legacyVersion = agreed;
        }
        void write(answer);
      };
      if (type.startsWith('text/event-stream') && response.body) {
        const parser = createParser({
          onEvent: (event) => {
            if (event.data.trim() === '') return;
            try {
              deliver(JSON.parse(event.data) as Message);
            } catch {
              // Not a JSON-RPC message (a comment-like frame): nothing to pass on.
            }
          },
        });
        const decoder = new TextDecoder();
        try {
          for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
        } catch {
          if (!abort.signal.aborted) fail(isRequest ? message.id : undefined, 'the connection to the gateway dropped before its answer');
        }
        return;
      }
      const text = await response.text();
      if (text.trim() === '') {
        if (!response.ok) fail(isRequest ? message.id : undefined, `the gateway answered HTTP ${response.status}`);
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return fail(isRequest ? message.id : undefined, `the gateway answered HTTP ${response.status} with a body that is not JSON`);
      }
      // The control API's own refusals (a wrong token, the MCP server off) are not JSON-RPC: told as an error.
      const refusal = (body as { error?: { code?: unknown; message?: unknown } }).error;
      if (!(body as { jsonrpc?: unknown }).jsonrpc && !Array.isArray(body) && typeof refusal?.message === 'string')
        return fail(isRequest ? message.id : undefined, `${String(refusal.code)}: ${refusal.message}`);
      for (const answer of (Array.isArray(body) ? body : [body]) as Message[]) {
        // A refusal of the HTTP request as a whole (a 413: its body was never parsed) has a null id: it answers this request.
        const unaddressed = (answer as { id?: unknown }).id === null && 'error' in answer;
        deliver(unaddressed && isRequest ? { ...answer, id: message.id } : answer);
      }
    } finally {
      if (isRequest) inFlight.delete(message.id!);
    }
  };

  return new Promise<void>((resolve, reject) => {
    transport.onmessage = (message) => {
      const task = forward(message as Message).finally(() => pending.delete(task));
      pending.add(task);
    };
    transport.onclose = () => {
      for (const abort of inFlight.values()) abort.abort();
      void Promise.allSettled([...pending]).then(() => resolve());
    };
    transport.onerror = (error) => process.stderr.write(`switchboard mcp serve: ${error.message}\n`);
    transport.start().catch(reject);
  });
}

/** A header value as the binding carries it: plain when it is printable ASCII, else UTF-8 in a Base64 sentinel. */
function headerValue(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) && value.trim() === value ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
