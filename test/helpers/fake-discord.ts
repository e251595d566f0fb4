/**
 * A local fake of Discord for the Discord account's tests: the REST routes the account uses (GET /gateway/bot,
 * /users/@me, POST /channels/:id/messages and /typing, interaction callbacks) under /api/v10, and a gateway
 * WebSocket (JSON encoding, no compression) that says HELLO, answers IDENTIFY with READY and one GUILD_CREATE,
 * ACKs heartbeats, and dispatches what a test gives it. `rateLimitSeconds` makes message posts answer 429.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const FAKE_BOT = {
  id: '100000000000000001',
  username: 'switchboard',
  discriminator: '0',
  global_name: null,
  avatar: null,
  bot: true,
};
export const FAKE_GUILD = '200000000000000001';
export const FAKE_TEXT_CHANNEL = '300000000000000001';
export const FAKE_THREAD = '300000000000000002';
export const FAKE_DM_CHANNEL = '300000000000000003';

export interface DiscordRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

export class FakeDiscord {
  readonly requests: DiscordRequest[] = [];
  /** Gateway payloads the client sent (IDENTIFY, heartbeats). */
  readonly gatewayReceived: { op: number; d: unknown }[] = [];
  token = 'good-token';
  /** When set, POST /channels/:id/messages answers 429 with this retry-after (seconds). */
  rateLimitSeconds: number | undefined;
  /** What GET /gateway/bot names as the gateway; the fake's own unless set (to prove `gatewayUrl` is used instead). */
  advertisedGatewayUrl: string | undefined;
  /** When set, the gateway closes with this code on IDENTIFY (4014: a privileged intent not enabled). */
  identifyCloseCode: number | undefined;
  /** Channels whose message posts answer 404 Unknown Channel. */
  readonly unknownChannels = new Set<string>();
  private sockets = new Set<WebSocket>();
  private sequence = 0;
  private nextId = 900000000000000000n;

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    readonly origin: string,
  ) {}

  get apiUrl(): string {
    return `${this.origin}/api`;
  }

  get gatewayUrl(): string {
    return `${this.origin.replace('http', 'ws')}/gateway`;
  }

  static async start(): Promise<FakeDiscord> {
    const server = createServer();
    const wss = new WebSocketServer({ server, path: '/gateway' });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeDiscord(server, wss, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request, response) => {
      void fake.answer(request).then(({ status, body, headers }) => {
        response.writeHead(status, { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers });
        response.end(body === undefined ? undefined : JSON.stringify(body));
      });
    });
    wss.on('connection', (socket) => fake.onConnection(socket));
    return fake;
  }

  requestsTo(method: string, path: string): DiscordRequest[] {
    return this.requests.filter((request) => request.method === method && request.path === path);
  }

  /** Sends a gateway dispatch (op 0) to every connected client. */
  dispatch(type: string, data: Record<string, unknown>): void {
    const frame = JSON.stringify({ op: 0, t: type, s: ++this.sequence, d: data });
    for (const socket of this.sockets) socket.send(frame);
  }

  /**
   * A MESSAGE_CREATE payload as Discord sends it, with the fields discord.js reads. Give `channel_type` (1 for a DM):
   * discord.js 14.28 makes an uncached DM channel from it, and drops the message without it.
   */
  static message(
    fields: { id: string; channel_id: string; guild_id?: string; author: Record<string, unknown>; content: string } & Record<
      string,
      unknown
    >,
  ) {
    return {
      type: 0,
      tts: false,
      timestamp: '2026-12-05T12:00:00.000000+00:00',
      edited_timestamp: null,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      flags: 0,
      components: [],
      ...fields,
    };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onConnection(socket: WebSocket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('message', (data) => {
      const payload = JSON.parse(String(data)) as { op: number; d: { token?: string } };
      this.gatewayReceived.push(payload);
      if (payload.op === 1) socket.send(JSON.stringify({ op: 11, d: null }));
      if (payload.op === 2) this.identify(socket, payload.d.token);
    });
    socket.send(JSON.stringify({ op: 10, s: null, t: null, d: { heartbeat_interval: 41_250 } }));
  }

  private identify(socket: WebSocket, token: string | undefined): void {
    if (token !== this.token || this.identifyCloseCode !== undefined) {
      socket.close(this.identifyCloseCode ?? 4004, this.identifyCloseCode === 4014 ? 'Disallowed intent(s).' : 'Authentication failed.');
      return;
    }
    const send = (type: string, data: unknown) => socket.send(JSON.stringify({ op: 0, t: type, s: ++this.sequence, d: data }));
    send('READY', {
      v: 10,
      user: FAKE_BOT,
      guilds: [{ id: FAKE_GUILD, unavailable: true }],
      session_id: 'fake-session',
      resume_gateway_url: this.gatewayUrl,
      shard: [0, 1],
      application: { id: '400000000000000001', flags: 0 },
    });
    send('GUILD_CREATE', {
      id: FAKE_GUILD,
      name: 'Fake server',
      owner_id: '500000000000000001',
      unavailable: false,
      member_count: 2,
      large: false,
      joined_at: '2026-12-01T00:00:00.000000+00:00',
      features: [],
      roles: [
        {
          id: FAKE_GUILD,
          name: '@everyone',
          permissions: '68608',
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      emojis: [],
      stickers: [],
      members: [],
      voice_states: [],
      presences: [],
      stage_instances: [],
      guild_scheduled_events: [],
      channels: [
        { id: FAKE_TEXT_CHANNEL, type: 0, name: 'general', guild_id: FAKE_GUILD, position: 0, permission_overwrites: [], parent_id: null },
      ],
      threads: [
        {
          id: FAKE_THREAD,
          type: 11,
          name: 'a thread',
          guild_id: FAKE_GUILD,
          parent_id: FAKE_TEXT_CHANNEL,
          owner_id: '500000000000000001',
          thread_metadata: {
            archived: false,
            auto_archive_duration: 1440,
            archive_timestamp: '2026-12-01T00:00:00.000000+00:00',
            locked: false,
          },
          message_count: 1,
          member_count: 1,
        },
      ],
    });
  }

  private async answer(request: IncomingMessage): Promise<{ status: number; body?: unknown; headers?: Record<string, string> }> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = decodeURIComponent((request.url ?? '').replace(/^\/api\/v10/, '').split('?')[0] ?? '');
    const method = request.method ?? 'GET';
    const authorization = request.headers.authorization;
    this.requests.push({ method, path, authorization, body: raw ? JSON.parse(raw) : undefined });
    const interaction = path.match(/^\/interactions\/(\d+)\/([^/]+)\/callback$/);
    // Interaction callbacks and their follow-ups are authorized by the interaction's token, not the bot's.
    if (interaction) return { status: 204 };
    const followUp = path.match(/^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/);
    if (followUp && method === 'PATCH') {
      const body = JSON.parse(raw) as { content: string };
      return {
        status: 200,
        body: FakeDiscord.message({ id: String(++this.nextId), channel_id: FAKE_TEXT_CHANNEL, author: FAKE_BOT, content: body.content }),
      };
    }
    if (authorization !== `Bot ${this.token}`) return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
    if (method === 'GET' && path === '/gateway/bot') {
      return {
        status: 200,
        body: {
          url: this.advertisedGatewayUrl ?? this.gatewayUrl,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
        },
      };
    }
    if (method === 'GET' && path === '/users/@me') return { status: 200, body: FAKE_BOT };
    const channel = path.match(/^\/channels\/(\d+)\/(messages|typing)$/);
    if (channel && method === 'POST' && channel[2] === 'typing') return { status: 204 };
    if (channel && method === 'POST') {
      if (this.unknownChannels.has(channel[1] ?? '')) return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
      if (this.rateLimitSeconds !== undefined) {
        return {
          status: 429,
          headers: { 'retry-after': String(this.rateLimitSeconds), 'x-ratelimit-scope': 'user' },
          body: { message: 'You are being rate limited.', retry_after: this.rateLimitSeconds, global: false },
        };
      }
      const body = JSON.parse(raw) as { content: string; nonce?: string };
      return {
        status: 200,
        body: FakeDiscord.message({
          id: String(++this.nextId),
          channel_id: channel[1] ?? '',
          author: FAKE_BOT,
          content: body.content,
          nonce: body.nonce,
        }),
      };
    }
    return { status: 404, body: { message: '404: Not Found', code: 0 } };
  }
}
