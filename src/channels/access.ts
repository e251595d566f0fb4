/**
 * Who may talk to the agents through a channel (docs/channels.md, "Who may talk"): a direct chat's sender is let in by
 * the `users` list, by an approved pairing, or by `direct: open`; a group by the `groups` list or `group: open`.
 * Everyone else is told once (a pairing code, or the refusal) and gets no run. "Once" holds across redeliveries, crashes
 * and gateways: the sender's record is added once (the code that holds is the record's), and the front queues the
 * message under a key per sender, which the outbox keeps to one row.
 */
import { randomInt } from 'node:crypto';
import type { ChannelConfig } from '../config/schema-channels.js';
import type { ChannelStore, ChatMessage, ChatSender } from '../ports/channels.js';

export type AccessVerdict =
  /** Let in: make it an input. */
  | { let: true }
  /** Not let in. `tell` is what the sender is told, once per sender (absent: a group's chatter, not addressed to the bot). */
  | { let: false; why: string; tell?: string };

/** Letters and digits that cannot be misread for one another (no 0/O, 1/I/L). */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

export function pairingCode(): string {
  return Array.from({ length: 8 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
}

/**
 * Whether `users` names the sender: by id, or an `@handle` entry by the platform's own handle (in any case, as the
 * platforms compare them). A display name never counts: anyone may call themselves `123456789` or `@alice`. A handle
 * can change hands when its owner gives it up: ids are the safer entries (docs/channels.md).
 */
export function listed(users: readonly string[], sender: ChatSender): boolean {
  if (users.includes(sender.id)) return true;
  const handle = sender.handle?.toLowerCase();
  return handle?.startsWith('@') === true && users.some((user) => user.toLowerCase() === handle);
}

const DEFAULT_REFUSAL = 'Sorry, this assistant only talks to people its operator has let in.';

export async function judge(
  store: ChannelStore,
  config: ChannelConfig,
  account: string,
  channel: string,
  message: ChatMessage,
  now: number,
): Promise<AccessVerdict> {
  const { access } = config;
  const refusal = config.refusal ?? DEFAULT_REFUSAL;
  if (message.place.kind === 'group') {
    const group = message.place.conversation;
    if (access.group === 'off') return { let: false, why: `groups are off (channels.${channel}.access.group)` };
    if ((await store.sender(channel, account, `group:${group}`))?.status === 'revoked')
      return { let: false, why: `group ${group} was shut out by an operator (switchboard channels revoke)` };
    if (access.group === 'allowlist' && !access.groups.includes(group)) {
      await store.addSender({ channel, account, senderId: `group:${group}`, name: null, status: 'refused', code: null }, now);
      // A group is told only when someone speaks to the bot, not at every line of its chatter.
      return {
        let: false,
        why: `group ${group} is not in channels.${channel}.access.groups`,
        ...(message.addressed ? { tell: refusal } : {}),
      };
    }
    return { let: true };
  }
  const sender = message.sender;
  let known = await store.sender(channel, account, sender.id);
  // An operator's revoke outweighs the lists and the modes; the sender was told once already, or is told now.
  if (known?.status === 'revoked') return { let: false, why: `sender ${sender.id} was shut out by an operator`, tell: refusal };
  if (access.direct === 'open' || listed(access.users, sender)) return { let: true };
  // Only pairing lets in those an operator paired: under `allowlist`, the list alone decides.
  if (known?.status === 'allowed' && access.direct === 'pairing') return { let: true };
  if (!known) {
    const status = access.direct === 'pairing' ? 'pending' : 'refused';
    const code = status === 'pending' ? pairingCode() : null;
    await store.addSender({ channel, account, senderId: sender.id, name: sender.name?.slice(0, 200) ?? null, status, code }, now);
    // Another gateway (or a redelivery) may have added it first: its record, and its code, are the ones that hold.
    known = await store.sender(channel, account, sender.id);
  }
  // The one message is sent with a key of its own (the front's outbox row), so a redelivery does not send it twice
  // and a crash before it was queued does not lose it.
  if (known?.status === 'pending' && known.code && access.direct === 'pairing')
    return {
      let: false,
      why: `sender ${sender.id} is not paired (pairing code ${known.code})`,
      tell: `${refusal} To be let in, ask the operator to run: switchboard channels pair ${channel} ${known.code}`,
    };
  return { let: false, why: `sender ${sender.id} is not in channels.${channel}.access.users`, tell: refusal };
}
