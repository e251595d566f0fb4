/**
 * A local HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages formats, streamed
 * (server-sent events) when the request asks for `stream: true`, else as one JSON body.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The body's size on the wire, in bytes. */
  bytes: number;
}

export type FakeReply =
  | { text: string }
  | { toolCall: { name: string; args: Record<string, unknown>; id?: string } }
  | { status: number; error: string }
  /** Accept the request and never answer. */
  | { hang: true };

export class FakeProviderServer {
  readonly requests: RecordedRequest[] = [];
  private readonly server: Server;
  private replies: FakeReply[] = [];
  /** Answers a call when no queued reply is left (a model that reads the conversation), after `delayMs`. */
  responder?: (body: any) => FakeReply;
  delayMs = 0;
  private readonly hanging = new Set<import('node:http').ServerResponse>();
  url = '';

  constructor() {
    this.server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const raw = Buffer.concat(chunks);
      const body = JSON.parse(raw.toString('utf8') || '{}');
      this.requests.push({ path: request.url ?? '', headers: request.headers, body, bytes: raw.length });
      const reply = this.replies.shift() ?? this.responder?.(body) ?? { text: 'default reply' };
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if ('hang' in reply) {
        this.hanging.add(response);
        return;
      }
      if ('status' in reply) {
        response.writeHead(reply.status, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify(
            request.url?.endsWith('/messages')
              ? { type: 'error', error: { type: 'overloaded_error', message: reply.error } }
              : { error: { message: reply.error, type: 'server_error', code: null } },
          ),
        );
        return;
      }
      const anthropic = request.url?.endsWith('/messages') === true;
      if (body.stream !== true) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(anthropic ? anthropicMessage(reply) : openAiCompletion(reply, body.model)));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = anthropic ? anthropicEvents(reply) : openAiEvents(reply, body.model);
      for (const event of events) response.write(event);
      response.end();
    });
  }

  /** Queue the answers of the next calls, in order. */
  reply(...replies: FakeReply[]): void {
    this.replies.push(...replies);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const OPENAI_USAGE = { prompt_tokens: 21, completion_tokens: 7, total_tokens: 28, prompt_tokens_details: { cached_tokens: 15 } };
const ANTHROPIC_USAGE = { input_tokens: 6, cache_read_input_tokens: 15, output_tokens: 7 };

type Answer = Extract<FakeReply, { text: string } | { toolCall: unknown }>;

function openAiCompletion(reply: Answer, model: string): object {
  const message =
    'text' in reply
      ? { role: 'assistant', content: reply.text }
      : {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: reply.toolCall.id ?? 'call_abc',
              type: 'function',
              function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.args) },
            },
          ],
        };
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message, finish_reason: 'text' in reply ? 'stop' : 'tool_calls' }],
    usage: OPENAI_USAGE,
  };
}

function anthropicMessage(reply: Answer): object {
  const content =
    'text' in reply
      ? [{ type: 'text', text: reply.text }]
      : [{ type: 'tool_use', id: 'toolu_1', name: reply.toolCall.name, input: reply.toolCall.args }];
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: 'text' in reply ? 'end_turn' : 'tool_use',
    stop_sequence: null,
    usage: ANTHROPIC_USAGE,
  };
}

function openAiEvents(reply: Exclude<FakeReply, { hang: true }>, model: string): string[] {
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const usage = { usage: OPENAI_USAGE };
  if ('text' in reply) {
    const half = Math.ceil(reply.text.length / 2);
    return [
      chunk({ role: 'assistant', content: reply.text.slice(0, half) }, null),
      chunk({ content: reply.text.slice(half) }, null),
      chunk({}, 'stop', usage),
      'data: [DONE]\n\n',
    ];
  }
  if ('toolCall' in reply) {
    return [
      chunk(
        {
          role: 'assistant',
          tool_calls: [
            { index: 0, id: reply.toolCall.id ?? 'call_abc', type: 'function', function: { name: reply.toolCall.name, arguments: '' } },
          ],
        },
        null,
      ),
      chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(reply.toolCall.args) } }] }, null),
      chunk({}, 'tool_calls', usage),
      'data: [DONE]\n\n',
    ];
  }
  return [];
}

function anthropicEvents(reply: Exclude<FakeReply, { hang: true }>): string[] {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const start = event('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 6, cache_read_input_tokens: 15, output_tokens: 1 },
    },
  });
  if ('text' in reply) {
    return [
      start,
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: reply.text } }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }),
      event('message_stop', {}),
    ];
  }
  if ('toolCall' in reply) {
    return [
      start,
      event('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: reply.toolCall.name, input: {} } }),
      event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(reply.toolCall.args) } }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 7 } }),
      event('message_stop', {}),
    ];
  }
  return [];
}
