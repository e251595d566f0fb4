/**
 * A Slack bot account (docs/channels.md, Slack) on @slack/bolt: Socket Mode (`mode: 'socket'`, no public address) or
 * the Events API (`mode: 'events'`: the control port hands POST /channels/slack/<account> to `webhook`). Either way
 * bolt's App routes the events through a receiver of ours, which answers Slack (the socket ack or the HTTP 200) only
 * after the listener returned, that is after the sink made the message durable: a lost ack is a redelivery, which the
 * front dedupes by message id (the event's ts).
 */
import { App, type Receiver, type ReceiverEvent, verifySlackRequest, webApi } from '@slack/bolt';
import type { Logger } from '@slack/logger';
import type { SlackAccountConfig } from '../../config/schema-channels.js';
import { errorMessage } from '../../core/errors.js';
import { PermanentDeliveryError, RetryLaterError } from '../../kit/retry.js';
import type {
  ChatAccount,
  ChatAttachment,
  ChatButton,
  ChatMessage,
  ChatPlace,
  ChatSend,
  ChatSink,
  ChatWebhookAnswer,
  ChatWebhookRequest,
} from '../../ports/channels.js';
import { createSocketModeClient, type SocketModeClient } from './socket-mode-client.js';

export type SlackLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

export interface SlackAccountOptions {
  log: SlackLog;
  /** Fetches the Web API and files (a test's, or the guarded fetch). */
  fetch?: typeof fetch;
}

/**
 * Slack's chat.postMessage documents 4,000 characters as the most a `text` should have and truncates past 40,000: we
 * split at 4,000, so that no reply depends on the hard limit and each part stays readable.
 */
export const SLACK_MAX_LENGTH = 4000;
/** A section block's text holds at most 3,000 characters: a message with buttons carries its text in such blocks. */
const SECTION_TEXT_LIMIT = 3000;

/** Web API errors that no retry mends: the row goes dead at once. */
const PERMANENT_ERRORS = new Set([
  'channel_not_found',
  'not_in_channel',
  'is_archived',
  'msg_too_long',
  'no_text',
  'invalid_blocks',
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'missing_scope',
  'restricted_action',
  'thread_not_found',
]);

/** What Slack answers for a token it does not accept. */
const TOKEN_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'not_allowed_token_type',
]);

/**
 * Message subtypes that are a person saying something (a thread reply also sent to the channel is a
 * `thread_broadcast`); edits, joins, bot posts and the like are not.
 */
const PERSON_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

interface SlackFile {
  name?: string;
  title?: string;
  size?: number;
  mimetype?: string;
  url_private_download?: string;
  url_private?: string;
}

/** The fields of a message or app_mention event we read. */
interface SlackMessageEvent {
  type: string;
  subtype?: string;
  ts: string;
  thread_ts?: string;
  parent_user_id?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  files?: SlackFile[];
}

interface SlackBlockActions {
  type: 'block_actions';
  trigger_id?: string;
  user: { id: string; username?: string; name?: string };
  channel?: { id: string };
  container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
  message?: { ts: string; thread_ts?: string };
  actions: { action_id: string; value?: string; action_ts: string }[];
}

/** How long one Web API call may take. */
const SEND_TIMEOUT_MS = 30_000;

export function createSlackAccount(account: string, config: SlackAccountConfig, options: SlackAccountOptions): ChatAccount {
  const key = `channels.slack.accounts.${account}`;
  const log = options.log;
  const receiver = new GatewayReceiver();
  const clientOptions = {
    slackApiUrl: config.apiUrl,
    // The outbox is the one retry path: a 429 reaches send() as WebAPIRateLimitedError, any other failure at once.
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    // Well under the outbox's claim (5 minutes): a send that hangs is given up before another attempt may take its row.
    timeout: SEND_TIMEOUT_MS,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const app: App = new App({
    token: config.botToken,
    receiver,
    clientOptions,
    logger: boltLogger(log, account),
    // We know the bot's ids only after auth.test in start(), and filter its own messages ourselves.
    tokenVerificationEnabled: false,
    ignoreSelf: false,
  });
  const client = app.client;
  const fetchFn = options.fetch ?? fetch;
  let sink: ChatSink | undefined;
  let botUserId: string | undefined;
  let botId: string | undefined;
  let socket: SocketModeClient | undefined;
  let stopping = false;

  const toPlace = (event: SlackMessageEvent): ChatPlace => ({
    conversation: event.channel,
    kind: event.channel_type === 'im' ? 'direct' : 'group',
    ...(event.thread_ts ? { thread: event.thread_ts } : {}),
  });

  const toAttachment = (file: SlackFile): ChatAttachment => ({
    name: file.name ?? file.title ?? 'file',
    ...(file.size !== undefined ? { size: file.size } : {}),
    ...(file.mimetype ? { mimeType: file.mimetype } : {}),
    fetch: async () => {
      const url = file.url_private_download ?? file.url_private;
      if (!url) throw new Error(`the Slack file ${file.name ?? ''} has no download URL`);
      // Slack's private file URLs take the bot token as a bearer token (scope files:read).
      const response = await fetchFn(url, { headers: { authorization: `Bearer ${config.botToken}` } });
      if (!response.ok) throw new Error(`downloading the Slack file ${file.name ?? url} failed with HTTP ${response.status}`);
      return new Uint8Array(await response.arrayBuffer());
    },
  });

  const onMessage = async (event: SlackMessageEvent, mention: boolean) => {
    if (!sink) throw new Error(`${key} received an event before start()`);
    if (!PERSON_SUBTYPES.has(event.subtype)) return;
    if (!event.user || event.bot_id || event.user === botUserId) return;
    const place = toPlace(event);
    const text = event.text ?? '';
    // The same ts can come as both `message` and `app_mention`: both say addressed, and the front keeps the first.
    const addressed =
      place.kind === 'direct' ||
      mention ||
      (botUserId !== undefined && (text.includes(`<@${botUserId}>`) || event.parent_user_id === botUserId));
    const message: ChatMessage = {
      id: event.ts,
      place,
      sender: { id: event.user },
      text,
      attachments: (event.files ?? []).map(toAttachment),
      addressed,
    };
    await sink.message(message);
  };

  app.event('message', async ({ event }) => onMessage(event as unknown as SlackMessageEvent, false));
  app.event('app_mention', async ({ event }) => onMessage({ ...(event as unknown as SlackMessageEvent), channel_type: 'channel' }, true));
  app.action({ type: 'block_actions' }, async ({ body, ack }) => {
    if (!sink) throw new Error(`${key} received an action before start()`);
    const press = body as unknown as SlackBlockActions;
    const action = press.actions[0];
    const conversation = press.channel?.id ?? press.container?.channel_id;
    if (!action || action.value === undefined || !conversation) return ack();
    const thread = press.message?.thread_ts ?? press.container?.thread_ts;
    const place: ChatPlace = {
      conversation,
      // Slack's direct message (im) conversation ids begin with D; a block action carries no channel_type.
      kind: conversation.startsWith('D') ? 'direct' : 'group',
      ...(thread ? { thread } : {}),
    };
    const name = press.user.username ?? press.user.name;
    const answer = await sink.action({
      id: press.trigger_id ?? action.action_ts,
      place,
      sender: { id: press.user.id, ...(name ? { name } : {}) },
      data: action.value,
    });
    await ack();
    try {
      await client.chat.postEphemeral({
        channel: conversation,
        user: press.user.id,
        text: answer,
        ...(thread ? { thread_ts: thread } : {}),
      });
    } catch (error) {
      // The press is decided; failing to show its answer must not make Slack redeliver it.
      log('warn', `${key}: could not show a button's answer`, { error: errorMessage(error) });
    }
  });

  const startSocket = async (current: ChatSink) => {
    if (!config.appToken)
      throw new Error(`${key}.appToken is required with mode 'socket' (an app-level token, xapp-..., with connections:write)`);
    const socketClient = createSocketModeClient({
      appToken: config.appToken,
      logger: boltLogger(log, account),
      autoReconnectEnabled: true,
      clientOptions,
    });
    socketClient.on(
      'slack_event',
      (args: { ack: (response?: unknown) => Promise<void>; body: Record<string, unknown>; retry_num?: number; retry_reason?: string }) => {
        receiver
          .dispatch(args.body, args.retry_num, args.retry_reason)
          .then((response) => args.ack(response))
          .catch((error: unknown) =>
            log('warn', `${key}: a Socket Mode event was not acknowledged (Slack will redeliver it)`, { error: errorMessage(error) }),
          );
      },
    );
    socketClient.on('reconnecting', () => current.state('connecting'));
    socketClient.on('connected', () => current.state('connected'));
    socketClient.on('disconnected', () => {
      if (!stopping) current.state('error', `${key}: the Socket Mode connection was lost`);
    });
    socket = socketClient;
    try {
      await socketClient.start();
    } catch (error) {
      throw new Error(refusal(error, key, 'apps.connections.open', 'appToken'));
    }
  };

  return {
    channel: 'slack',
    account,
    maxLength: SLACK_MAX_LENGTH,

    async start(given: ChatSink) {
      sink = given;
      stopping = false;
      given.state('connecting');
      try {
        if (config.mode === 'events' && !config.signingSecret) {
          throw new Error(`${key}.signingSecret is required with mode 'events' (the app's Signing Secret, under Basic Information)`);
        }
        let auth: { user_id?: string; bot_id?: string };
        try {
          auth = await client.auth.test();
        } catch (error) {
          throw new Error(refusal(error, key, 'auth.test', 'botToken'));
        }
        botUserId = auth.user_id;
        botId = auth.bot_id;
        log('info', `${key}: signed in`, { botUserId, botId, mode: config.mode });
        if (config.mode === 'socket') await startSocket(given);
        else given.state('connected');
      } catch (error) {
        const message = errorMessage(error);
        stopping = true;
        await socket?.disconnect().catch(() => undefined);
        socket = undefined;
        given.state('error', message);
        throw new Error(message);
      }
    },

    async stop() {
      stopping = true;
      const current = socket;
      socket = undefined;
      await current?.disconnect();
      sink?.state('stopped');
      sink = undefined;
    },

    async send(message: ChatSend) {
      try {
        const result = await client.chat.postMessage({
          channel: message.place.conversation,
          text: message.text,
          ...(message.place.thread ? { thread_ts: message.place.thread } : {}),
          ...(message.buttons?.length ? { blocks: blocksWithButtons(message.text, message.buttons) } : {}),
        });
        if (!result.ts) throw new Error(`${key}: chat.postMessage answered without a ts`);
        return { id: result.ts };
      } catch (error) {
        throw deliveryError(error, key);
      }
    },

    // Slack's Web API has no typing indicator for bots (only the legacy RTM API had one): nothing to show.
    async typing() {},

    // Only an Events API account receives by webhook: the control port answers 404 for a Socket Mode one.
    ...(config.mode === 'events' ? { webhook: (request: ChatWebhookRequest) => answerWebhook(request) } : {}),
  };

  async function answerWebhook(request: ChatWebhookRequest): Promise<ChatWebhookAnswer> {
    if (!config.signingSecret) {
      return { status: 503, body: { error: `${key}.signingSecret is not set: requests from Slack cannot be verified` } };
    }
    const raw = Buffer.from(request.body).toString('utf8');
    try {
      verifySlackRequest({
        signingSecret: config.signingSecret,
        body: raw,
        headers: {
          'x-slack-signature': header(request, 'x-slack-signature') ?? '',
          'x-slack-request-timestamp': Number(header(request, 'x-slack-request-timestamp')),
        },
      });
    } catch (error) {
      log('warn', `${key}: refused a request that is not from Slack`, { error: errorMessage(error) });
      return { status: 401, body: { error: errorMessage(error) } };
    }
    let body: Record<string, unknown>;
    try {
      body = parseBody(raw, header(request, 'content-type'));
    } catch (error) {
      return { status: 400, body: { error: `the body is neither JSON nor a form with a payload: ${errorMessage(error)}` } };
    }
    if (body.type === 'url_verification') return { status: 200, body: { challenge: body.challenge } };
    if (!sink) return { status: 503, body: { error: `${key} is not started` } };
    const retryNum = Number(header(request, 'x-slack-retry-num'));
    try {
      const response = await receiver.dispatch(
        body,
        Number.isFinite(retryNum) ? retryNum : undefined,
        header(request, 'x-slack-retry-reason'),
      );
      return { status: 200, ...(response !== undefined ? { body: response } : {}) };
    } catch (error) {
      // No ack: Slack retries the delivery, and the front dedupes it.
      log('warn', `${key}: an event failed and was not acknowledged (Slack will retry it)`, { error: errorMessage(error) });
      return { status: 500, body: { error: errorMessage(error) } };
    }
  }
}

/**
 * Bolt's receiver for both modes: it hands each event to the App and gives back what the listener acked with, once
 * the App is done with it. Bolt acks events before their listeners run; this ack only records, so that the real
 * answer to Slack waits for the listener (and the sink behind it).
 */
class GatewayReceiver implements Receiver {
  private app: App | undefined;

  init(app: App): void {
    this.app = app;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  /** Resolves with the ack's payload once the event was handled; rejects when a listener failed (then no ack). */
  async dispatch(body: Record<string, unknown>, retryNum?: number, retryReason?: string): Promise<unknown> {
    if (!this.app) throw new Error('the Slack receiver has no App');
    let acked: unknown;
    const event: ReceiverEvent = {
      body,
      ack: async (response?: unknown) => {
        acked = response;
      },
      ...(retryNum !== undefined ? { retryNum } : {}),
      ...(retryReason !== undefined ? { retryReason } : {}),
    };
    await this.app.processEvent(event);
    return acked;
  }
}

function blocksWithButtons(text: string, rows: ChatButton[][]) {
  const sections = [];
  for (let at = 0; at < text.length || at === 0; at += SECTION_TEXT_LIMIT) {
    sections.push({ type: 'section', text: { type: 'mrkdwn', text: text.slice(at, at + SECTION_TEXT_LIMIT) || ' ' } });
  }
  const actions = rows.map((row, r) => ({
    type: 'actions',
    elements: row.map((button, c) => ({
      type: 'button',
      // action_id must be unique within the message; the data travels in `value`.
      action_id: `switchboard-${r}-${c}`,
      text: { type: 'plain_text', text: button.label },
      value: button.data,
    })),
  }));
  return [...sections, ...actions];
}

function deliveryError(error: unknown, key: string): Error {
  const coded = error as { code?: string; retryAfter?: number; data?: { error?: string } };
  if (coded.code === webApi.ErrorCode.RateLimitedError && typeof coded.retryAfter === 'number') {
    return new RetryLaterError(`${key}: Slack rate-limited chat.postMessage (retry after ${coded.retryAfter} s)`, coded.retryAfter * 1000);
  }
  if (coded.code === webApi.ErrorCode.PlatformError && coded.data?.error && PERMANENT_ERRORS.has(coded.data.error)) {
    return new PermanentDeliveryError(`${key}: Slack refused chat.postMessage: ${coded.data.error}`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** A start failure's message: what Slack said, and which key to fix when it refused the token. */
function refusal(error: unknown, key: string, call: string, tokenKey: 'botToken' | 'appToken'): string {
  const coded = error as { code?: string; data?: { error?: string } };
  const said = coded.code === webApi.ErrorCode.PlatformError ? coded.data?.error : undefined;
  if (said && TOKEN_ERRORS.has(said)) return `${key}: Slack refused the ${tokenKey} (${call} said ${said}); check ${key}.${tokenKey}`;
  if (said) return `${key}: ${call} failed (Slack said ${said})`;
  return `${key}: ${call} failed: ${errorMessage(error)}`;
}

function parseBody(raw: string, contentType: string | undefined): Record<string, unknown> {
  // Interactivity (block_actions) is posted as a form with the JSON in `payload`; the Events API posts JSON.
  if (contentType?.startsWith('application/x-www-form-urlencoded')) {
    const payload = new URLSearchParams(raw).get('payload');
    if (payload === null) throw new Error('the form has no payload');
    return JSON.parse(payload) as Record<string, unknown>;
  }
  return JSON.parse(raw) as Record<string, unknown>;
}

function header(request: ChatWebhookRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function boltLogger(log: SlackLog, account: string): Logger {
  let level = 'info';
  const text = (parts: unknown[]) => parts.map((part) => (typeof part === 'string' ? part : errorMessage(part))).join(' ');
  return {
    debug: (...parts: unknown[]) => log('debug', text(parts), { channel: 'slack', account }),
    info: (...parts: unknown[]) => log('info', text(parts), { channel: 'slack', account }),
    warn: (...parts: unknown[]) => log('warn', text(parts), { channel: 'slack', account }),
    error: (...parts: unknown[]) => log('error', text(parts), { channel: 'slack', account }),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level as ReturnType<Logger['getLevel']>,
    setName: () => {},
  };
}
