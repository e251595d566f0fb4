/**
 * A local fake of Slack for the Slack account's tests: the Web API methods the account calls (auth.test,
 * apps.connections.open, chat.postMessage, chat.postEphemeral) at `apiUrl`, and a Socket Mode WebSocket at the URL
 * apps.connections.open answers. It says hello on connect, sends `events_api` and `interactive` envelopes, and
 * records the acks the client sends back. `rateLimitSeconds` makes chat.postMessage answer 429 with Retry-After.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export interface SlackCall {
  method: string;
  token: string | undefined;
  args: Record<string, unknown>;
}

export interface SocketAck {
  envelope_id: string;
  payload: Record<string, unknown>;
}

export const FAKE_BOT_USER = 'UBOT';
export const FAKE_BOT_ID = 'BBOT';

export class FakeSlack {
  readonly calls: SlackCall[] = [];
  readonly acks: SocketAck[] = [];
  botToken = 'xoxb-good';
  appToken = 'xapp-good';
  /** When set, chat.postMessage answers 429 with this Retry-After (seconds). */
  rateLimitSeconds: number | undefined;
  /** Conversations chat.postMessage answers channel_not_found for. */
  readonly unknownChannels = new Set<string>();
  private sockets = new Set<WebSocket>();
  private ackWaiters = new Map<string, (ack: SocketAck) => void>();
  private nextTs = 1_700_000_000_000_100;
  private envelopes = 0;

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    readonly origin: string,
  ) {}

  /** The Web API root to give as `apiUrl`. */
  get apiUrl(): string {
    return `${this.origin}/api/`;
  }

  static async start(): Promise<FakeSlack> {
    const server = createServer();
    const wss = new WebSocketServer({ server, path: '/link' });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeSlack(server, wss, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request, response) => {
      void fake.answer(request).then(({ status, body, headers }) => {
        response.writeHead(status, { 'content-type': 'application/json', ...headers });
        response.end(JSON.stringify(body));
      });
    });
    wss.on('connection', (socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
      socket.on('message', (data) => {
        const ack = JSON.parse(String(data)) as SocketAck;
        fake.acks.push(ack);
        fake.ackWaiters.get(ack.envelope_id)?.(ack);
      });
      socket.send(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A1' } }));
    });
    return fake;
  }

  /** Calls of one Web API method, in order. */
  callsOf(method: string): SlackCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  get connected(): number {
    return this.sockets.size;
  }

  /**
   * Sends an envelope over every open socket; resolves with its envelope id and a promise of its ack. An events_api
   * payload is wrapped as Slack wraps it (event_callback with the event inside).
   */
  sendEnvelope(type: 'events_api' | 'interactive', payload: Record<string, unknown>): { envelopeId: string; acked: Promise<SocketAck> } {
    const envelopeId = `env-${++this.envelopes}`;
    const acked = new Promise<SocketAck>((resolve) => this.ackWaiters.set(envelopeId, resolve));
    const frame = JSON.stringify({
      type,
      envelope_id: envelopeId,
      payload,
      accepts_response_payload: type !== 'events_api',
      retry_attempt: 0,
      retry_reason: '',
    });
    for (const socket of this.sockets) socket.send(frame);
    return { envelopeId, acked };
  }

  /** An Events API body for `event` (what Slack posts, or puts in an events_api envelope). */
  static eventCallback(event: Record<string, unknown>): Record<string, unknown> {
    return { token: 'legacy', team_id: 'T1', api_app_id: 'A1', type: 'event_callback', event_id: `Ev${event.ts}`, event_time: 1, event };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async answer(request: IncomingMessage): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const method = (request.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? '';
    const args = parseArgs(raw, request.headers['content-type']);
    const bearer = request.headers.authorization?.replace(/^Bearer /, '');
    const token = bearer ?? (typeof args.token === 'string' ? args.token : undefined);
    this.calls.push({ method, token, args });
    if (method === 'apps.connections.open') {
      if (token !== this.appToken) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
      return { status: 200, body: { ok: true, url: `${this.origin.replace('http', 'ws')}/link` } };
    }
    if (token !== this.botToken) return { status: 200, body: { ok: false, error: 'invalid_auth' } };
    switch (method) {
      case 'auth.test':
        return {
          status: 200,
          body: {
            ok: true,
            url: 'https://fake.slack.test/',
            team: 'Fake',
            user: 'switchboard',
            team_id: 'T1',
            user_id: FAKE_BOT_USER,
            bot_id: FAKE_BOT_ID,
          },
        };
      case 'chat.postMessage': {
        if (this.unknownChannels.has(String(args.channel))) return { status: 200, body: { ok: false, error: 'channel_not_found' } };
        if (this.rateLimitSeconds !== undefined) {
          return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': String(this.rateLimitSeconds) } };
        }
        const ts = `${String(this.nextTs++).slice(0, 10)}.${String(this.nextTs).slice(10)}`;
        return { status: 200, body: { ok: true, channel: args.channel, ts, message: { text: args.text, ts } } };
      }
      case 'chat.postEphemeral':
        return { status: 200, body: { ok: true, message_ts: '1700000000.000001' } };
      default:
        return { status: 200, body: { ok: false, error: 'unknown_method' } };
    }
  }
}

/** The WebClient posts forms whose object fields (blocks) are JSON; JSON bodies are accepted too. */
function parseArgs(raw: string, contentType: string | undefined): Record<string, unknown> {
  if (!raw) return {};
  if (contentType?.startsWith('application/json')) return JSON.parse(raw) as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    args[name] = name === 'blocks' || name === 'attachments' ? JSON.parse(value) : value;
  }
  return args;
}

/** Signs an Events API request as Slack does: v0=HMAC-SHA256(secret, `v0:<timestamp>:<body>`). */
export function slackSignature(secret: string, timestamp: number, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}
