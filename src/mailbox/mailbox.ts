/**
 * The file mailbox (docs/mailbox.md): this gateway's agents in a pi-messenger directory. Each exposed agent has a name,
 * a registration kept current and an inbox whose files become inputs (ingest.ts). What agents write (replies, and
 * mailbox_send) goes through the outbox and lands in the recipient's inbox whole, once per row, under a file name and
 * message id derived from the row's key, so that a delivery repeated after a crash writes the same file again.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { carried, type Conversation } from '../core/hops.js';
import { agentToAgentAllowed } from '../core/session-access.js';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { Clock, MailboxReservationRecord, MailboxStore, NewOutboxRow, OutboxRecord } from '../ports/index.js';
import type { Intake, Waits } from '../ports/gateway.js';
import { acceptFileMessage } from './intake.js';
import { PermanentDeliveryError } from '../kit/retry.js';
import { InboxIngest, MessageRefused } from './ingest.js';
import { isMailboxName, MailboxLayout, mailboxDir, messageFileName, stableMessageId, stableSuffix, type MailMessage } from './layout.js';
import { removeStaleTemporaries, realDirProblem, STALE_TEMPORARY_MS } from './files.js';
import { checkRecipient, participants, postMessage, removeRegistration, writeRegistration, type Participant } from './registry.js';
import { reservationsOverlap } from '../core/reservations.js';
import { traceHeader } from '../kit/trace-context.js';

export const REPLY_KIND = 'reply:mailbox';
export const SEND_KIND = 'mailbox.send';
/** How often the mailbox's folders are swept of temporaries left by a kill (sweepTemporaries). */
const TEMPORARY_SWEEP_MS = 60_000;

export interface MailboxDeps {
  config: SwitchboardConfig;
  dataDir: string | undefined;
  store: MailboxStore;
  /** The store's clock (the database's on PostgreSQL): reservations expire by it, as every gateway reads them. */
  clock: Clock;
  /**
   * The local machine's clock, which the files' times are stamped by: a registration's start and activity, a partly
   * written file's age, a stale temporary's (a database clock ahead or behind would misjudge them).
   */
  fileClock: Clock;
  gatewayId: string;
  api: () => Pick<Intake, 'accept'> & Pick<Waits, 'durable'>;
  enqueue: (row: NewOutboxRow) => Promise<void>;
  log: (message: string) => void;
}

/** What a delivery writes: from one name to another, with the message it answers. */
interface Outgoing {
  from: string;
  to: string;
  text: string;
  replyTo: string | null;
  /** The conversation and hop the writer's run is in, one hop further (absent on rows written before it was kept). */
  conversation?: Conversation;
}

export class MailboxService {
  private layoutCache?: MailboxLayout;
  private readonly ingests = new Map<string, InboxIngest>();
  private readonly startedAt: string;
  private readonly lastActivity = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  /** When the folders were last swept of stale temporaries (sweepTemporaries). */
  private sweptAt = 0;
  private running = false;
  /** The names watched, and their agents, as they were at start (a reload renames nothing until the next start). */
  private watched = new Map<string, string>();

  constructor(private readonly deps: MailboxDeps) {
    this.startedAt = new Date(deps.fileClock.now()).toISOString();
  }

  get policy() {
    return this.deps.config.tools.agentToAgent;
  }

  /** The hop budget every carrier between agents keeps (session.agentToAgent.maxHops). */
  get maxHops(): number {
    return this.deps.config.session.agentToAgent.maxHops;
  }

  get enabled(): boolean {
    return this.deps.config.mailbox.enabled;
  }

  get layout(): MailboxLayout {
    if (!this.layoutCache) {
      if (!this.deps.config.mailbox.dir && !this.deps.dataDir && !process.env.PI_MESSENGER_DIR)
        throw new SwitchboardError('CONFIG_INVALID', 'mailbox.dir: required when the gateway has no data directory');
      this.layoutCache = new MailboxLayout(mailboxDir(this.deps.config, this.deps.dataDir ?? ''));
    }
    return this.layoutCache;
  }

  /** Every name this gateway answers to, and the agent behind it: agents' own names, and names bound with `bindings`. */
  names(): Map<string, string> {
    const names = new Map<string, string>();
    for (const agent of this.deps.config.agents.list)
      if (agent.mailbox?.enabled !== false) names.set(agent.mailbox?.name ?? agent.id, agent.id);
    for (const binding of this.deps.config.bindings)
      if (binding.match.channel === 'mailbox' && binding.match.account && !binding.match.peer)
        names.set(binding.match.account, binding.agentId);
    return names;
  }

  /** The agent's own name in the mailbox, or undefined when it is kept out. */
  nameOf(agentId: string): string | undefined {
    const agent = this.deps.config.agents.list.find((candidate) => candidate.id === agentId);
    if (!agent || agent.mailbox?.enabled === false) return undefined;
    return agent.mailbox?.name ?? agent.id;
  }

  async start(): Promise<void> {
    if (!this.enabled) return;
    this.running = true;
    const options = this.deps.config.mailbox;
    this.watched = this.names();
    for (const name of this.watched.keys()) {
      const ingest = new InboxIngest({
        layout: this.layout,
        name,
        maxFileBytes: options.maxFileBytes,
        partialGraceMs: options.partialGraceMs,
        scanIntervalMs: options.scanIntervalMs,
        clock: this.deps.fileClock,
        accept: (message) => this.accept(name, message),
        durable: () => this.deps.api().durable(),
        log: (_level, message) => this.deps.log(message),
      });
      this.ingests.set(name, ingest);
      // What is in the shared folder never stops the gateway: a registration that cannot be written is logged, and
      // written again at the next interval; an inbox whose folders are not usable disables itself with a log line.
      await this.register(name).catch((error) => this.deps.log(`mailbox: registration of ${name}: ${errorMessage(error)}`));
      await ingest.start();
    }
    this.sweepTemporaries();
    this.timer = setInterval(() => {
      void this.registerAll();
      this.sweepTemporaries();
    }, options.registrationIntervalSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.ingests.values()].map((ingest) => ingest.stop()));
    for (const name of this.ingests.keys()) removeRegistration(this.layout, name, process.pid);
    this.ingests.clear();
  }

  /** Settles once every inbox was looked at after the call (tests, benchmarks). */
  async settle(): Promise<void> {
    await Promise.all([...this.ingests.values()].map((ingest) => ingest.settle()));
  }

  /** A file's message, made an input of the agent behind the inbox's name, after the agent-to-agent policy. */
  private async accept(inbox: string, message: MailMessage): Promise<void> {
    const { config } = this.deps;
    const routed = config.bindings.find(
      (binding) => binding.match.channel === 'mailbox' && binding.match.account === inbox && binding.match.peer === message.from,
    );
    const agentId = routed?.agentId ?? this.watched.get(inbox);
    if (!agentId) throw new MessageRefused(`no agent answers to "${inbox}" any more`, 'binding');
    const sender = this.names().get(message.from);
    if (sender && !agentToAgentAllowed(config.tools.agentToAgent, sender, agentId))
      throw new MessageRefused(
        `agent "${sender}" (as "${message.from}") may not message agent "${agentId}" (tools.agentToAgent)`,
        'agentToAgent',
      );
    try {
      // Not synced on its own: the ingest syncs once for the files it took together, then deletes them.
      await acceptFileMessage(this.deps.api(), {
        agentId,
        inbox,
        from: message.from,
        messageId: message.id,
        text: message.text,
        unsynced: true,
        conversation: message.switchboard && { id: message.switchboard.conversation, hop: message.switchboard.hop },
        trace: message.switchboard?.traceparent,
      });
    } catch (error) {
      if (
        SwitchboardError.isInstance(error) &&
        ['MESSAGE_EMPTY', 'MESSAGE_TOO_LARGE', 'AGENT_NOT_FOUND', 'HOP_LIMIT_EXCEEDED'].includes(error.code)
      )
        throw new MessageRefused(error.message, 'gateway');
      throw error;
    }
    this.lastActivity.set(inbox, new Date(this.deps.fileClock.now()).toISOString());
  }

  /** A message from `from` (a name of this gateway) to `to`, through the outbox; `key` makes a repeated call one message. */
  async send(message: Outgoing, key: string): Promise<{ id: string; to: string }> {
    checkRecipient(this.layout, message.to);
    const idempotencyKey = `mailbox-send:${key}`;
    await this.deps.enqueue({ id: randomUUID(), kind: SEND_KIND, target: message.to, payload: message, idempotencyKey });
    return { id: stableMessageId(idempotencyKey), to: message.to };
  }

  /** An outbox row of either kind, written into the recipient's inbox whole. */
  async deliver(row: OutboxRecord): Promise<void> {
    const outgoing = row.kind === REPLY_KIND ? replyOf(row) : (row.payload as Outgoing);
    try {
      checkRecipient(this.layout, outgoing.to);
    } catch (error) {
      throw new PermanentDeliveryError(errorMessage(error));
    }
    const message: MailMessage = {
      id: stableMessageId(row.idempotencyKey),
      from: outgoing.from,
      to: outgoing.to,
      text: outgoing.text,
      timestamp: new Date(row.createdAt).toISOString(),
      replyTo: outgoing.replyTo,
      ...(outgoing.conversation ? { switchboard: { ...carried(outgoing.conversation), ...traceHeader() } } : {}),
    };
    postMessage(this.layout, message, messageFileName(row.createdAt, stableSuffix(row.idempotencyKey)));
    this.lastActivity.set(outgoing.from, new Date(this.deps.fileClock.now()).toISOString());
  }

  /** Everyone in the directory with their state; this gateway's names are alive while it runs. */
  list(): Participant[] {
    return participants(this.layout);
  }

  /**
   * Removes, at start and then at most once a minute, the temporaries that deliveries and registrations cut short by a
   * kill left behind (`.<file>.<uuid>.tmp`, older than STALE_TEMPORARY_MS) in every inbox, the registry and our
   * `.rejected/` folders: the write was repeated under a new temporary since, or the row went dead. Only real folders
   * are looked into, and only our own temporaries are removed.
   */
  private sweepTemporaries(): void {
    const now = this.deps.fileClock.now();
    if (now - this.sweptAt < TEMPORARY_SWEEP_MS) return;
    this.sweptAt = now;
    const { layout } = this;
    let inboxes: string[] = [];
    try {
      inboxes = readdirSync(layout.inboxes).filter(isMailboxName);
    } catch {
      // No inbox yet.
    }
    const folders = [
      layout.registry,
      ...inboxes.map((name) => layout.inbox(name)),
      ...[...this.ingests.keys()].map((name) => layout.rejected(name)),
    ];
    for (const folder of folders) {
      if (realDirProblem(layout.root, folder)) continue;
      for (const name of removeStaleTemporaries(folder, STALE_TEMPORARY_MS, now))
        this.deps.log(`mailbox: removed ${join(folder, name)}, a temporary file left by a write that was cut short`);
    }
  }

  private async registerAll(): Promise<void> {
    for (const name of this.ingests.keys())
      await this.register(name).catch((error) => this.deps.log(`mailbox: registration of ${name}: ${errorMessage(error)}`));
  }

  /** The name's registration as pi-messenger reads it, with its live reservations. */
  private async register(name: string): Promise<void> {
    const agentId = this.watched.get(name)!;
    const agent = this.deps.config.agents.list.find((candidate) => candidate.id === agentId);
    const reservations = await this.deps.store.reservations(this.deps.clock.now(), name);
    writeRegistration(this.layout, {
      name,
      pid: process.pid,
      sessionId: `${this.deps.gatewayId}:${agentId}`,
      // The folder its relative reservations are read against, here and by every peer.
      cwd: this.folderOf(agentId),
      model: agent?.model ?? this.deps.config.agents.defaults.model ?? 'unknown',
      startedAt: this.startedAt,
      reservations: reservations.map((reservation) => ({
        pattern: reservation.pattern,
        ...(reservation.reason ? { reason: reservation.reason } : {}),
        since: new Date(reservation.since).toISOString(),
      })),
      isHuman: false,
      session: { toolCalls: 0, tokens: 0, filesModified: [] },
      activity: { lastActivityAt: this.lastActivity.get(name) ?? this.startedAt },
      statusMessage: `Switchboard agent ${agentId}`,
    });
  }

  /** The holder's folder, as the filesystem names it, against which its relative patterns are read. */
  private folderOf(agentId: string): string {
    const agent = this.deps.config.agents.list.find((candidate) => candidate.id === agentId);
    const folder = agent?.workspace ?? this.deps.config.agents.defaults.workspace ?? process.cwd();
    try {
      return realpathSync(folder);
    } catch {
      return resolve(folder);
    }
  }

  /** Reserves each pattern for the agent's name, or answers the first conflict (and then reserves none of them). */
  async reserve(
    agentId: string,
    patterns: readonly string[],
    reason: string | undefined,
    ttlSeconds: number | undefined,
  ): Promise<
    { reserved: MailboxReservationRecord[] } | { conflict: { pattern: string; holder: string; heldPattern: string; reason: string | null } }
  > {
    const holder = this.requireName(agentId);
    const ttlMs = (ttlSeconds ?? this.deps.config.mailbox.reservationTtlSeconds) * 1000;
    const folder = this.folderOf(agentId);
    for (const pattern of patterns) {
      const outside = this.outsideConflict(holder, absolutePattern(folder, pattern));
      if (outside) return { conflict: { pattern, holder: outside.holder, heldPattern: outside.pattern, reason: outside.reason ?? null } };
    }
    const reserved: MailboxReservationRecord[] = [];
    const taken: string[] = [];
    for (const pattern of patterns) {
      const now = this.deps.clock.now();
      const outcome = await this.deps.store.reserve(
        { holder, pattern, absolute: absolutePattern(folder, pattern), reason: reason ?? null, ttlMs },
        now,
      );
      if (!outcome.ok) {
        // Only what this call took is given back: a pattern the holder held before keeps its reservation.
        await this.deps.store.release(holder, taken, this.deps.clock.now());
        return {
          conflict: { pattern, holder: outcome.conflict.holder, heldPattern: outcome.conflict.pattern, reason: outcome.conflict.reason },
        };
      }
      reserved.push(outcome.reservation);
      if (outcome.reservation.since === now) taken.push(pattern);
    }
    await this.register(holder).catch(() => {});
    return { reserved };
  }

  async release(agentId: string, patterns: readonly string[] | undefined): Promise<string[]> {
    const holder = this.requireName(agentId);
    const released = await this.deps.store.release(holder, patterns, this.deps.clock.now());
    await this.register(holder).catch(() => {});
    return released;
  }

  /** Why the agent may not write this absolute path now: another name holds it, here or in another process's registration. */
  async writeRefusal(agentId: string, path: string): Promise<string | undefined> {
    if (!this.enabled) return undefined;
    const own = this.nameOf(agentId);
    const held = (await this.deps.store.reservations(this.deps.clock.now())).find(
      (reservation) => reservation.holder !== own && reservationsOverlap(path, reservation.absolute),
    );
    const holder = held
      ? { holder: held.holder, pattern: held.pattern, reason: held.reason ?? undefined }
      : this.outsideConflict(own, path);
    if (!holder) return undefined;
    return `"${path}" is reserved by ${holder.holder} (${holder.pattern}${holder.reason ? `: ${holder.reason}` : ''}); ask them with mailbox_send, or wait until they release it`;
  }

  /** A reservation of another live process (a pi-messenger peer) in its registration that overlaps `absolute`. */
  private outsideConflict(own: string | undefined, absolute: string): { holder: string; pattern: string; reason?: string } | undefined {
    const ours = this.names();
    for (const participant of this.list()) {
      if (participant.name === own || ours.has(participant.name) || !participant.alive || participant.registration?.pid === process.pid)
        continue;
      const registration = participant.registration!;
      for (const reservation of registration.reservations ?? []) {
        if (reservationsOverlap(absolute, absolutePattern(registration.cwd, reservation.pattern)))
          return { holder: participant.name, pattern: reservation.pattern, reason: reservation.reason };
      }
    }
    return undefined;
  }

  private requireName(agentId: string): string {
    const name = this.nameOf(agentId);
    if (!this.enabled || !name)
      throw new SwitchboardError(
        'TOOL_DENIED',
        `agent "${agentId}" is not in the mailbox (mailbox.enabled, agents.list[].mailbox.enabled)`,
        {
          layer: 'tool',
        },
      );
    return name;
  }
}

function replyOf(row: OutboxRecord): Outgoing {
  const payload = row.payload as {
    route: { peer?: string; account?: string };
    text: string | null;
    replyTo: string | null;
    conversation?: Conversation;
  };
  return {
    from: payload.route.account ?? '',
    to: payload.route.peer ?? '',
    text: payload.text ?? '',
    replyTo: payload.replyTo,
    conversation: payload.conversation,
  };
}

/** A pattern made absolute against a folder, keeping a trailing `/` (it reserves a folder). */
export function absolutePattern(folder: string, pattern: string): string {
  const made = isAbsolute(pattern) ? resolve(pattern) : resolve(folder, pattern);
  return pattern.endsWith('/') && !made.endsWith('/') ? `${made}/` : made;
}
