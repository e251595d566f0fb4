/**
 * How messages come into the gateway (the door's Intake role): a user's or API caller's send (accept = durable), a
 * send as an agent session (`send --from`, through the checks its sessions_send tool meets), and a front's message
 * (A2A, the mailbox, the board); plus the sessions they open. Nothing here knows a front: each builds its own keys.
 */
import { SwitchboardError } from '../../core/errors.js';
import { hopRefusal, type Conversation } from '../../core/hops.js';
import { channelQueue, type QueueMode } from '../../core/queue-mode.js';
import { isSpawnedKind, parseSessionKey, type SessionKind } from '../../core/session-key.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type {
  Accepted,
  AgentSendRequest,
  AgentSendResult,
  FrontInput,
  Intake,
  Opening,
  SendRequest,
  SendResult,
} from '../../ports/gateway.js';
import type { Clock, EventRecord, IdGenerator, NewEvent, Provenance, SessionRecord, Store } from '../../ports/index.js';
import { PLAN_HEAD, type LaneScheduler } from '../runs/lanes.js';
import type { AgentMessaging } from '../messaging/messaging.js';
import type { OfferedTools } from '../tooling/offered-tools.js';
import type { AgentRegistry } from '../agents/registry.js';

/** The kinds of session a front's message may open (or join): the ones whose key the front builds from its own ids. */
const FRONT_KINDS = new Set<SessionKind>(['a2a', 'board', 'direct', 'group']);

export interface IntakeDeps {
  config: SwitchboardConfig;
  store: Store;
  agents: AgentRegistry;
  clock: Clock;
  ids: IdGenerator;
  lanes: LaneScheduler;
  messaging: AgentMessaging;
  offered: OfferedTools;
  stopping(): boolean;
  /** Appends an event to the journal and tells its followers. */
  journalEvent(event: NewEvent): Promise<EventRecord>;
}

export class GatewayIntake implements Intake {
  constructor(private readonly deps: IntakeDeps) {}

  get stopping(): boolean {
    return this.deps.stopping();
  }

  /**
   * The hop budget on a carrier other than sessions_send (ARCHITECTURE.md section 7): a message that another agent's
   * output became, carrying its conversation and hop, is refused past session.agentToAgent.maxHops with the reason in
   * the journal (`loop.stopped`); otherwise its provenance carries the conversation on.
   */
  private async admitHop(
    carried: Conversation | undefined,
    where: { channel: string; sessionKey: string; from: string },
  ): Promise<Pick<Provenance, 'conversationId' | 'hop'>> {
    if (!carried) return {};
    const maxHops = this.deps.config.session.agentToAgent.maxHops;
    const refusal = hopRefusal(carried, maxHops, `${where.channel} message`);
    if (!refusal) return { conversationId: carried.id, hop: carried.hop };
    await this.deps.journalEvent({
      type: 'loop.stopped',
      sessionKey: where.sessionKey,
      payload: { channel: where.channel, from: where.from, conversationId: carried.id, hop: carried.hop, maxHops, reason: refusal },
    });
    throw new SwitchboardError('HOP_LIMIT_EXCEEDED', refusal, { hop: carried.hop, maxHops });
  }

  validateMessage(message: unknown): string {
    if (typeof message !== 'string' || message.trim() === '') {
      throw new SwitchboardError('MESSAGE_EMPTY', 'message is empty; send some text');
    }
    const limit = this.deps.config.gateway.maxMessageChars;
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
    const { sessionKey, agent } = this.deps.agents.resolveTarget(fromSessionKey);
    const refused = (await this.deps.offered.offeredToolsOf(sessionKey)).refusedTools.find((tool) => tool.name === 'sessions_send');
    if (refused) throw new SwitchboardError('TOOL_DENIED', refused.refusal.error, { layer: 'tool' });
    await this.openSession(sessionKey, agent.config.id);
    return this.deps.messaging.send({ sessionKey, agentId: agent.config.id }, request);
  }

  /**
   * A front's message (A2A, the mailbox, the board; each builds its session key, idempotency key and provenance in
   * its own folder): checked (size, hop budget), stored in its session (created on first use), and its session woken.
   * One input per idempotency key, however often the message arrives.
   */
  async accept(input: FrontInput, opening: Opening): Promise<Accepted> {
    if (this.deps.stopping()) throw stoppingError(opening.whenStopping);
    const text = this.validateMessage(input.text);
    const { sessionKey, agentId } = opening;
    this.deps.agents.get(agentId);
    // A front opens sessions of its own kinds only: never a sub-agent's, which only its spawn creates.
    const parsed = parseSessionKey(sessionKey);
    if (parsed?.agentId !== agentId || !FRONT_KINDS.has(parsed.kind))
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `a front's message opens an A2A, board, direct or group session of agent "${agentId}", not "${sessionKey}"`,
      );
    const channel = input.provenance.channel ?? input.provenance.kind;
    const hop = await this.admitHop(input.conversation, { channel, sessionKey, from: input.provenance.peer ?? channel });
    // A sender that can wait (a file stays in its folder) is refused while the lane is full, rather than queued.
    if (opening.refuseWhenLaneFull) this.refuseWhenLaneFull(sessionKey);
    const row = {
      id: this.deps.ids.next(),
      sessionKey,
      idempotencyKey: input.idempotencyKey,
      mode: input.mode ?? this.channelMode(channel),
      text,
      provenance: { ...input.provenance, ...hop },
    };
    const now = this.deps.clock.now();
    if (!opening.route && !opening.unsynced) {
      // No reply route to set and a synced accept (A2A, the board): the session made if missing (with its label), then
      // the input, each in the store's cheapest statement.
      await this.deps.store.sessions.ensure({ key: sessionKey, agentId, label: opening.label }, now);
      const { input: stored, created } = await this.deps.store.inputs.enqueue(row, now);
      if (created) this.deps.lanes.wake(sessionKey);
      return { sessionKey, input: stored, created };
    }
    // The route is written with the input (a retried message sets the same one), and the input may be left unsynced.
    const accepted = await this.deps.store.inputs.enqueueOpening(
      { key: sessionKey, agentId, route: opening.route, create: true },
      row,
      now,
      {
        planHead: PLAN_HEAD,
        unsynced: opening.unsynced,
      },
    );
    if (accepted === 'missing') throw noSuchSession(sessionKey);
    if (accepted.created) this.deps.lanes.wake(sessionKey, accepted.queued);
    return { sessionKey, input: accepted.input, created: accepted.created };
  }

  /** The queue mode configured for a channel (`messages.queue.byChannel`), else the default one. */
  private channelMode(channel: string): QueueMode {
    return channelQueue(this.deps.config.messages.queue, channel).mode;
  }

  /** Accept = durable: resolves once the input row is committed. */
  async send(request: SendRequest): Promise<SendResult> {
    if (this.deps.stopping()) throw stoppingError();
    const message = this.validateMessage(request.message);
    const inbound = request.inbound ?? { channel: 'api' };
    const { sessionKey, agent } = this.deps.agents.resolveTarget(request.target ?? this.deps.agents.bind(inbound).config.id, inbound);
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
    const mode = request.mode ?? this.channelMode(inbound.channel);
    const id = this.deps.ids.next();
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
    const accepted = await this.deps.store.inputs.enqueueOpening(opening, row, this.deps.clock.now(), options);
    if (accepted === 'missing') throw noSuchSession(sessionKey);
    const { input, created } = accepted;
    if (created) this.deps.lanes.wake(sessionKey, accepted.queued);
    return { input, sessionKey, created };
  }

  /** A new waiting session is refused while its lane already has `lanes.maxWaiting` of them; a busy one takes more. */
  private refuseWhenLaneFull(sessionKey: string): void {
    if (this.deps.lanes.isLaneFull(sessionKey) && !this.deps.lanes.isBusy(sessionKey)) {
      throw new SwitchboardError(
        'LANE_QUEUE_FULL',
        `the ${this.deps.lanes.laneFor(sessionKey)} lane already has ${this.deps.config.lanes.maxWaiting} sessions waiting (lanes.maxWaiting); retry later`,
        { retryAfterMs: 1000 },
      );
    }
  }

  /**
   * The session at this address, created on first use for main, direct and group sessions; sub-agent
   * and A2A sessions exist only once their own flow has created them.
   */
  async openSession(sessionKey: string, agentId: string): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.open({ key: sessionKey, agentId, create: mayCreate(sessionKey) }, this.deps.clock.now());
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

/** A message refused while the gateway stops: the sender sends again (or the front takes it up again) after the restart. */
function stoppingError(whatHappens = 'send again once it has restarted'): SwitchboardError {
  return new SwitchboardError('GATEWAY_STOPPING', `the gateway is shutting down; ${whatHappens}`);
}
