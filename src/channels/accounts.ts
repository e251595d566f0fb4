/**
 * The accounts the config names, each on its platform's library. A library is loaded only when one of its accounts is
 * configured: a gateway without channels loads none of grammY, Bolt or discord.js.
 */
import type { ChannelsConfig } from '../config/schema-channels.js';
import type { ChatAccount } from '../ports/channels.js';

export async function openAccounts(config: ChannelsConfig, log: (message: string) => void): Promise<ChatAccount[]> {
  const accounts: ChatAccount[] = [];
  const telegram = Object.entries(config.telegram?.accounts ?? {});
  if (telegram.length > 0) {
    const { createTelegramAccount } = await import('./telegram/telegram-account.js');
    for (const [name, account] of telegram) accounts.push(createTelegramAccount(name, account, { log }));
  }
  // Slack's and Discord's libraries log with levels: the gateway's log takes their warnings and errors.
  const leveled = (level: string, message: string, fields?: Record<string, unknown>) => {
    if (level === 'warn' || level === 'error') log(fields ? `${message} ${JSON.stringify(fields)}` : message);
  };
  const slack = Object.entries(config.slack?.accounts ?? {});
  if (slack.length > 0) {
    const { createSlackAccount } = await import('./slack/slack-account.js');
    for (const [name, account] of slack) accounts.push(createSlackAccount(name, account, { log: leveled }));
  }
  const discord = Object.entries(config.discord?.accounts ?? {});
  if (discord.length > 0) {
    const { createDiscordAccount } = await import('./discord/discord-account.js');
    for (const [name, account] of discord) accounts.push(createDiscordAccount(name, account, { log: leveled }));
  }
  const webhook = Object.entries(config.webhook?.accounts ?? {});
  if (webhook.length > 0) {
    const { createWebhookAccount } = await import('./webhook/webhook-account.js');
    for (const [name, account] of webhook) accounts.push(createWebhookAccount(name, account));
  }
  return accounts;
}
