/**
 * Chat channels (docs/channels.md): what one bot account on a platform does for the channel front (src/channels), and
 * the front's own state. A platform's folder (src/channels/telegram, slack, discord, webhook) turns its library's
 * updates into `ChatMessage`s and sends `ChatSend`s; the front decides who may talk, makes each message a durable input,
 * and delivers replies through the outbox. Times are epoch ms.
 */

/** Where a message was said, and where its answer goes. */
export interface ChatPlace {
  /** The platform's conversation: a Telegram chat, a Slack channel or DM, a Discord channel, a webhook conversation. */
  conversation: string;
  /** `direct`: one person and the bot; `group`: a group, channel or server channel. */
  kind: 'direct' | 'group';
  /** A thread inside the conversation, where the platform has them (Slack's thread_ts, a Telegram forum topic). */
  thread?: string;
}

export interface ChatSender {
  id: string;
  /** A display name, for logs, the pairing list and a group's transcript: anyone can take any name, so it lets no one in. */
  name?: string;
  /**
   * A handle the platform keeps unique and its owner's alone (Telegram's `@username`, Discord's `@username`): what the
   * `@…` entries of `access.users` match. Absent where the platform has none.
   */
  handle?: string;
}

/** A file sent with a message: fetched only when the agent has a workspace to put it in. */
export interface ChatAttachment {
  name: string;
  size?: number;
  mimeType?: string;
  fetch(): Promise<Uint8Array>;
}

/** One message from the platform. */
export interface ChatMessage {
  /** The platform's id of the message, unique within its conversation: the input's idempotency key is built from it. */
  id: string;
  place: ChatPlace;
  sender: ChatSender;
  text: string;
  attachments: ChatAttachment[];
  /** In a group: whether the bot was mentioned or replied to. Always true in a direct chat. */
  addressed: boolean;
}

/** A button pressed under a message the gateway sent (an approval's Approve or Deny). */
export interface ChatAction {
  /** The platform's id of the press, for its acknowledgement. */
  id: string;
  place: ChatPlace;
  sender: ChatSender;
  /** What the button carried (`approve:<approvalId>`). */
  data: string;
}

export interface ChatButton {
  label: string;
  data: string;
}

/** What the front hands an account: each resolves once the message is durable (or refused), so the account may ack it. */
export interface ChatSink {
  message(message: ChatMessage): Promise<void>;
  /** Answers a button press; the text is shown to the presser where the platform can (a Telegram toast). */
  action(action: ChatAction): Promise<string>;
  /** The connection changed: `error` carries what went wrong (a refused token, a lost socket). */
  state(state: 'connecting' | 'connected' | 'stopped' | 'error', error?: string): void;
}

export interface ChatSend {
  place: ChatPlace;
  text: string;
  /** The platform's id of the message this answers, where the platform can quote it. */
  replyTo?: string;
  /** Rows of buttons under the message, where the platform has them. */
  buttons?: ChatButton[][];
  /** Stable for this part of this reply: a platform that dedupes sends (Discord's nonce) is given it. */
  nonce: string;
}

/** An HTTP request to the account's webhook path, its body unparsed (signatures are over the raw bytes). */
export interface ChatWebhookRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array;
}

export interface ChatWebhookAnswer {
  status: number;
  body?: unknown;
}

/** One bot account on one platform, driven by its library. */
export interface ChatAccount {
  readonly channel: string;
  readonly account: string;
  /** The platform's longest message, in characters: longer replies are split. */
  readonly maxLength: number;
  /** Connects (long polling, a socket) and hands each update to the sink, in order; a webhook account only checks its token. */
  start(sink: ChatSink): Promise<void>;
  stop(): Promise<void>;
  /**
   * Sends one message (at most maxLength characters); the platform's id of it. Throws the platform's 429 as a
   * RetryLaterError (src/kit/retry.ts) with its retry-after, and a refusal that no retry mends as a PermanentDeliveryError.
   */
  send(message: ChatSend): Promise<{ id: string }>;
  /** Shows that the bot is working, where the platform can; best effort. */
  typing(place: ChatPlace): Promise<void>;
  /** Accounts that receive by webhook answer their requests here (`/channels/<channel>/<account>`). */
  webhook?(request: ChatWebhookRequest): Promise<ChatWebhookAnswer>;
}

/**
 * Whether a sender may talk to the agents: `allowed` by a pairing (or an operator), `pending` with a pairing code,
 * `refused` told once (not listed), `revoked` shut out by an operator, whatever the lists and modes say.
 */
export type ChatSenderStatus = 'pending' | 'allowed' | 'refused' | 'revoked';

export interface ChatSenderRecord {
  channel: string;
  account: string;
  senderId: string;
  name: string | null;
  status: ChatSenderStatus;
  /** The pairing code while pending (an operator approves it with `switchboard channels pair`). */
  code: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The channel front's own state. */
export interface ChannelStore {
  /** The sender's record, if any. */
  sender(channel: string, account: string, senderId: string): Promise<ChatSenderRecord | undefined>;
  /**
   * Inserts the sender with this status (and code) unless it has a record: true when this call inserted it. The first
   * record holds across redeliveries and gateways, so every caller tells the same pairing code.
   */
  addSender(record: Omit<ChatSenderRecord, 'createdAt' | 'updatedAt'>, now: number): Promise<boolean>;
  /** Compare-and-set from `pending` with this code to `allowed`: the record, or undefined when no pending sender has it. */
  approvePairing(channel: string, code: string, now: number): Promise<ChatSenderRecord | undefined>;
  /** Sets the status of a known sender (an operator's allow or revoke); the record, or undefined when unknown. */
  setSenderStatus(
    channel: string,
    account: string,
    senderId: string,
    status: ChatSenderStatus,
    now: number,
  ): Promise<ChatSenderRecord | undefined>;
  listSenders(filter: { channel?: string; status?: ChatSenderStatus; limit?: number }): Promise<ChatSenderRecord[]>;
  /** The parts of an outbox row sent so far, with each one's platform id (a retried reply sends only the rest). */
  sentParts(outboxId: string): Promise<string[]>;
  /** Records part `index` of the row as sent; a part recorded before keeps its first id. */
  recordPart(outboxId: string, index: number, messageId: string, now: number): Promise<void>;
}
