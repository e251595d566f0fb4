/**
 * The chat channel front (docs/channels.md): people's messages from Telegram, Slack, Discord and signed webhooks become
 * inputs, and the agents' replies, announces and approval prompts go back out through the outbox.
 *
 * In: an account hands each message to `message()`, which judges the sender (access.ts), saves attachments, and accepts
 * one input per platform message id (the idempotency key), so a redelivery or a webhook retry is one input. The
 * account acknowledges the update only once this resolves: a crash before that has the platform send it again.
 *
 * Out: a run's reply to a channel session is an outbox row `reply:<channel>` written in its commit; notices (a refusal,
 * a pairing code, an approval prompt) are rows `chat:<channel>`. A row is split to the platform's length limit, and each
 * part is recorded as it is sent, so a retried row sends only the parts not sent yet. A 429 waits its retry-after.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ChannelConfig } from '../config/schema-channels.js';
import { errorMessage, SwitchboardError, toSwitchboardError } from '../core/errors.js';
import { directSessionKey, groupSessionKey, parseSessionKey, segmentOf } from '../core/session-key.js';
import { splitMessage } from '../core/split-message.js';
import { PermanentDeliveryError } from '../kit/retry.js';
import type {
  ChannelStore,
  ChatAccount,
  ChatAction,
  ChatButton,
  ChatMessage,
  ChatPlace,
  ChatSenderRecord,
  ChatSenderStatus,
  ChatSink,
  ChatWebhookAnswer,
  ChatWebhookRequest,
} from '../ports/channels.js';
import type { ExtensionParts, GatewayExtension } from '../ports/extensions.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { ApprovalRecord, OutboxRecord, ReplyRoute } from '../ports/index.js';
import { judge, listed } from './access.js';
import { openAccounts } from './accounts.js';
import { saveAttachments } from './attachments.js';

export const CHANNELS = ['telegram', 'slack', 'discord', 'webhook'] as const;
export type ChannelName = (typeof CHANNELS)[number];

/** What `switchboard channels status` and the console show of one account. */
export interface ChannelAccountStatus {
  channel: string;
  account: string;
  state: 'connecting' | 'connected' | 'stopped' | 'error';
  /** The last connection or send error, with when it happened. */
  error: string | null;
  errorAt: number | null;
  connectedAt: number | null;
  lastMessageAt: number | null;
  lastMessageFrom: string | null;
  /** Since this gateway started: messages taken as inputs, refused, and reply parts sent. */
  received: number;
  refused: number;
  sent: number;
}

/** The door's roles the front uses. */
type Door = Pick<
  GatewayApi,
  | 'accept'
  | 'waitForInput'
  | 'inputRunId'
  | 'runStatus'
  | 'config'
  | 'agents'
  | 'subscribe'
  | 'describeSession'
  | 'listApprovals'
  | 'getApproval'
  | 'decideApproval'
>;

interface ChatPayload {
  route: ReplyRoute;
  text: string | null;
  replyTo?: string | null;
  buttons?: ChatButton[][];
}

/** A typing indicator lasts about five seconds on the platforms that have one: renewed a little sooner. */
const TYPING_EVERY_MS = 4000;
/** A run that takes longer than this stops being shown as typing (its reply still comes). */
const TYPING_FOR_MS = 10 * 60_000;

export class ChannelFront {
  private readonly accounts = new Map<string, ChatAccount>();
  private readonly statuses = new Map<string, ChannelAccountStatus>();
  private unsubscribe?: () => void;
  /** The accounts' starts, under way beside the gateway (startAccount never rejects). */
  private starting: Promise<void>[] = [];
  private stopped = false;

  /** Resolves once the accounts are built (their libraries load in the background from the start). */
  private readonly loaded: Promise<void>;

  constructor(
    /** The channels that have accounts in the config: their outbox kinds are registered at once. */
    private readonly channels: readonly string[],
    accounts: Promise<readonly ChatAccount[]>,
    private readonly store: ChannelStore,
    private readonly door: () => Door,
    private readonly parts: Pick<ExtensionParts, 'clock' | 'enqueueDelivery' | 'log'>,
  ) {
    this.loaded = accounts.then((list) => {
      for (const account of list) this.add(account);
    });
    // Seen by start() (which fails the gateway's start with it); not an unhandled rejection before that.
    this.loaded.catch(() => {});
  }

  private add(account: ChatAccount): void {
    const key = `${account.channel}/${account.account}`;
    this.accounts.set(key, account);
    this.statuses.set(key, {
      channel: account.channel,
      account: account.account,
      state: 'stopped',
      error: null,
      errorAt: null,
      connectedAt: null,
      lastMessageAt: null,
      lastMessageFrom: null,
      received: 0,
      refused: 0,
      sent: 0,
    });
  }

  /** The gateway extension: the outbox kinds of each configured channel, and the accounts' lives. */
  extension(): GatewayExtension {
    const deliver = (row: OutboxRecord) => this.deliver(row);
    return {
      deliveries: Object.fromEntries(
        this.channels.flatMap((channel) => [[`reply:${channel}`, deliver] as const, [`chat:${channel}`, deliver] as const]),
      ),
      start: () => this.start(),
      stop: () => this.stop(),
    };
  }

  status(): ChannelAccountStatus[] {
    return [...this.statuses.values()].map((status) => ({ ...status }));
  }

  account(channel: string, account: string): ChatAccount | undefined {
    return this.accounts.get(`${channel}/${account}`);
  }

  /** Lets in the sender whose pairing code this is (`switchboard channels pair`). */
  async pair(channel: string, code: string): Promise<ChatSenderRecord> {
    const paired = await this.store.approvePairing(channel, code.trim(), this.parts.clock.now());
    if (!paired)
      throw new SwitchboardError(
        'NOT_FOUND',
        `no ${channel} sender waits with pairing code "${code}" (switchboard channels senders --status pending lists the codes; a code is used once)`,
      );
    this.parts.log(`channel ${channel}: sender ${paired.senderId} (${paired.name ?? 'no name'}) on account ${paired.account} paired`);
    return paired;
  }

  /**
   * An operator's decision on one sender (`switchboard channels allow|revoke`; a group as `group:<id>`): `allowed` lets
   * them in as a pairing does (under `direct: "pairing"`), `revoked` shuts them out whatever the lists and modes say; a
   * sender never seen is recorded so.
   */
  async setSender(channel: string, account: string, senderId: string, status: 'allowed' | 'revoked'): Promise<ChatSenderRecord> {
    if (!this.configOf(channel))
      throw new SwitchboardError('NOT_FOUND', `no channel "${channel}" is configured (channels: ${this.channels.join(', ') || 'none'})`);
    const now = this.parts.clock.now();
    const changed =
      (await this.store.setSenderStatus(channel, account, senderId, status, now)) ??
      ((await this.store.addSender({ channel, account, senderId, name: null, status, code: null }, now))
        ? await this.store.sender(channel, account, senderId)
        : await this.store.setSenderStatus(channel, account, senderId, status, now));
    if (!changed) throw new Error(`sender ${senderId} of ${channel} account ${account} could not be recorded`);
    this.parts.log(
      `channel ${channel}: sender ${senderId} on account ${account} ${status === 'allowed' ? 'let in' : 'shut out'} by an operator`,
    );
    return changed;
  }

  senders(filter: { channel?: string; status?: ChatSenderStatus; limit?: number }): Promise<ChatSenderRecord[]> {
    return this.store.listSenders(filter);
  }

  /** An HTTP request to `/channels/<channel>/<account>`: the account's webhook, if it takes them. */
  async webhook(channel: string, account: string, request: ChatWebhookRequest): Promise<ChatWebhookAnswer> {
    await this.loaded;
    const target = this.account(channel, account);
    if (!target?.webhook)
      return { status: 404, body: { error: `no ${channel} account "${account}" takes webhooks here (channels.${channel}.accounts)` } };
    return target.webhook(request);
  }

  async start(): Promise<void> {
    if (this.channels.length === 0) return;
    await this.loaded;
    this.unsubscribe = this.door().subscribe((event) => {
      if (event.type !== 'journal' || event.event.type !== 'approval.requested') return;
      const approvalId = (event.event.payload as { approvalId?: unknown } | null)?.approvalId;
      if (typeof approvalId === 'string') void this.promptApproval(approvalId, event.event.sessionKey ?? '');
    });
    // Requests made while no gateway ran (or before this one subscribed): each is prompted once (its row's key).
    const pending = await this.door().listApprovals({ status: 'pending', limit: 500 });
    for (const approval of pending) void this.promptApproval(approval.id, approval.sessionKey, approval);
    // The accounts connect beside the gateway's start: a platform that does not answer holds up neither the control
    // API nor the other accounts. One that cannot connect (a refused token, the platform down) is reported and left.
    this.starting = [...this.accounts.values()].map((account) => this.startAccount(account));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loaded.catch(() => {});
    this.unsubscribe?.();
    const stopAll = () => Promise.all([...this.accounts.values()].map((account) => account.stop().catch(() => {})));
    await stopAll();
    // A start still under way (a platform slow to answer, each call bounded) may connect after that stop: once it has
    // ended, the accounts are stopped again, so nothing it opened is left running.
    await Promise.all(this.starting);
    await stopAll();
  }

  private async startAccount(account: ChatAccount): Promise<void> {
    const status = this.statusOf(account.channel, account.account);
    status.state = 'connecting';
    try {
      await account.start(this.sinkFor(account));
    } catch (error) {
      this.failed(status, errorMessage(error));
      this.parts.log(`channel ${account.channel} account ${account.account} did not start: ${errorMessage(error)}`);
    }
  }

  private sinkFor(account: ChatAccount): ChatSink {
    const status = this.statusOf(account.channel, account.account);
    return {
      message: (message) => this.message(account, message),
      action: (action) => this.action(account, action),
      state: (state, error) => {
        status.state = state;
        if (state === 'connected') status.connectedAt = this.parts.clock.now();
        if (error) this.failed(status, error);
      },
    };
  }

  private failed(status: ChannelAccountStatus, error: string): void {
    status.state = 'error';
    status.error = error;
    status.errorAt = this.parts.clock.now();
  }

  private statusOf(channel: string, account: string): ChannelAccountStatus {
    const status = this.statuses.get(`${channel}/${account}`);
    if (!status) throw new Error(`no ${channel} account "${account}"`);
    return status;
  }

  private configOf(channel: string): ChannelConfig | undefined {
    return this.door().config.channels[channel as ChannelName];
  }

  /** One platform message: refused (told once, logged, no run) or one input, durable before this resolves. */
  async message(account: ChatAccount, message: ChatMessage): Promise<void> {
    const { channel } = account;
    const status = this.statusOf(channel, account.account);
    status.lastMessageAt = this.parts.clock.now();
    status.lastMessageFrom = message.sender.name ?? message.sender.id;
    const config = this.configOf(channel);
    if (!config) {
      this.parts.log(
        `channel ${channel} account ${account.account}: message ${message.id} dropped: channels.${channel} is no longer in the config`,
      );
      return;
    }
    try {
      await this.take(account, message, config, status);
    } catch (error) {
      // A message that can never be taken (too long, refused by a rule) must not hold up the account: a platform that
      // redelivers until acknowledged would send it forever. Its sender is told why, once; a passing failure (the
      // store, a full lane, the gateway stopping) is thrown, so the platform sends the message again.
      // A value the store cannot keep (PostgreSQL's data exceptions) is the message's own, not a passing failure.
      const failure = toSwitchboardError(error);
      if (failure.httpStatus < 400 || failure.httpStatus >= 500 || failure.httpStatus === 429) throw error;
      this.parts.log(
        `channel ${channel} account ${account.account}: message ${message.id} from ${message.sender.id} not taken: ${failure.message}`,
      );
      // A group is told only when the message spoke to the bot: its chatter is none of the bot's business.
      if (message.place.kind === 'group' && !message.addressed) return;
      const where = `${channel}:${account.account}:${message.place.conversation}:${message.id}`;
      await this.notice(
        routeOf(channel, account.account, message.place),
        `Your message was not taken: ${failure.message}`,
        `failed:${where}`,
      );
    }
  }

  private async take(account: ChatAccount, message: ChatMessage, config: ChannelConfig, status: ChannelAccountStatus): Promise<void> {
    const { channel } = account;
    const route = routeOf(channel, account.account, message.place);
    const where = `${channel}:${account.account}:${message.place.conversation}:${message.id}`;
    const verdict = await judge(this.store, config, account.account, channel, message, this.parts.clock.now());
    if (!verdict.let) {
      status.refused += 1;
      this.parts.log(
        `channel ${channel} account ${account.account}: message ${message.id} from ${message.sender.id} in ${message.place.conversation} refused: ${verdict.why}`,
      );
      const who = message.place.kind === 'group' ? `group:${message.place.conversation}` : message.sender.id;
      if (verdict.tell) await this.notice(route, verdict.tell, `refusal:${channel}:${account.account}:${who}`);
      return;
    }
    const door = this.door();
    const group = message.place.kind === 'group';
    const agent = door.agents.bind({
      channel,
      account: account.account,
      peer: message.sender.id,
      ...(group ? { group: message.place.conversation } : {}),
    });
    const agentId = agent.config.id;
    const sessionKey = sessionKeyOf(agentId, channel, account.account, message);
    const saved = await saveAttachments(message, {
      channel,
      account: account.account,
      workspace: agent.workspace,
      maxBytes: config.maxAttachmentBytes,
    });
    const body = [message.text, ...saved.notes].filter((line) => line.trim() !== '').join('\n');
    // Files alone, none taken: the sender is told why, and nothing runs.
    if (!message.text.trim() && saved.taken === 0) {
      if (saved.refusals.length > 0 && (!group || message.addressed))
        await this.notice(route, saved.refusals.join('\n'), `attachments:${where}`);
      return;
    }
    const chatter = group && config.access.requireMention && !message.addressed;
    const accepted = await door.accept(
      {
        idempotencyKey: where,
        text: group ? `${message.sender.name ?? message.sender.id}: ${body}` : body,
        provenance: {
          kind: 'user',
          channel,
          account: account.account,
          peer: message.place.conversation,
          sender: message.sender.id,
          messageId: message.id,
        },
        // A group's chatter that does not address the bot is kept as context, with no run.
        ...(chatter ? { mode: 'notify' as const } : {}),
      },
      { sessionKey, agentId, route },
    );
    status.received += 1;
    if (accepted.created && config.typing && !chatter) void this.typingWhile(account, message.place, accepted.input.id);
  }

  /** Shows the account typing until the input's run ends (or for TYPING_FOR_MS at most). */
  private async typingWhile(account: ChatAccount, place: ChatPlace, inputId: string): Promise<void> {
    const until = this.parts.clock.now() + TYPING_FOR_MS;
    try {
      while (!this.stopped && this.parts.clock.now() < until) {
        await account.typing(place).catch(() => {});
        const outcome = await this.door().waitForInput(inputId, TYPING_EVERY_MS);
        if (outcome.status !== 'timeout') return;
        // A run that waits (on an approval, a reply, a child) is not working: no typing while it is suspended.
        const runId = await this.door().inputRunId(inputId);
        if (runId && (await this.door().runStatus(runId)) === 'suspended') return;
      }
    } catch {
      // Typing is a courtesy: a wait that fails (the gateway stopping) ends it.
    }
  }

  /** A message of the gateway's own to a conversation, once per key (a refusal, a pairing code, an approval prompt). */
  private async notice(route: ReplyRoute, text: string, key: string, buttons?: ChatButton[][]): Promise<void> {
    await this.parts.enqueueDelivery({
      id: randomUUID(),
      kind: `chat:${route.channel}`,
      target: route.peer ?? '',
      payload: { route, text, ...(buttons ? { buttons } : {}) } satisfies ChatPayload,
      idempotencyKey: key,
    });
  }

  /** Delivers a `reply:<channel>` or `chat:<channel>` row: the parts not sent yet, each recorded as it goes. */
  async deliver(row: OutboxRecord): Promise<void> {
    await this.loaded;
    const payload = row.payload as ChatPayload;
    const { route } = payload;
    const account = this.account(route.channel, route.account ?? '');
    if (!account)
      throw new PermanentDeliveryError(
        `no ${route.channel} account "${route.account ?? ''}" is configured (channels.${route.channel}.accounts): add it back and retry the row with "switchboard outbox retry ${row.id}"`,
      );
    const status = this.statusOf(account.channel, account.account);
    const parts = splitMessage(payload.text ?? '', account.maxLength);
    const sent = await this.store.sentParts(row.id);
    const place: ChatPlace = {
      conversation: route.peer ?? '',
      kind: route.kind ?? 'direct',
      ...(route.thread ? { thread: route.thread } : {}),
    };
    for (let index = sent.length; index < parts.length; index++) {
      try {
        const { id } = await account.send({
          place,
          text: parts[index],
          ...(index === 0 && payload.replyTo ? { replyTo: payload.replyTo } : {}),
          ...(index === parts.length - 1 && payload.buttons ? { buttons: payload.buttons } : {}),
          nonce: `${row.id}:${index}`,
        });
        await this.store.recordPart(row.id, index, id, this.parts.clock.now());
        status.sent += 1;
      } catch (error) {
        status.error = errorMessage(error);
        status.errorAt = this.parts.clock.now();
        throw error;
      }
    }
  }

  /** An approval asked in a channel session: a prompt with Approve and Deny buttons, once per request. */
  private async promptApproval(approvalId: string, sessionKey: string, known?: ApprovalRecord): Promise<void> {
    try {
      const parsed = parseSessionKey(sessionKey);
      if (!parsed?.channel || (parsed.kind !== 'direct' && parsed.kind !== 'group')) return;
      const { session } = await this.door().describeSession(sessionKey);
      const route = session.route;
      if (!route || !this.account(route.channel, route.account ?? '')) return;
      if (parsed.channel !== keyChannel(route.channel, route.account ?? '')) return;
      const approval = known ?? (await this.door().listApprovals({ status: 'pending', sessionKey })).find((one) => one.id === approvalId);
      if (!approval) return;
      await this.notice(route, approvalText(approval), `approval:${approval.id}`, [
        [
          { label: 'Approve', data: `approve:${approval.id}` },
          { label: 'Deny', data: `deny:${approval.id}` },
        ],
      ]);
    } catch (error) {
      this.parts.log(`channel approval prompt for ${approvalId} not sent: ${errorMessage(error)}`);
    }
  }

  /** A button press: an approval answered by someone let in to talk directly (the users list, or paired). */
  async action(account: ChatAccount, action: ChatAction): Promise<string> {
    const match = /^(approve|deny):(.+)$/.exec(action.data);
    if (!match) return 'This button is not one of the gateway’s.';
    const [, verb, approvalId] = match;
    const config = this.configOf(account.channel);
    if (!config) return 'This channel is no longer configured.';
    const { access } = config;
    // Approving is more than talking: `direct: open` lets anyone talk, but only the listed or paired may approve.
    const trusted =
      listed(access.users, action.sender) ||
      (access.direct === 'pairing' && (await this.store.sender(account.channel, account.account, action.sender.id))?.status === 'allowed');
    if (!trusted) {
      this.parts.log(
        `channel ${account.channel}: ${action.sender.id} may not answer approval ${approvalId} (not in access.users, not paired)`,
      );
      return 'Only people let in to talk to the agents may answer approvals.';
    }
    // The press must come from the conversation the request was asked in (its session's, by key: a route can be moved
    // by a message from elsewhere): an id alone answers nothing elsewhere.
    const approval = await this.door()
      .getApproval(approvalId)
      .catch(() => undefined);
    if (!approval || !askedIn(approval.sessionKey, account, action)) {
      this.parts.log(`channel ${account.channel}: a press for approval ${approvalId} came from a conversation it was not asked in`);
      return 'This approval was not asked here.';
    }
    try {
      const decided = await this.door().decideApproval(approvalId, {
        approve: verb === 'approve',
        by: `${account.channel}:${action.sender.id}${action.sender.handle ? ` (${action.sender.handle})` : ''}`,
      });
      return decided.status === 'approved' ? 'Approved.' : 'Denied.';
    } catch (error) {
      if (error instanceof SwitchboardError && (error.code === 'APPROVAL_ANSWERED' || error.code === 'APPROVAL_CLOSED'))
        return error.message;
      throw error;
    }
  }
}

/**
 * The channel as session keys name it: a webhook's ids are its integration's own, so each webhook account has sessions
 * of its own (`webhook-<account>`); the platforms' ids are global to them.
 */
const keyChannel = (channel: string, account: string) => (channel === 'webhook' ? `webhook-${account}` : channel);

/** An id as one session-key segment: %-encoded (a webhook's may hold a `:`), and hashed when long. */
function keySegment(id: string): string {
  const segment = segmentOf(id);
  return segment.length <= 100 ? segment : `h-${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;
}

/** A message's session: the sender's direct session, or the group's (a thread in it is a session of its own). */
export function sessionKeyOf(agentId: string, channel: string, account: string, message: ChatMessage): string {
  const { conversation, thread, kind } = message.place;
  const at = keyChannel(channel, account);
  if (kind === 'direct') return directSessionKey(agentId, at, keySegment(message.sender.id));
  return groupSessionKey(agentId, at, thread ? `${keySegment(conversation)}/${keySegment(thread)}` : keySegment(conversation));
}

/** Whether a button press comes from where the approval was asked: its direct chat's person, or its group. */
function askedIn(sessionKey: string, account: ChatAccount, action: ChatAction): boolean {
  const parsed = parseSessionKey(sessionKey);
  if (parsed?.channel !== keyChannel(account.channel, account.account) || !parsed.peer) return false;
  if (parsed.kind === 'direct') return action.place.kind === 'direct' && parsed.peer === keySegment(action.sender.id);
  const group = keySegment(action.place.conversation);
  return parsed.kind === 'group' && (parsed.peer === group || parsed.peer.startsWith(`${group}/`));
}

export function routeOf(channel: string, account: string, place: ChatPlace): ReplyRoute {
  return { channel, account, peer: place.conversation, kind: place.kind, ...(place.thread ? { thread: place.thread } : {}) };
}

function approvalText(approval: ApprovalRecord): string {
  const args = JSON.stringify(approval.args);
  const shown = args.length > 600 ? `${args.slice(0, 600)}…` : args;
  return approval.kind === 'budget'
    ? `Approval needed: ${approval.agentId} would go over budget ${approval.subject} (${approval.reason}).`
    : `Approval needed: ${approval.agentId} wants to run ${approval.subject} ${shown} (${approval.reason}).`;
}

/** The front as the composition root plugs it in: the accounts the config names, built in the background. */
export function channelsFront(parts: ExtensionParts, store: ChannelStore): ChannelFront {
  const { channels } = parts.config;
  const configured = CHANNELS.filter((channel) => Object.keys(channels[channel]?.accounts ?? {}).length > 0);
  const accounts = configured.length > 0 ? openAccounts(channels, parts.log) : Promise.resolve([]);
  return new ChannelFront(configured, accounts, store, () => parts.api(), parts);
}
