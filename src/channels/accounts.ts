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
  const webhook = Object.entries(config.webhook?.accounts ?? {});
  if (webhook.length > 0) {
    const { createWebhookAccount } = await import('./webhook/webhook-account.js');
    for (const [name, account] of webhook) accounts.push(createWebhookAccount(name, account));
  }
  return accounts;
}
