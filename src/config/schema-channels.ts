/**
 * The configuration of chat channels (docs/channels.md): bot accounts on Telegram, Slack and Discord, and signed
 * webhooks, with who may talk to the agents. Which agent answers is the `bindings`' decision. Part of the config
 * schema (schema.ts); every key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';
import { secretString } from './secret-schema.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });
const wsUrl = z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' });

/** Who may talk to an agent through a channel; everyone else gets one polite refusal and no run. */
const access = z
  .strictObject({
    /**
     * People in direct chats: `pairing` (an unknown sender gets a code that an operator approves with `switchboard
     * channels pair`), `allowlist` (only `users`), or `open` (anyone).
     */
    direct: z.enum(['pairing', 'allowlist', 'open']).default('pairing'),
    /** Sender ids (or @handles where the platform has them) let in without pairing. */
    users: z.array(z.string().min(1)).default([]),
    /** Groups: `allowlist` (only `groups`), `open` (any group the bot is in), or `off`. */
    group: z.enum(['allowlist', 'open', 'off']).default('allowlist'),
    /** Group (conversation) ids the agents answer in. */
    groups: z.array(z.string().min(1)).default([]),
    /** In a group, answer only messages that mention the bot or reply to it. */
    requireMention: z.boolean().default(true),
  })
  .prefault({});

/** What every platform's channel has beside its accounts. */
const common = {
  access,
  /** The text a refused sender is told, once. */
  refusal: z.string().min(1).optional(),
  /** Files sent with messages are saved in the agent's workspace (`inbox/<channel>/`) up to this size; larger ones are refused with a reason. */
  maxAttachmentBytes: positiveInt.default(10 * 1024 * 1024),
  /** Show a typing indicator while a run works on a message. */
  typing: z.boolean().default(true),
};

const ACCOUNT_NAME = 'an account name is 1-64 letters, digits, _ or -';
// zod's own message for a bad key prints the value, which holds the account's token: this one names the rule only.
const accounts = <T extends z.ZodType>(account: T) =>
  z.record(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, ACCOUNT_NAME), account, {
    error: (issue) => (issue.code === 'invalid_key' ? ACCOUNT_NAME : undefined),
  });

export const telegramAccount = z.strictObject({
  /** The bot's token from @BotFather (`${TELEGRAM_BOT_TOKEN}`). */
  token: secretString(),
  /** `polling` (getUpdates: no public address needed) or `webhook` (Telegram POSTs to `/channels/telegram/<account>`). */
  mode: z.enum(['polling', 'webhook']).default('polling'),
  /** With `webhook`: the secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (set it with setWebhook's secret_token). */
  webhookSecret: secretString().optional(),
  /** The Bot API's root (a local Bot API server, or a test's fake). */
  apiRoot: httpUrl.default('https://api.telegram.org'),
});

export const slackAccount = z.strictObject({
  /** The bot token, xoxb-... (`${SLACK_BOT_TOKEN}`). */
  botToken: secretString(),
  /** `socket` (Socket Mode: needs `appToken`, no public address) or `events` (the Events API POSTs to `/channels/slack/<account>`). */
  mode: z.enum(['socket', 'events']).default('socket'),
  /** The app-level token, xapp-..., for Socket Mode. */
  appToken: secretString().optional(),
  /** The signing secret the Events API's requests are checked with. */
  signingSecret: secretString().optional(),
  /** The Web API's root (a test's fake). */
  apiUrl: httpUrl.default('https://slack.com/api/'),
});

export const discordAccount = z.strictObject({
  /** The bot token (`${DISCORD_BOT_TOKEN}`); the bot needs the Message Content intent. */
  token: secretString(),
  /** The REST API's root (a test's fake). */
  apiUrl: httpUrl.default('https://discord.com/api'),
  /** The gateway's WebSocket address, instead of the one the REST API names (a test's fake). */
  gatewayUrl: wsUrl.optional(),
});

export const webhookAccount = z.strictObject({
  /** Inbound POSTs to `/channels/webhook/<account>` are signed with this (HMAC-SHA256, docs/channels.md). */
  secret: secretString(),
  /** Where replies are POSTed, signed with the same secret; through the guarded fetch (`net`). */
  url: httpUrl.optional(),
});

export const channelsSection = z
  .strictObject({
    telegram: z.strictObject({ ...common, accounts: accounts(telegramAccount) }).optional(),
    slack: z.strictObject({ ...common, accounts: accounts(slackAccount) }).optional(),
    discord: z.strictObject({ ...common, accounts: accounts(discordAccount) }).optional(),
    webhook: z.strictObject({ ...common, accounts: accounts(webhookAccount) }).optional(),
  })
  .prefault({});

export type ChannelsConfig = z.infer<typeof channelsSection>;
/** What every channel has beside its accounts: access, the refusal, attachments, typing. */
export type ChannelConfig = Omit<NonNullable<ChannelsConfig['telegram']>, 'accounts'>;
export type TelegramAccountConfig = z.infer<typeof telegramAccount>;
export type SlackAccountConfig = z.infer<typeof slackAccount>;
export type DiscordAccountConfig = z.infer<typeof discordAccount>;
export type WebhookAccountConfig = z.infer<typeof webhookAccount>;

/** What the schema cannot see one field at a time: the secrets each account's mode needs. */
export function channelProblems(channels: ChannelsConfig): string[] {
  const problems: string[] = [];
  for (const [name, account] of Object.entries(channels.slack?.accounts ?? {})) {
    if (account.mode === 'socket' && !account.appToken)
      problems.push(
        `channels.slack.accounts.${name}.appToken: required with mode "socket" (an app-level token, xapp-..., with connections:write)`,
      );
    if (account.mode === 'events' && !account.signingSecret)
      problems.push(
        `channels.slack.accounts.${name}.signingSecret: required with mode "events" (the app's Signing Secret, under Basic Information)`,
      );
  }
  for (const [name, account] of Object.entries(channels.telegram?.accounts ?? {})) {
    if (account.mode === 'webhook' && !account.webhookSecret)
      problems.push(
        `channels.telegram.accounts.${name}.webhookSecret: required with mode "webhook" (give the same secret_token to setWebhook), or anyone could post updates`,
      );
  }
  return problems;
}
