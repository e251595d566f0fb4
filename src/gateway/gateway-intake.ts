/**
 * How messages come into the gateway: a user's or API caller's send (accept = durable), a send as an
 * agent session (`send --from`, through the checks its sessions_send tool meets), and an A2A peer's
 * message; plus the sessions they open and the tools a session is offered. The gateway extends this.
 */
import { SwitchboardError } from '../core/errors.js';
import { hopRefusal, type Conversation } from '../core/hops.js';
import { a2aSessionKey, boardSessionKey, directSessionKey, isSpawnedKind, parseSessionKey } from '../core/session-key.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  InputRecord,
  NewEvent,
  NewInput,
  Provenance,
  ReplyRoute,
  SessionRecord,
} from '../ports/index.js';
import { GatewayQueries } from './gateway-queries.js';
import type { SendRequest, SendResult } from './send-request.js';
import { PLAN_HEAD, type LaneScheduler } from './lanes.js';
import type { AgentMessaging, AgentSendRequest, AgentSendResult } from './messaging.js';
import { availabilityContext, availableTools } from './run-tools.js';
import { offeredTools } from './tool-offer.js';
import type { GatewayTool } from './tool-contract.js';

export abstract class GatewayIntake extends GatewayQueries {
  abstract readonly config: SwitchboardConfig;
  abstract readonly messaging: AgentMessaging;
  protected abstract readonly clock: Clock;
  protected abstract readonly ids: IdGenerator;
  protected abstract readonly lanes: LaneScheduler;
  /** Every tool an agent's sessions may be offered: the gateway's, and those its extensions give this agent (MCP). */
  protected abstract toolsFor(agentId: string): Promise<readonly GatewayTool[]>;
  abstract get stopping(): boolean;
  /** Appends an event to the journal and tells its followers. */
  protected abstract journalEvent(event: NewEvent): Promise<EventRecord>;
  /** Stores an input produced inside the gateway and wakes its session. */
  protected abstract accept(input: NewInput): Promise<InputRecord>;

  /**
   * The hop budget on a carrier other than sessions_send (ARCHITECTURE.md section 7): a message that another agent's
   * output became, carrying its conversation and hop, is refused past session.agentToAgent.maxHops with the reason in
   * the journal (`loop.stopped`); otherwise its provenance carries the conversation on.
   */
  protected async admitHop(
    carried: Conversation | undefined,
    where: { channel: string; sessionKey: string; from: string },
  ): Promise<Pick<Provenance, 'conversationId' | 'hop'>> {
    if (!carried) return {};
    const maxHops = this.config.session.agentToAgent.maxHops;
    const refusal = hopRefusal(carried, maxHops, `${where.channel} message`);
    if (!refusal) return { conversationId: carried.id, hop: carried.hop };
    await this.journalEvent({
      type: 'loop.stopped',
      sessionKey: where.sessionKey,
      payload: { channel: where.channel, from: where.from, conversationId: carried.id, hop: carried.hop, maxHops, reason: refusal },
    });
    throw new SwitchboardError('HOP_LIMIT_EXCEEDED', refusal, { hop: carried.hop, maxHops });
  }

  protected validateMessage(message: unknown): string {
    if (typeof message !== 'string' || message.trim() === '') {
      throw new SwitchboardError('MESSAGE_EMPTY', 'message is empty; send some text');
    }
    const limit = this.config.gateway.maxMessageChars;
    if (message.length > limit) {
      throw new SwitchboardError(
        'MESSAGE_TOO_LARGE',
        `message is ${message.length} characters; the limit is ${limit} (gateway.maxMessageChars)`,
        {
          length: message.length,
          limit,
        },
      );
    }
    return message;
  }

  /**
   * `send --from`: a message sent as an agent session, through exactly the checks its sessions_send
   * tool would meet (tool policy first, then visibility and the agent-to-agent policy).
   */
  async sendAs(fromSessionKey: string, request: AgentSendRequest): Promise<AgentSendResult> {
    const { sessionKey, agent } = this.agents.resolveTarget(fromSessionKey);
    const refused = (await this.offeredToolsOf(sessionKey)).refusedTools.find((tool) => tool.name === 'sessions_send');
    if (refused) throw new SwitchboardError('TOOL_DENIED', refused.refusal.error, { layer: 'tool' });
    await this.openSession(sessionKey, agent.config.id);
    return this.messaging.send({ sessionKey, agentId: agent.config.id }, request);
  }

  /**
   * A message from an A2A peer: stored in the session of its A2A context (`agent:<id>:a2a:<peer>:<contextId>`,
   * created on first use) with provenance `a2a` and the peer's identity; the idempotency key makes a
   * retried request one input.
   */
  async acceptA2AMessage(request: {
    agentId: string;
    contextId: string;
    taskId: string;
    messageId: string;
    text: string;
    peer: string;
    /** The conversation and hop the message carries when another Switchboard agent sent it (the hop budget). */
    conversation?: Conversation;
  }): Promise<{ sessionKey: string; input: InputRecord }> {
    if (this.stopping) throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send again once it has restarted');
    const text = this.validateMessage(request.text);
    const agent = this.agents.get(request.agentId);
    const sessionKey = a2aSessionKey(agent.config.id, request.peer, request.contextId);
    const hop = await this.admitHop(request.conversation, { channel: 'a2a', sessionKey, from: request.peer });
    await this.store.sessions.ensure({ key: sessionKey, agentId: agent.config.id }, this.clock.now());
    const input = await this.accept({
      id: this.ids.next(),
      sessionKey,
      idempotencyKey: `a2a:${request.taskId}:${request.messageId}`,
      mode: 'followup',
      text,
      provenance: { kind: 'a2a', channel: 'a2a', peer: request.peer, ...hop },
    });
    return { sessionKey, input };
  }

  /**
   * A message from a file mailbox (src/mailbox; `channel` is `mailbox`, or `claude` for a Claude Code team's inboxes):
   * stored in the session of its sender (`agent:<id>:<channel>:direct:<from>`) with provenance `mailbox` and the
   * message's id, and the session's replies routed back to the sender. One input per channel, inbox, sender and
   * message id, however often the file is read. `unsynced`: the caller makes the input durable (`durable()`) before it
   * lets the message go (deletes its file), so that many messages share one sync.
   */
  async acceptMailboxMessage(request: {
    agentId: string;
    inbox: string;
    from: string;
    messageId: string;
    text: string;
    channel?: string;
    unsynced?: boolean;
    /** The conversation and hop the message carries when another agent's output became it (the hop budget). */
    conversation?: Conversation;
  }): Promise<{ sessionKey: string; input: InputRecord; created: boolean }> {
    if (this.stopping)
      throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; the file is read again once it has restarted');
    const text = this.validateMessage(request.text);
    const agent = this.agents.get(request.agentId);
    const channel = request.channel ?? 'mailbox';
    const sessionKey = directSessionKey(agent.config.id, channel, request.from);
    const hop = await this.admitHop(request.conversation, { channel, sessionKey, from: request.from });
    const route: ReplyRoute = { channel, peer: request.from, account: request.inbox };
    // The file stays where it is and is taken when the lane has room: a flood of senders waits in the folder.
    this.refuseWhenLaneFull(sessionKey);
    const channelSetting = this.config.messages.queue.byChannel[channel];
    const mode = (typeof channelSetting === 'object' ? channelSetting.mode : channelSetting) ?? this.config.messages.queue.mode;
    const accepted = await this.store.inputs.enqueueOpening(
      { key: sessionKey, agentId: agent.config.id, route, create: true },
      {
        id: this.ids.next(),
        sessionKey,
        idempotencyKey: `${channel}:${request.inbox}:${request.from}:${request.messageId}`,
        mode,
        text,
        provenance: { kind: 'mailbox', channel, peer: request.from, messageId: request.messageId, ...hop },
      },
      this.clock.now(),
      { planHead: PLAN_HEAD, unsynced: request.unsynced },
    );
    // A direct session is always created on first use.
    if (accepted === 'missing') throw noSuchSession(sessionKey);
    const { input, created } = accepted;
    if (created) this.lanes.wake(sessionKey, accepted.queued);
    return { sessionKey, input, created };
  }

  /**
   * A board task handed to an agent (src/board): stored in the task's session (`agent:<id>:board:<taskId>`,
   * created on first use) with provenance `board`; one input per attempt, whatever the retries.
   */
  async acceptBoardTask(request: {
    agentId: string;
    taskId: string;
    attempt: number;
    text: string;
    /** How many times the task was passed on from agent to agent through the board (the hop budget). */
    conversation?: Conversation;
  }): Promise<{ sessionKey: string; input: InputRecord }> {
    if (this.stopping)
      throw new SwitchboardError(
        'GATEWAY_STOPPING',
        'the gateway is shutting down; the board hands the task over again once it has restarted',
      );
    const agent = this.agents.get(request.agentId);
    const sessionKey = boardSessionKey(agent.config.id, request.taskId);
    const hop = await this.admitHop(request.conversation, { channel: 'board', sessionKey, from: request.taskId });
    await this.store.sessions.ensure({ key: sessionKey, agentId: agent.config.id, label: `board:${request.taskId}` }, this.clock.now());
    const input = await this.accept({
      id: this.ids.next(),
      sessionKey,
      idempotencyKey: `board:${request.taskId}:${request.attempt}`,
      mode: 'followup',
      text: this.validateMessage(request.text),
      provenance: { kind: 'board', channel: 'board', peer: request.taskId, ...hop },
    });
    return { sessionKey, input };
  }

  /** Accept = durable: resolves once the input row is committed. */
  async send(request: SendRequest): Promise<SendResult> {
    if (this.stopping) throw new SwitchboardError('GATEWAY_STOPPING', 'the gateway is shutting down; send again once it has restarted');
    const message = this.validateMessage(request.message);
    const inbound = request.inbound ?? { channel: 'api' };
    const { sessionKey, agent } = this.agents.resolveTarget(request.target ?? this.agents.bind(inbound).config.id, inbound);
    const provenance: Provenance = request.provenance ?? {
      kind: 'user',
      channel: inbound.channel,
      ...(inbound.peer ? { peer: inbound.peer } : {}),
    };
    // A user's message sets where the session's replies go: written before the input, so that the input's
    // durable write covers it (a retried send has the same route); a new session is created with it.
    const route =
      provenance.kind !== 'user'
        ? undefined
        : {
            channel: inbound.channel,
            ...(inbound.peer ? { peer: inbound.peer } : {}),
            ...(inbound.account ? { account: inbound.account } : {}),
          };
    this.refuseWhenLaneFull(sessionKey);
    const channelSetting = this.config.messages.queue.byChannel[inbound.channel];
    const channelMode = typeof channelSetting === 'object' ? channelSetting.mode : channelSetting;
    const mode = request.mode ?? channelMode ?? this.config.messages.queue.mode;
    const id = this.ids.next();
    // A caller's key is scoped to the target session and kept out of the gateway's own key namespace.
    const row = {
      id,
      sessionKey,
      idempotencyKey: request.idempotencyKey === undefined ? `input:${id}` : `client:${sessionKey}:${request.idempotencyKey}`,
      mode,
      text: message,
      provenance,
    };
    const opening = { key: sessionKey, agentId: agent.config.id, route, create: mayCreate(sessionKey) };
    const options = { unsynced: request.waiting, planHead: PLAN_HEAD };
    const accepted = await this.store.inputs.enqueueOpening(opening, row, this.clock.now(), options);
    if (accepted === 'missing') throw noSuchSession(sessionKey);
    const { input, created } = accepted;
    if (created) this.lanes.wake(sessionKey, accepted.queued);
    return { input, sessionKey, created };
  }

  /** A new waiting session is refused while its lane already has `lanes.maxWaiting` of them; a busy one takes more. */
  private refuseWhenLaneFull(sessionKey: string): void {
    if (this.lanes.isLaneFull(sessionKey) && !this.lanes.isBusy(sessionKey)) {
      throw new SwitchboardError(
        'LANE_QUEUE_FULL',
        `the ${this.lanes.laneFor(sessionKey)} lane already has ${this.config.lanes.maxWaiting} sessions waiting (lanes.maxWaiting); retry later`,
        { retryAfterMs: 1000 },
      );
    }
  }

  /** The tools a session is offered now (for a sub-agent: narrowed by its spawn and its role). */
  async toolsOf(sessionKey: string): Promise<GatewayTool[]> {
    return (await this.offeredToolsOf(sessionKey)).tools;
  }

  /**
   * The names of the tools the session's next model step is offered (`subagents show`): its tools after the policy,
   * its spawn and its role (offeredTools), then each tool's availability check, as a run's step asks them. None for a
   * session whose agent is no longer configured.
   */
  async offeredToolNames(sessionKey: string): Promise<string[]> {
    // A session whose agent left the config (a reload) is offered nothing: it runs no more.
    const agentId = parseSessionKey(sessionKey)?.agentId;
    if (agentId === undefined || !this.agents.has(agentId)) return [];
    const agent = this.agents.agentOfSession(sessionKey);
    const { tools, spawned } = await this.offeredToolsOf(sessionKey);
    const session = availabilityContext({ sessionKey, agentId: agent.config.id, workspace: spawned?.workdir ?? agent.workspace });
    const available = await availableTools(tools, session);
    return tools.filter((tool) => available.has(tool.name)).map((tool) => tool.name);
  }

  private async offeredToolsOf(sessionKey: string) {
    const agent = this.agents.agentOfSession(sessionKey);
    const spawned = isSpawnedKind(parseSessionKey(sessionKey)?.kind) ? await this.store.subagents.getBySession(sessionKey) : undefined;
    return { ...offeredTools(agent, this.config, await this.toolsFor(agent.config.id), sessionKey, spawned), spawned };
  }

  /**
   * The session at this address, created on first use for main, direct and group sessions; sub-agent
   * and A2A sessions exist only once their own flow has created them.
   */
  async openSession(sessionKey: string, agentId: string): Promise<SessionRecord> {
    const session = await this.store.sessions.open({ key: sessionKey, agentId, create: mayCreate(sessionKey) }, this.clock.now());
    if (!session) throw noSuchSession(sessionKey);
    return session;
  }
}

/** Main, direct and group sessions are created on first use; the others only by their own flows. */
function mayCreate(sessionKey: string): boolean {
  const kind = parseSessionKey(sessionKey)?.kind;
  return !(isSpawnedKind(kind) || kind === 'a2a' || kind === 'board');
}

function noSuchSession(sessionKey: string): SwitchboardError {
  return new SwitchboardError(
    'SESSION_NOT_FOUND',
    `no session "${sessionKey}" (sub-agent, A2A and board sessions are created by their own flows; list the sessions with "switchboard sessions list" or sessions_list)`,
  );
}
