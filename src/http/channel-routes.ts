/**
 * The control API's channel routes (docs/channels.md, docs/control-api.md "Channels"): each account's connection, the
 * senders let in, waiting or refused, and pairing. The platforms' own webhooks (`/channels/<channel>/<account>`) are
 * served before the token check: each account checks its platform's signature instead.
 */
import { z } from 'zod';
import type { ChannelAccountStatus } from '../channels/front.js';
import type { ChannelStore, ChatSenderRecord, ChatSenderStatus, ChatWebhookAnswer, ChatWebhookRequest } from '../ports/channels.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';
import { SwitchboardError } from '../core/errors.js';

/** What the control API uses of the channel front. */
export interface ChannelControl {
  status(): ChannelAccountStatus[];
  pair(channel: string, code: string): Promise<ChatSenderRecord>;
  senders(filter: Parameters<ChannelStore['listSenders']>[0]): Promise<ChatSenderRecord[]>;
  setSender(channel: string, account: string, senderId: string, status: 'allowed' | 'revoked'): Promise<ChatSenderRecord>;
  webhook(channel: string, account: string, request: ChatWebhookRequest): Promise<ChatWebhookAnswer>;
}

export interface ChannelsAnswer {
  accounts: ChannelAccountStatus[];
}

const STATUSES: readonly ChatSenderStatus[] = ['pending', 'allowed', 'refused', 'revoked'];
const pairBody = z.strictObject({ code: z.string().min(1).max(32) });

export const WEBHOOK_PATH = /^\/channels\/([a-z]+)\/([A-Za-z0-9_-]{1,64})$/;

export function channelRoutes(channels: ChannelControl, route: RouteAdder, limitOf: (url: URL) => number | undefined): void {
  route('GET', /^\/v1\/channels$/, async (): Promise<ChannelsAnswer> => ({ accounts: channels.status() }));
  route('GET', /^\/v1\/channels\/senders$/, async (_request, url): Promise<{ senders: ChatSenderRecord[] }> => {
    const status = url.searchParams.get('status') ?? undefined;
    if (status !== undefined && !STATUSES.includes(status as ChatSenderStatus))
      throw new SwitchboardError('INVALID_REQUEST', `status must be one of ${STATUSES.join(', ')}, not "${status}"`);
    const channel = url.searchParams.get('channel') ?? undefined;
    return { senders: await channels.senders({ channel, status: status as ChatSenderStatus | undefined, limit: limitOf(url) }) };
  });
  route(
    'POST',
    /^\/v1\/channels\/([a-z]+)\/senders\/([^/]+)\/([^/]+)\/(allow|revoke)$/,
    async (_request, _url, [channel, account, senderId, verb]): Promise<{ sender: ChatSenderRecord }> => ({
      sender: await channels.setSender(channel, account, senderId, verb === 'allow' ? 'allowed' : 'revoked'),
    }),
  );
  route('POST', /^\/v1\/channels\/([a-z]+)\/pair$/, async (request, _url, [channel]): Promise<{ sender: ChatSenderRecord }> => {
    const { code } = parseBody(pairBody, await readJson(request));
    return { sender: await channels.pair(channel, code) };
  });
}
