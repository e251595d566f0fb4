/**
 * A Telegram bot account on grammY's Bot API client (docs/channels.md, "Telegram"). Updates come by long polling
 * (getUpdates) or by webhook; either way an update is acknowledged only after the front has made it durable: polling
 * asks for the next offset only after the sink resolved, and a webhook answers 200 only then, so a crash has Telegram
 * send the update again, and the front's idempotency key makes it one input.
 */
import { sameSecret } from '../../kit/same-secret.js';
import { Api, GrammyError, HttpError } from 'grammy';
import type { CallbackQuery, Message, Update, User } from 'grammy/types';
import type { TelegramAccountConfig } from '../../config/schema-channels.js';
import { errorMessage } from '../../core/errors.js';
import { PermanentDeliveryError, RetryLaterError, backoffDelay, sleep } from '../../kit/retry.js';
import type {
  ChatAccount,
  ChatAttachment,
  ChatMessage,
  ChatPlace,
  ChatSend,
  ChatSender,
  ChatSink,
  ChatWebhookAnswer,
  ChatWebhookRequest,
} from '../../ports/channels.js';

/** Telegram's longest text message, in UTF-16 code units (after entities are parsed: replies are sent as plain text). */
const MAX_LENGTH = 4096;
/** How long one getUpdates waits for an update before it answers empty. */
const POLL_SECONDS = 25;
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;

/** grammY on Node types its signals with the abort-controller shim's class; the platform's AbortSignal is what it gets. */
type GrammySignal = Parameters<Api['getMe']>[0];

export interface TelegramOptions {
  log: (message: string) => void;
}

export function createTelegramAccount(account: string, config: TelegramAccountConfig, options: TelegramOptions): ChatAccount {
  return new TelegramAccount(account, config, options);
}

class TelegramAccount implements ChatAccount {
  readonly channel = 'telegram';
  readonly maxLength = MAX_LENGTH;
  private readonly api: Api;
  private me?: { id: number; username?: string };
  private sink?: ChatSink;
  private readonly abort = new AbortController();
  private polling?: Promise<void>;

  constructor(
    readonly account: string,
    private readonly config: TelegramAccountConfig,
    private readonly options: TelegramOptions,
  ) {
    // A call may take the long poll's 25 s and a little more; well under the outbox's claim (5 minutes), so a send that
    // hangs is given up before another attempt may take its row and send the same part.
    this.api = new Api(config.token, { apiRoot: config.apiRoot, timeoutSeconds: POLL_SECONDS + 35 });
  }

  async start(sink: ChatSink): Promise<void> {
    this.sink = sink;
    sink.state('connecting');
    try {
      const me = await this.api.getMe(this.abort.signal as GrammySignal);
      this.me = { id: me.id, username: me.username };
    } catch (error) {
      const why =
        error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)
          ? `Telegram refused the token of account "${this.account}" (${error.description}): check channels.telegram.accounts.${this.account}.token`
          : `Telegram did not answer getMe for account "${this.account}": ${errorMessage(error)}`;
      sink.state('error', why);
      throw new Error(why);
    }
    if (this.config.mode === 'webhook') {
      sink.state('connected');
      return;
    }
    this.polling = this.poll(sink);
  }

  async stop(): Promise<void> {
    this.abort.abort(new Error('the channel is stopping'));
    await this.polling?.catch(() => {});
    this.sink?.state('stopped');
  }

  /** getUpdates in a loop: an offset past an update is asked for only once the update is durable. */
  private async poll(sink: ChatSink): Promise<void> {
    let offset: number | undefined;
    let failures = 0;
    while (!this.abort.signal.aborted) {
      try {
        const updates = await this.api.getUpdates(
          { offset, timeout: POLL_SECONDS, allowed_updates: [...ALLOWED_UPDATES] },
          this.abort.signal as GrammySignal,
        );
        if (failures > 0 || offset === undefined) sink.state('connected');
        failures = 0;
        for (const update of updates) {
          await this.handle(update, sink);
          offset = update.update_id + 1;
        }
      } catch (error) {
        if (this.abort.signal.aborted) return;
        failures += 1;
        const why = pollError(error, this.account);
        sink.state('error', why);
        if (failures === 1) this.options.log(why);
        await sleep(backoffDelay(failures, { baseDelayMs: 500, maxDelayMs: 30_000 }, Math.random()), this.abort.signal).catch(() => {});
      }
    }
  }

  async webhook(request: ChatWebhookRequest): Promise<ChatWebhookAnswer> {
    const given = request.headers['x-telegram-bot-api-secret-token'];
    const expected = this.config.webhookSecret;
    if (this.config.mode !== 'webhook')
      return { status: 404, body: { error: `telegram account "${this.account}" polls (mode: polling): it takes no webhook` } };
    if (expected && (typeof given !== 'string' || !sameSecret(given, expected)))
      return { status: 401, body: { error: 'the X-Telegram-Bot-Api-Secret-Token header does not match the account’s webhookSecret' } };
    if (!this.sink) return { status: 503, body: { error: 'the channel is starting; Telegram will send the update again' } };
    let update: Update;
    try {
      update = JSON.parse(Buffer.from(request.body).toString('utf8')) as Update;
    } catch {
      return { status: 400, body: { error: 'the body is not JSON' } };
    }
    if (typeof update?.update_id !== 'number') return { status: 400, body: { error: 'the body is not a Telegram update (no update_id)' } };
    await this.handle(update, this.sink);
    return { status: 200, body: { ok: true } };
  }

  private async handle(update: Update, sink: ChatSink): Promise<void> {
    if (update.message) {
      const message = this.toMessage(update.message);
      if (message) await sink.message(message);
    } else if (update.callback_query) await this.press(update.callback_query, sink);
  }

  private toMessage(message: Message): ChatMessage | undefined {
    if (!message.from || message.from.is_bot) return undefined;
    const text = message.text || message.caption || '';
    const direct = message.chat.type === 'private';
    const place: ChatPlace = {
      conversation: String(message.chat.id),
      kind: direct ? 'direct' : 'group',
      ...(message.is_topic_message && message.message_thread_id !== undefined ? { thread: String(message.message_thread_id) } : {}),
    };
    const attachments = this.attachmentsOf(message);
    if (!text && attachments.length === 0) return undefined;
    return {
      id: String(message.message_id),
      place,
      sender: senderOf(message.from),
      text,
      attachments,
      addressed: direct || this.addressed(message, text),
    };
  }

  /** In a group: the bot's @name in the text, a /command@bot, or a reply to one of the bot's messages. */
  private addressed(message: Message, text: string): boolean {
    if (message.reply_to_message?.from?.id === this.me?.id) return true;
    const name = this.me?.username;
    return name !== undefined && text.toLowerCase().includes(`@${name.toLowerCase()}`);
  }

  private attachmentsOf(message: Message): ChatAttachment[] {
    const files: { id: string; name: string; size?: number; mimeType?: string }[] = [];
    if (message.document)
      files.push({
        id: message.document.file_id,
        name: message.document.file_name ?? 'document',
        size: message.document.file_size,
        mimeType: message.document.mime_type,
      });
    const photo = message.photo?.at(-1);
    if (photo) files.push({ id: photo.file_id, name: 'photo.jpg', size: photo.file_size, mimeType: 'image/jpeg' });
    if (message.voice)
      files.push({ id: message.voice.file_id, name: 'voice.ogg', size: message.voice.file_size, mimeType: message.voice.mime_type });
    if (message.audio)
      files.push({
        id: message.audio.file_id,
        name: message.audio.file_name ?? 'audio',
        size: message.audio.file_size,
        mimeType: message.audio.mime_type,
      });
    if (message.video)
      files.push({
        id: message.video.file_id,
        name: message.video.file_name ?? 'video.mp4',
        size: message.video.file_size,
        mimeType: message.video.mime_type,
      });
    return files.map((file) => ({
      name: file.name,
      ...(file.size !== undefined ? { size: file.size } : {}),
      ...(file.mimeType ? { mimeType: file.mimeType } : {}),
      fetch: () => this.download(file.id),
    }));
  }

  private async download(fileId: string): Promise<Uint8Array> {
    const file = await this.api.getFile(fileId);
    if (!file.file_path) throw new Error('Telegram gave no path for the file (it may be over the Bot API’s 20 MB download limit)');
    const response = await fetch(`${this.config.apiRoot.replace(/\/$/, '')}/file/bot${this.config.token}/${file.file_path}`);
    if (!response.ok) throw new Error(`Telegram answered ${response.status} for the file`);
    return new Uint8Array(await response.arrayBuffer());
  }

  private async press(query: CallbackQuery, sink: ChatSink): Promise<void> {
    const chat = query.message?.chat;
    const answer = await sink
      .action({
        id: query.id,
        place: { conversation: String(chat?.id ?? query.from.id), kind: chat && chat.type !== 'private' ? 'group' : 'direct' },
        sender: senderOf(query.from),
        data: query.data ?? '',
      })
      .catch((error: unknown) => `Not answered: ${errorMessage(error)}`);
    // The toast is a courtesy: a press whose query expired (over 15 minutes) still counted.
    await this.api.answerCallbackQuery(query.id, { text: answer.slice(0, 200) }).catch(() => {});
  }

  async send(message: ChatSend): Promise<{ id: string }> {
    try {
      const sent = await this.api.sendMessage(message.place.conversation, message.text, {
        ...(message.place.thread ? { message_thread_id: Number(message.place.thread) } : {}),
        ...(message.replyTo ? { reply_parameters: { message_id: Number(message.replyTo), allow_sending_without_reply: true } } : {}),
        ...(message.buttons
          ? {
              reply_markup: {
                inline_keyboard: message.buttons.map((row) => row.map((button) => ({ text: button.label, callback_data: button.data }))),
              },
            }
          : {}),
      });
      return { id: String(sent.message_id) };
    } catch (error) {
      throw sendError(error, this.account, message.place.conversation);
    }
  }

  async typing(place: ChatPlace): Promise<void> {
    await this.api.sendChatAction(place.conversation, 'typing', place.thread ? { message_thread_id: Number(place.thread) } : {});
  }
}

/** A Telegram user as a sender: the @username is a handle (Telegram keeps it unique), the first name only a name. */
function senderOf(user: User): ChatSender {
  return {
    id: String(user.id),
    name: user.username ? `@${user.username}` : user.first_name,
    ...(user.username ? { handle: `@${user.username}` } : {}),
  };
}

/** A 429 waits its retry_after; a chat the bot cannot post in (blocked, removed, unknown) is no use retrying. */
function sendError(error: unknown, account: string, chat: string): Error {
  if (error instanceof GrammyError) {
    const what = `Telegram refused sendMessage to chat ${chat} (account "${account}"): ${error.error_code} ${error.description}`;
    if (error.error_code === 429) return new RetryLaterError(what, (error.parameters.retry_after ?? 1) * 1000);
    if (error.error_code === 400 || error.error_code === 403) return new PermanentDeliveryError(what);
    return new Error(what);
  }
  if (error instanceof HttpError) return new Error(`Telegram could not be reached (account "${account}"): ${errorMessage(error.error)}`);
  return error instanceof Error ? error : new Error(String(error));
}

function pollError(error: unknown, account: string): string {
  if (error instanceof GrammyError && error.error_code === 409)
    return `Telegram refused getUpdates for account "${account}": ${error.description} (another process polls this bot, or a webhook is set: delete it, or set mode: webhook)`;
  if (error instanceof GrammyError && error.error_code === 401)
    return `Telegram refused the token of account "${account}": check channels.telegram.accounts.${account}.token`;
  if (error instanceof HttpError) return `Telegram could not be reached (account "${account}"): ${errorMessage(error.error)}`;
  return `getUpdates failed for account "${account}": ${errorMessage(error)}`;
}
