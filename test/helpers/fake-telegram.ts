/**
 * A fake of Telegram's Bot API on 127.0.0.1, as far as the channel uses it: getMe, getUpdates (long polling, with
 * Telegram's rule that an update is confirmed by a later call whose offset is past it, and sent again until then),
 * sendMessage, sendChatAction, answerCallbackQuery, getFile and file downloads. A test queues updates, reads what the
 * bot sent, and can make sendMessage fail (a 429 with retry_after, a 500) a number of times.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SentMessage {
  chat_id: string;
  text: string;
  message_id: number;
  reply_parameters?: { message_id: number };
  message_thread_id?: number;
  reply_markup?: { inline_keyboard: { text: string; callback_data: string }[][] };
}

type Failure = { status: number; body: Record<string, unknown> };

export class FakeTelegram {
  readonly token = '123456:TEST-token';
  readonly bot = { id: 999, is_bot: true, first_name: 'Switchboard', username: 'switchboard_test_bot' };
  private server?: Server;
  private readonly updates: { update_id: number; [key: string]: unknown }[] = [];
  private confirmed = 0;
  private nextUpdate = 1;
  private nextMessage = 5000;
  private readonly waiting = new Set<() => void>();
  /** Every sendMessage that succeeded, in order. */
  readonly sent: SentMessage[] = [];
  /** Every call, by method name, with its body (failed ones too). */
  readonly calls: { method: string; body: Record<string, unknown> }[] = [];
  /** Answers the next sendMessage calls get instead of success, in order. */
  readonly sendFailures: Failure[] = [];
  /** While true, sendMessage calls are held unanswered (and not sent): a test kills the bot meanwhile. */
  holdSends = false;
  /** sendMessage calls held so far. */
  held = 0;
  /** Files getFile knows, by file id. */
  readonly files = new Map<string, Buffer>();
  url = '';

  async start(): Promise<this> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const wake of this.waiting) wake();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** Queues an update (a message from a user, say); its update_id. */
  push(update: Record<string, unknown>): number {
    const id = this.nextUpdate++;
    this.updates.push({ update_id: id, ...update });
    for (const wake of this.waiting) wake();
    return id;
  }

  /** A text message from a user in a private chat (chat id = user id) or a group. */
  message(options: {
    from: number;
    text: string;
    chat?: number;
    chatType?: 'private' | 'group' | 'supergroup';
    messageId?: number;
    username?: string;
    extra?: Record<string, unknown>;
  }): number {
    const chatType = options.chatType ?? 'private';
    return this.push({
      message: {
        message_id: options.messageId ?? this.nextMessage++,
        date: Math.floor(Date.now() / 1000),
        chat: { id: options.chat ?? options.from, type: chatType, ...(chatType === 'private' ? {} : { title: 'the group' }) },
        from: {
          id: options.from,
          is_bot: false,
          first_name: `user${options.from}`,
          ...(options.username ? { username: options.username } : {}),
        },
        text: options.text,
        ...options.extra,
      },
    });
  }

  /** Updates the bot has confirmed (asked for an offset past). */
  get confirmedUpTo(): number {
    return this.confirmed;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = request.url ?? '';
    const file = url.match(/^\/file\/bot[^/]+\/(.+)$/);
    if (file) {
      const bytes = this.files.get(decodeURIComponent(file[1]));
      response.writeHead(bytes ? 200 : 404).end(bytes ?? 'not found');
      return;
    }
    const match = url.match(/^\/bot([^/]+)\/(\w+)/);
    if (!match) return this.answer(response, 404, { ok: false, error_code: 404, description: 'Not Found' });
    if (match[1] !== this.token) return this.answer(response, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const text = Buffer.concat(chunks).toString('utf8');
    const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    const method = match[2];
    this.calls.push({ method, body });
    switch (method) {
      case 'getMe':
        return this.ok(response, this.bot);
      case 'getUpdates':
        return this.getUpdates(response, body);
      case 'sendMessage': {
        if (this.holdSends) {
          this.held += 1;
          return;
        }
        const failure = this.sendFailures.shift();
        if (failure) return this.answer(response, failure.status, failure.body);
        const sent = { ...(body as unknown as SentMessage), chat_id: String(body.chat_id), message_id: this.nextMessage++ };
        this.sent.push(sent);
        return this.ok(response, {
          message_id: sent.message_id,
          date: 0,
          chat: { id: Number(body.chat_id), type: 'private' },
          text: body.text,
        });
      }
      case 'sendChatAction':
      case 'answerCallbackQuery':
        return this.ok(response, true);
      case 'getFile': {
        const id = String(body.file_id);
        return this.files.has(id)
          ? this.ok(response, { file_id: id, file_unique_id: id, file_path: id })
          : this.answer(response, 400, { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' });
      }
      default:
        return this.answer(response, 404, { ok: false, error_code: 404, description: `Not Found: method ${method}` });
    }
  }

  private async getUpdates(response: ServerResponse, body: Record<string, unknown>): Promise<void> {
    const offset = typeof body.offset === 'number' ? body.offset : undefined;
    if (offset !== undefined) this.confirmed = Math.max(this.confirmed, offset - 1);
    const pending = () => this.updates.filter((update) => update.update_id > this.confirmed);
    const timeout = typeof body.timeout === 'number' ? body.timeout : 0;
    if (pending().length === 0 && timeout > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiting.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(timeout, 2) * 1000);
        this.waiting.add(wake);
        response.on('close', wake);
      });
    }
    if (response.destroyed) return;
    this.ok(response, pending());
  }

  private ok(response: ServerResponse, result: unknown): void {
    this.answer(response, 200, { ok: true, result });
  }

  private answer(response: ServerResponse, status: number, body: unknown): void {
    if (response.destroyed) return;
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }
}
