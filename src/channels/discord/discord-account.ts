/**
 * A Discord bot account (docs/channels.md, Discord) on discord.js: the gateway brings messages and button presses,
 * the REST API sends. A direct message's conversation is its DM channel; a server channel is a group; a thread is a
 * channel of its own, so it is its own conversation. Sends go through the REST client with a nonce, which Discord
 * dedupes, and with discord.js's own retries off: the outbox is the one retry path.
 */
import { createHash } from 'node:crypto';
import {
  type ButtonInteraction,
  Client,
  Events,
  GatewayIntentBits,
  type Message,
  MessageFlags,
  MessageType,
  Partials,
  RateLimitError,
  Routes,
  SimpleShardingStrategy,
  type WebSocketOptions,
} from 'discord.js';
import type { DiscordAccountConfig } from '../../config/schema-channels.js';
import { errorMessage } from '../../core/errors.js';
import { PermanentDeliveryError, RetryLaterError, backoffDelay, sleep } from '../../kit/retry.js';
import type {
  ChatAccount,
  ChatAttachment,
  ChatButton,
  ChatMessage,
  ChatPlace,
  ChatSend,
  ChatSender,
  ChatSink,
} from '../../ports/channels.js';

export type DiscordLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

export interface DiscordAccountOptions {
  log: DiscordLog;
  /** Fetches attachments (a test's, or the guarded fetch). */
  fetch?: typeof fetch;
  /** How long start() waits for the gateway's READY and the servers that follow it; 30 s unless told. */
  readyTimeoutMs?: number;
}

type GatewayManager = Parameters<NonNullable<WebSocketOptions['buildStrategy']>>[0];

/** Discord's limit for a message's content. */
export const DISCORD_MAX_LENGTH = 2000;
/** Tries of handing one message to the gateway before it is given up (the Discord gateway does not send it again). */
const SINK_ATTEMPTS = 5;

/** Message types a person writes; joins, pins, boosts and the like are not messages to answer. */
const PERSON_MESSAGE_TYPES = new Set<MessageType>([MessageType.Default, MessageType.Reply]);

/**
 * REST refusals that no retry mends (docs: JSON error codes): unknown channel, missing access or permissions, cannot
 * message this user, empty or invalid message.
 */
const PERMANENT_CODES = new Set([10003, 10008, 50001, 50006, 50007, 50013, 50035]);

export function createDiscordAccount(account: string, config: DiscordAccountConfig, options: DiscordAccountOptions): ChatAccount {
  const key = `channels.discord.accounts.${account}`;
  const log = options.log;
  const fetchFn = options.fetch ?? fetch;
  const gatewayUrl = config.gatewayUrl;
  let client: Client | undefined;
  let sink: ChatSink | undefined;
  let stopping = false;
  /** Whether start() finished: a close before that is start's error to report, after it the connection's. */
  let connected = false;

  const build = (): Client => {
    const built = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.DirectMessages,
        GatewayIntentBits.MessageContent,
      ],
      // DM channels are not in the cache until a message arrives: without Channel partials their messages are dropped.
      partials: [Partials.Channel, Partials.Message],
      rest: {
        api: config.apiUrl,
        // A 429 is thrown to us (RateLimitError) instead of waited out in discord.js's queue, with the exact delay
        // Discord asked for (no added offset); other failures are not retried here either.
        rejectOnRateLimit: () => true,
        offset: 0,
        retries: 0,
      },
      ...(gatewayUrl
        ? {
            ws: {
              // discord.js has no gateway URL option: the manager's GET /gateway/bot answer (still fetched, for the token
              // check and the session limits) is given this URL instead of Discord's.
              buildStrategy: (manager: GatewayManager) => {
                const fetchInformation = manager.fetchGatewayInformation.bind(manager);
                manager.fetchGatewayInformation = async (force?: boolean) => ({ ...(await fetchInformation(force)), url: gatewayUrl });
                return new SimpleShardingStrategy(manager);
              },
            },
          }
        : {}),
    });
    // The gateway's order is the conversation's: each message goes to the sink after the one before it resolved.
    let previous = Promise.resolve();
    built.on(Events.MessageCreate, (message) => {
      previous = previous.then(() =>
        onMessage(message).catch((error: unknown) =>
          // The gateway has no ack: a message the sink failed to store is lost to this connection (see docs).
          log('error', `${key}: a message could not be handed to the gateway`, { error: errorMessage(error), messageId: message.id }),
        ),
      );
    });
    built.on(Events.InteractionCreate, (interaction) => {
      if (!interaction.isButton()) return;
      onButton(interaction).catch((error: unknown) => log('warn', `${key}: a button press failed`, { error: errorMessage(error) }));
    });
    built.on(Events.ShardDisconnect, (event) => {
      if (connected && !stopping) sink?.state('error', closeReason(key, event.code));
    });
    built.on(Events.ShardReconnecting, () => {
      if (!stopping) sink?.state('connecting');
    });
    built.on(Events.ShardResume, () => {
      if (!stopping) sink?.state('connected');
    });
    built.on(Events.Error, (error) => log('error', `${key}: ${error.message}`));
    return built;
  };

  const toPlace = (message: Message): ChatPlace => ({
    conversation: message.channelId,
    kind: message.guildId ? 'group' : 'direct',
  });

  const toAttachment = (attachment: { name: string; size: number; contentType: string | null; url: string }): ChatAttachment => ({
    name: attachment.name,
    size: attachment.size,
    ...(attachment.contentType ? { mimeType: attachment.contentType } : {}),
    fetch: async () => {
      const response = await fetchFn(attachment.url);
      if (!response.ok) throw new Error(`downloading the Discord attachment ${attachment.name} failed with HTTP ${response.status}`);
      return new Uint8Array(await response.arrayBuffer());
    },
  });

  async function onMessage(message: Message): Promise<void> {
    const current = sink;
    if (!current || !client?.user) return;
    if (message.author.bot || message.system || !PERSON_MESSAGE_TYPES.has(message.type)) return;
    const place = toPlace(message);
    const botId = client.user.id;
    const chat: ChatMessage = {
      id: message.id,
      place,
      sender: senderOf(message.author),
      text: message.content,
      attachments: [...message.attachments.values()].map(toAttachment),
      addressed: place.kind === 'direct' || message.mentions.users.has(botId) || message.mentions.repliedUser?.id === botId,
    };
    // The gateway has no ack and sends a message once: a failure to store it (the store busy or restarting) is tried
    // again a few times, in order, before it is given up and logged.
    for (let attempt = 0; ; attempt++) {
      try {
        await current.message(chat);
        return;
      } catch (error) {
        if (stopping || attempt >= SINK_ATTEMPTS - 1) throw error;
        await sleep(backoffDelay(attempt, { baseDelayMs: 500, maxDelayMs: 8000 }, Math.random()));
      }
    }
  }

  async function onButton(interaction: ButtonInteraction): Promise<void> {
    const current = sink;
    if (!current) return;
    // Discord wants a first answer within 3 s: a deferred ephemeral reply ("thinking..."), edited once the press is decided.
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    let answer: string;
    try {
      answer = await current.action({
        id: interaction.id,
        place: { conversation: interaction.channelId, kind: interaction.guildId ? 'group' : 'direct' },
        sender: senderOf(interaction.user),
        data: interaction.customId,
      });
    } catch (error) {
      log('warn', `${key}: a button press could not be recorded`, { error: errorMessage(error) });
      answer = 'That press could not be recorded just now; press the button again in a moment.';
    }
    await interaction.editReply({ content: answer });
  }

  return {
    channel: 'discord',
    account,
    maxLength: DISCORD_MAX_LENGTH,

    async start(given: ChatSink) {
      sink = given;
      stopping = false;
      connected = false;
      given.state('connecting');
      const built = build();
      client = built;
      try {
        const ready = new Promise<void>((resolve) => built.once(Events.ClientReady, () => resolve()));
        // A shard closed for good while connecting (a refused token or intent): say which, instead of waiting out the deadline.
        const closed = new Promise<never>((_, reject) =>
          built.once(Events.ShardDisconnect, (event) => reject(new Error(closeReason(key, event.code)))),
        );
        const login = built.login(config.token).catch((error: unknown) => {
          const code = (error as { code?: string }).code;
          if (code === 'TokenInvalid') {
            throw new Error(`${key}: Discord refused the token (GET /gateway/bot answered 401 Unauthorized); check ${key}.token`);
          }
          throw new Error(`${key}: connecting to Discord failed: ${errorMessage(error)}`);
        });
        await deadline(
          Promise.race([login.then(() => ready), closed]),
          options.readyTimeoutMs ?? 30_000,
          `${key}: the Discord gateway did not become ready`,
        );
        log('info', `${key}: signed in`, { botUserId: built.user?.id });
        connected = true;
        given.state('connected');
      } catch (error) {
        const message = errorMessage(error);
        client = undefined;
        stopping = true;
        await built.destroy().catch(() => undefined);
        given.state('error', message);
        throw new Error(message);
      }
    },

    async stop() {
      stopping = true;
      const current = client;
      client = undefined;
      await current?.destroy();
      sink?.state('stopped');
      sink = undefined;
    },

    async send(message: ChatSend) {
      const rest = restOf();
      try {
        const body = {
          content: message.text,
          // Discord dedupes a channel's sends with the same nonce for a few minutes when enforce_nonce is set: a
          // retried part within that window answers the first message instead of posting a second.
          nonce: discordNonce(message.nonce),
          enforce_nonce: true,
          // Agents' replies mention people, never @everyone or roles.
          allowed_mentions: { parse: ['users'] },
          ...(message.replyTo ? { message_reference: { message_id: message.replyTo, fail_if_not_exists: false } } : {}),
          ...(message.buttons?.length ? { components: buttonRows(message.buttons) } : {}),
        };
        const sent = (await rest.post(Routes.channelMessages(message.place.conversation), { body })) as { id: string };
        return { id: sent.id };
      } catch (error) {
        throw deliveryError(error, key);
      }
    },

    async typing(place: ChatPlace) {
      // Shows "typing..." for about ten seconds or until the bot's next message; the front repeats it.
      await restOf().post(Routes.channelTyping(place.conversation));
    },
  };

  function restOf() {
    if (!client) throw new Error(`${key} is not started`);
    return client.rest;
  }
}

/**
 * Discord takes a nonce of at most 25 characters: a longer one (an outbox id and a part index) is shortened to 25
 * characters of its SHA-256, which stays stable across retries and keeps the parts of one reply apart.
 */
export function discordNonce(nonce: string): string {
  return nonce.length <= 25 ? nonce : createHash('sha256').update(nonce).digest('base64url').slice(0, 25);
}

function buttonRows(rows: ChatButton[][]) {
  // An action row (type 1) of buttons (type 2, style 1 = primary); the custom_id (at most 100 characters) comes back
  // in the interaction.
  return rows.map((row) => ({
    type: 1,
    components: row.map((button) => ({ type: 2, style: 1, label: button.label, custom_id: button.data })),
  }));
}

function deliveryError(error: unknown, key: string): Error {
  if (error instanceof RateLimitError) {
    return new RetryLaterError(
      `${key}: Discord rate-limited ${error.method.toUpperCase()} ${error.route} (retry after ${error.retryAfter} ms)`,
      error.retryAfter,
    );
  }
  const coded = error as { code?: unknown; status?: number; message?: string };
  if (typeof coded.code === 'number' && PERMANENT_CODES.has(coded.code)) {
    return new PermanentDeliveryError(`${key}: Discord refused the message: ${coded.message ?? coded.code}`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

function closeReason(key: string, code: number): string {
  if (code === 4004) return `${key}: Discord refused the token at the gateway (close code 4004); check ${key}.token`;
  if (code === 4014) {
    return `${key}: Discord refused the Message Content intent (close code 4014); enable it for the bot under Bot, Privileged Gateway Intents, in the Developer Portal`;
  }
  return `${key}: the Discord gateway closed the connection (close code ${code})`;
}

async function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
    // A stop during the start must not be held up by it: the process may end before the deadline.
    timer.unref();
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A Discord user as a sender. Since Discord's move to unique usernames, an account whose discriminator is "0" has a
 * username no one else has: that is a handle. A legacy `name#1234` is only a name.
 */
function senderOf(user: { id: string; username: string; discriminator: string }): ChatSender {
  return { id: user.id, name: user.username, ...(user.discriminator === '0' ? { handle: `@${user.username}` } : {}) };
}
