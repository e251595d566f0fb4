/**
 * Who may talk to the agents through a channel (docs/channels.md, "Who may talk"): a direct chat's sender is let in by
 * the `users` list, by an approved pairing, or by `direct: open`; a group by the `groups` list or `group: open`.
 * Everyone else is told once (a pairing code, or the refusal) and gets no run. "Once" holds across redeliveries and
 * gateways: only the caller whose `addSender` inserted the record sends the message.
 */
import { randomInt } from 'node:crypto';
import type { ChannelConfig } from '../config/schema-channels.js';
import type { ChannelStore, ChatMessage } from '../ports/channels.js';

export type AccessVerdict =
  /** Let in: make it an input. */
  | { let: true }
  /** Not let in. `tell` is the one message the sender gets (absent: told before, or a group message not addressed). */
  | { let: false; why: string; tell?: string };

/** Letters and digits that cannot be misread for one another (no 0/O, 1/I/L). */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

export function pairingCode(): string {
  return Array.from({ length: 8 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
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
    if (access.group === 'allowlist' && !access.groups.includes(group)) {
      const first = await store.addSender({ channel, account, senderId: `group:${group}`, name: null, status: 'refused', code: null }, now);
      return {
        let: false,
        why: `group ${group} is not in channels.${channel}.access.groups`,
        ...(first && message.addressed ? { tell: refusal } : {}),
      };
    }
    return { let: true };
  }
  const sender = message.sender;
  if (access.direct === 'open') return { let: true };
  if (access.users.includes(sender.id) || (sender.name !== undefined && access.users.includes(sender.name))) return { let: true };
  const known = await store.sender(channel, account, sender.id);
  if (known?.status === 'allowed') return { let: true };
  if (known) return { let: false, why: `sender ${sender.id} is ${known.status}` };
  if (access.direct === 'allowlist') {
    const first = await store.addSender(
      { channel, account, senderId: sender.id, name: sender.name ?? null, status: 'refused', code: null },
      now,
    );
    return { let: false, why: `sender ${sender.id} is not in channels.${channel}.access.users`, ...(first ? { tell: refusal } : {}) };
  }
  const code = pairingCode();
  const first = await store.addSender({ channel, account, senderId: sender.id, name: sender.name ?? null, status: 'pending', code }, now);
  return {
    let: false,
    why: first
      ? `sender ${sender.id} is not paired: sent pairing code ${code}`
      : `sender ${sender.id} is not paired: its code was sent before`,
    ...(first
      ? {
          tell: `${refusal} To be let in, ask the operator to run: switchboard channels pair ${channel} ${code}`,
        }
      : {}),
  };
}
