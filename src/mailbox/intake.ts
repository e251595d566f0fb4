/**
 * A file's message as the gateway's intake takes it (the mailbox's and a Claude Code team's inboxes): the session of
 * its sender (`agent:<id>:<channel>:direct:<from>`, replies routed back to the sender), and one input per channel,
 * inbox, sender and message id, however often the file is read.
 */
import type { Conversation } from '../core/hops.js';
import { directSessionKey } from '../core/session-key.js';
import type { FrontInput, Intake, Opening } from '../ports/gateway.js';
import { formatTraceparent, parseTraceparent } from '../kit/trace-context.js';

export interface FileMessage {
  agentId: string;
  inbox: string;
  from: string;
  messageId: string;
  text: string;
  /** `mailbox` (the default), or `claude` for a Claude Code team's inboxes. */
  channel?: string;
  /** The caller makes the input durable (`durable()`) before it deletes the file, so that many messages share one sync. */
  unsynced?: boolean;
  /** The conversation and hop the message carries when another agent's output became it (the hop budget). */
  conversation?: Conversation;
  /** The W3C traceparent the message carries (a Switchboard writer's span); a malformed one starts a trace of its own. */
  trace?: unknown;
}

export function acceptFileMessage(intake: Pick<Intake, 'accept'>, message: FileMessage) {
  const channel = message.channel ?? 'mailbox';
  const input: FrontInput = {
    idempotencyKey: `${channel}:${message.inbox}:${message.from}:${message.messageId}`,
    text: message.text,
    provenance: { kind: 'mailbox', channel, peer: message.from, messageId: message.messageId, ...sender(message.trace) },
    conversation: message.conversation,
  };
  const opening: Opening = {
    sessionKey: directSessionKey(message.agentId, channel, message.from),
    agentId: message.agentId,
    route: { channel, peer: message.from, account: message.inbox },
    // The file stays where it is and is taken when the lane has room: a flood of senders waits in the folder.
    refuseWhenLaneFull: true,
    unsynced: message.unsynced,
    whenStopping: 'the file is read again once it has restarted',
  };
  return intake.accept(input, opening);
}

function sender(trace: unknown): { trace?: string } {
  const context = parseTraceparent(trace);
  return context ? { trace: formatTraceparent(context) } : {};
}
