/**
 * The generic webhook channel (docs/channels.md, "Webhooks"): anything that can sign an HTTP POST talks to the agents.
 * Inbound POSTs to `/channels/webhook/<account>` and outbound POSTs to the account's `url` are signed alike:
 * `X-Switchboard-Timestamp: <unix seconds>` and `X-Switchboard-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`
 * with the account's secret. A request more than five minutes from the gateway's clock is refused (a replay).
 *
 * An inbound message is answered 200 only once it is a durable input; a retry of it (same `id`) is the same input.
 * An outbound part carries an `id` that stays the same across retries (`<outbox row>:<part>`), for the receiver to dedupe.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookAccountConfig } from '../../config/schema-channels.js';
import { errorMessage } from '../../core/errors.js';
import { PermanentDeliveryError, RetryLaterError } from '../../kit/retry.js';
import { guardedFetch } from '../../net/outbound-guard.js';
import type { ChatAccount, ChatSend, ChatSink, ChatWebhookAnswer, ChatWebhookRequest } from '../../ports/channels.js';

export const TIMESTAMP_HEADER = 'x-switchboard-timestamp';
export const SIGNATURE_HEADER = 'x-switchboard-signature';
const MAX_SKEW_SECONDS = 300;
const MAX_LENGTH = 16_000;

export function signature(secret: string, timestamp: string, body: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

export function createWebhookAccount(account: string, config: WebhookAccountConfig, options: { now?: () => number } = {}): ChatAccount {
  return new WebhookAccount(account, config, options.now ?? Date.now);
}

interface InboundBody {
  type?: 'message' | 'action';
  id?: unknown;
  conversation?: unknown;
  kind?: unknown;
  thread?: unknown;
  sender?: { id?: unknown; name?: unknown };
  text?: unknown;
  addressed?: unknown;
  data?: unknown;
}

/** Ids and names are at most this long: they go into input keys, and into session keys (hashed there when long). */
const MAX_FIELD = 128;

const text = (value: unknown) => (typeof value === 'string' && value !== '' && value.length <= MAX_FIELD ? value : undefined);

class WebhookAccount implements ChatAccount {
  readonly channel = 'webhook';
  readonly maxLength = MAX_LENGTH;
  private sink?: ChatSink;
  private readonly post = guardedFetch({ setting: 'channels.webhook.accounts.<name>.url', allowPrivate: true });

  constructor(
    readonly account: string,
    private readonly config: WebhookAccountConfig,
    private readonly now: () => number,
  ) {}

  async start(sink: ChatSink): Promise<void> {
    this.sink = sink;
    sink.state('connected');
  }

  async stop(): Promise<void> {
    this.sink?.state('stopped');
    this.sink = undefined;
  }

  async webhook(request: ChatWebhookRequest): Promise<ChatWebhookAnswer> {
    const refused = this.check(request);
    if (refused) return { status: 401, body: { error: refused } };
    if (!this.sink) return { status: 503, body: { error: 'the channel is not running; send the message again shortly' } };
    let body: InboundBody;
    try {
      body = JSON.parse(Buffer.from(request.body).toString('utf8')) as InboundBody;
    } catch {
      return { status: 400, body: { error: 'the body is not JSON' } };
    }
    const id = text(body?.id);
    const conversation = text(body?.conversation);
    const senderId = text(body?.sender?.id);
    if (!id || !conversation || !senderId)
      return {
        status: 400,
        body: { error: `a message needs "id", "conversation" and "sender": { "id" } as strings of 1-${MAX_FIELD} characters` },
      };
    const kind = body.kind === 'group' ? 'group' : 'direct';
    // No thread: absent, null or "".
    const thread = text(body.thread);
    if (body.thread !== undefined && body.thread !== null && body.thread !== '' && !thread)
      return { status: 400, body: { error: `"thread" must be a string of 1-${MAX_FIELD} characters` } };
    const place = { conversation, kind, ...(thread ? { thread } : {}) } as const;
    const sender = { id: senderId, ...(text(body.sender?.name) ? { name: text(body.sender?.name) } : {}) };
    if (body.type === 'action') {
      const data = text(body.data);
      if (!data) return { status: 400, body: { error: 'an action needs "data" as a non-empty string' } };
      return { status: 200, body: { answer: await this.sink.action({ id, place, sender, data }) } };
    }
    if (typeof body.text !== 'string' || body.text.trim() === '')
      return { status: 400, body: { error: 'a message needs "text" as a non-empty string' } };
    await this.sink.message({
      id,
      place,
      sender,
      text: body.text,
      attachments: [],
      addressed: kind === 'direct' || body.addressed === true,
    });
    return { status: 200, body: { ok: true } };
  }

  /** Why the request's signature does not hold, or undefined when it does. */
  private check(request: ChatWebhookRequest): string | undefined {
    const timestamp = request.headers[TIMESTAMP_HEADER];
    const given = request.headers[SIGNATURE_HEADER];
    if (typeof timestamp !== 'string' || typeof given !== 'string')
      return `sign the request: ${TIMESTAMP_HEADER} (unix seconds) and ${SIGNATURE_HEADER} (sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">)`;
    const seconds = Number(timestamp);
    if (!Number.isInteger(seconds) || Math.abs(this.now() / 1000 - seconds) > MAX_SKEW_SECONDS)
      return `${TIMESTAMP_HEADER} is more than ${MAX_SKEW_SECONDS} seconds from the gateway's clock (or not unix seconds)`;
    const expected = Buffer.from(signature(this.config.secret, timestamp, request.body));
    const actual = Buffer.from(given);
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual))
      return `${SIGNATURE_HEADER} does not match the body and the account's secret`;
    return undefined;
  }

  async send(message: ChatSend): Promise<{ id: string }> {
    const url = this.config.url;
    if (!url)
      throw new PermanentDeliveryError(
        `webhook account "${this.account}" has no url to send replies to (channels.webhook.accounts.${this.account}.url)`,
      );
    const body = JSON.stringify({
      id: message.nonce,
      conversation: message.place.conversation,
      ...(message.place.thread ? { thread: message.place.thread } : {}),
      ...(message.replyTo ? { replyTo: message.replyTo } : {}),
      text: message.text,
      ...(message.buttons ? { buttons: message.buttons } : {}),
    });
    const timestamp = String(Math.floor(this.now() / 1000));
    let response: Response;
    try {
      response = await this.post(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [TIMESTAMP_HEADER]: timestamp,
          [SIGNATURE_HEADER]: signature(this.config.secret, timestamp, body),
        },
        body,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new Error(`webhook account "${this.account}": ${hideUrl(errorMessage(error), url)}`);
    }
    const answer = await response.text().catch(() => '');
    const what = `webhook account "${this.account}": ${shownUrl(url)} answered ${response.status}${answer ? ` ${answer.slice(0, 200)}` : ''}`;
    if (response.status === 429) throw new RetryLaterError(what, retryAfterMs(response.headers.get('retry-after'), this.now()));
    if (response.status >= 400 && response.status < 500 && response.status !== 408) throw new PermanentDeliveryError(what);
    if (!response.ok) throw new Error(what);
    let id: unknown;
    try {
      id = (JSON.parse(answer) as { id?: unknown }).id;
    } catch {
      id = undefined;
    }
    return { id: typeof id === 'string' || typeof id === 'number' ? String(id) : message.nonce };
  }

  async typing(): Promise<void> {}
}

/** A url as errors show it: its origin only, since a webhook's path often carries its token (Slack's, Discord's). */
const shownUrl = (url: string) => `${new URL(url).origin}/…`;

const hideUrl = (text: string, url: string) => text.split(url).join(shownUrl(url));

/** Retry-After as seconds or an HTTP date; a second when it is absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number {
  if (header === null) return 1000;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? 1000 : Math.max(0, at - now);
}
