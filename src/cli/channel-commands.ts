/** `switchboard channels` (docs/channels.md): each chat account's connection, the senders waiting to be let in, pairing. */
import type { ChannelAccountStatus } from '../channels/front.js';
import type { ChatSenderRecord } from '../ports/channels.js';
import { ago, table } from './format.js';
import { client, parseLimit, print, program, withQuery } from './shared.js';

const channels = program
  .command('channels')
  .description('chat channels (Telegram, Slack, Discord, webhooks): status, senders and pairing (docs/channels.md)');

channels
  .command('status')
  .description("each account's connection, its last message and its last error")
  .action(async () => {
    const answer = await client().request<{ accounts: ChannelAccountStatus[] }>('GET', '/v1/channels');
    print(answer, () =>
      answer.accounts.length === 0
        ? '(no channel accounts: add one under channels.<telegram|slack|discord|webhook>.accounts, docs/channels.md)'
        : table(
            answer.accounts.map((account) => ({
              channel: account.channel,
              account: account.account,
              state: account.state,
              'last message': account.lastMessageAt ? `${ago(account.lastMessageAt)} from ${account.lastMessageFrom}` : '',
              received: account.received,
              refused: account.refused,
              sent: account.sent,
              error: account.error ? `${account.error}${account.errorAt ? ` (${ago(account.errorAt)})` : ''}` : '',
            })),
            ['channel', 'account', 'state', 'last message', 'received', 'refused', 'sent', 'error'],
          ),
    );
  });

channels
  .command('senders')
  .description('people and groups that wrote to a channel: let in (allowed), waiting with a pairing code (pending), or refused')
  .option('--channel <name>', 'only this channel')
  .option('--status <status>', 'pending, allowed or refused')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { channel?: string; status?: string; limit?: number }) => {
    const answer = await client().request<{ senders: ChatSenderRecord[] }>(
      'GET',
      withQuery('/v1/channels/senders', { channel: options.channel, status: options.status, limit: options.limit }),
    );
    print(answer, () =>
      answer.senders.length === 0
        ? '(no senders)'
        : table(
            answer.senders.map((sender) => ({
              channel: sender.channel,
              account: sender.account,
              sender: sender.senderId,
              name: sender.name ?? '',
              status: sender.status,
              code: sender.code ?? '',
              since: ago(sender.updatedAt),
            })),
            ['channel', 'account', 'sender', 'name', 'status', 'code', 'since'],
          ),
    );
  });

channels
  .command('pair <channel> <code>')
  .description('let in the sender who was given this pairing code')
  .action(async (channel: string, code: string) => {
    const answer = await client().request<{ sender: ChatSenderRecord }>('POST', `/v1/channels/${encodeURIComponent(channel)}/pair`, {
      code,
    });
    print(
      answer,
      () =>
        `paired ${answer.sender.name ?? answer.sender.senderId} (${answer.sender.senderId}) on ${channel} account ${answer.sender.account}`,
    );
  });

for (const [verb, description] of [
  ['allow', 'let a sender in (as a pairing does: under access.direct "pairing"); under "allowlist", list them in access.users'],
  ['revoke', 'shut a sender (or group:<id>) out, whatever access.users, groups and the modes say: no run'],
] as const) {
  channels
    .command(`${verb} <channel> <account> <sender>`)
    .description(description)
    .action(async (channel: string, account: string, sender: string) => {
      const answer = await client().request<{ sender: ChatSenderRecord }>(
        'POST',
        `/v1/channels/${encodeURIComponent(channel)}/senders/${encodeURIComponent(account)}/${encodeURIComponent(sender)}/${verb}`,
      );
      print(answer, () => `${answer.sender.senderId} on ${channel} account ${account}: ${answer.sender.status}`);
    });
}
