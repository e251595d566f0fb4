/**
 * A team mirrored in Claude Code's files (docs/teams.md, `teams[].claudeDir`), so that Claude Code teammates join it:
 * `teams/<team>/config.json` names the members; `teams/<team>/inboxes/<name>.json` is each one's inbox (an array,
 * rewritten under `<inbox>.lock`); the board's tasks are mirrored as the team's task list (claude-tasks.ts).
 *
 * A message in one of our agents' inboxes becomes an input first and is marked read after, under the lock, on the
 * array as it is then: nothing a teammate wrote meanwhile is lost, and a crash between the two reads it again as the
 * same input (its key is a hash of sender, time and text). Replies are appended to the sender's inbox through the
 * outbox, once.
 *
 * Every name that comes from these files (a sender, a member) becomes a path only if it passes `nameRefusal`; a message
 * from a refused name is marked read, not taken, and logged, and nothing is written for it. No folder, inbox or
 * config.json is opened through a link (claude-files.ts).
 */
import { carried, carriedConversation, type Conversation } from '../core/hops.js';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { agentToAgentAllowed } from '../core/session-access.js';
import type { TeamConfig } from '../config/schema-mailbox.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { Clock, OutboxRecord } from '../ports/index.js';
import type { Intake } from '../ports/gateway.js';
import { acceptFileMessage } from './intake.js';
import { PermanentDeliveryError } from '../kit/retry.js';
import { PeriodicTask } from '../kit/serial-task.js';
import type { BoardService } from '../board/board.js';
import { ClaudeTasks } from './claude-tasks.js';
import { traceHeader } from '../kit/trace-context.js';
import {
  appendToInbox,
  isInboxEntry,
  nameRefusal,
  nameTaken,
  readInbox,
  realDirUnder,
  readJsonFile,
  sameEntry,
  withLock,
  writeJsonFile,
  type ClaudeInboxEntry,
} from './claude-files.js';

export const CLAUDE_REPLY_KIND = 'reply:claude';

interface ClaudeMember {
  agentId: string;
  name: string;
  agentType: string;
  model?: string;
  joinedAt?: number;
  [key: string]: unknown;
}

interface ClaudeTeamConfig {
  name: string;
  description?: string;
  leadAgentId: string;
  members: ClaudeMember[];
  [key: string]: unknown;
}

export interface ClaudeTeamDeps {
  config: SwitchboardConfig;
  board: BoardService;
  api: () => Pick<Intake, 'accept'>;
  /** The local machine's clock, which Claude Code's files are stamped by (a lock's age is its file's mtime). */
  clock: Clock;
  log: (message: string) => void;
}

/** What an idle notice from a Claude Code teammate says, in words for the agent; other texts as they are. */
export function readableText(text: string): string {
  if (!text.startsWith('{')) return text;
  try {
    const value = JSON.parse(text) as { type?: unknown; from?: unknown; idleReason?: unknown };
    if (value.type === 'idle_notification')
      return `${String(value.from ?? 'a teammate')} is idle${value.idleReason ? ` (${String(value.idleReason)})` : ''}.`;
  } catch {}
  return text;
}

export class ClaudeTeam {
  constructor(
    private readonly team: TeamConfig & { claudeDir: string },
    private readonly deps: ClaudeTeamDeps,
  ) {}

  /** Messages logged once each (a refused inbox would otherwise be logged at every pass). */
  private readonly said = new Set<string>();

  /** Whether config.json and our agents' inboxes are in place (published at start, or once Claude Code made its team). */
  private published = false;

  /** The team's folder name in Claude Code's files: `claudeTeam`, else the team's id. */
  get claudeName(): string {
    return this.team.claudeTeam ?? this.team.id;
  }

  get root(): string {
    return join(this.team.claudeDir, 'teams', this.claudeName);
  }

  /**
   * The team's folders, made real (no link on the way) before anything in them is read or written. A team named with
   * `claudeTeam` is Claude Code's (a session's own team): it is joined once Claude Code made it, and never made here.
   */
  private folders(): void {
    if (this.team.claudeTeam) {
      realDirUnder(this.team.claudeDir, 'teams');
      const config = join(this.root, 'config.json');
      if (!nameTaken(config))
        throw new SwitchboardError(
          'NOT_FOUND',
          `no Claude Code team ${this.claudeName} yet (${config} is missing): it is joined once a Claude Code session made it; check teams[].claudeTeam against the session's team`,
        );
    }
    realDirUnder(this.team.claudeDir, 'teams', this.claudeName, 'inboxes');
  }

  /** The inbox of `name`, which must be a mailbox name: a name from a file never becomes a path outside `inboxes/`. */
  inbox(name: string): string {
    const refusal = nameRefusal(name);
    if (refusal) throw new SwitchboardError('INVALID_REQUEST', `team ${this.team.id}: no inbox for ${refusal}`);
    return join(this.root, 'inboxes', `${name}.json`);
  }

  private logOnce(message: string): void {
    if (this.said.has(message)) return;
    this.said.add(message);
    this.deps.log(message);
  }

  /** The team's agents of this gateway: the lead and the members that are agents. */
  ours(): string[] {
    const agents = new Set(this.deps.config.agents.list.map((agent) => agent.id));
    return [this.team.lead, ...this.team.members.filter((member) => agents.has(member))];
  }

  /** config.json with our agents in it (teammates that joined are kept), and an inbox for each of them. */
  async publish(): Promise<void> {
    this.folders();
    const path = join(this.root, 'config.json');
    await withLock(path, this.deps.clock, () => {
      const current = readJsonFile<Partial<ClaudeTeamConfig>>(path, {});
      const members = Array.isArray(current.members) ? [...current.members] : [];
      for (const name of this.ours()) {
        if (members.some((member) => member?.name === name)) continue;
        const agent = this.deps.config.agents.list.find((candidate) => candidate.id === name);
        members.push({
          agentId: `${name}@${this.claudeName}`,
          name,
          agentType: name === this.team.lead ? 'team-lead' : 'switchboard',
          model: agent?.model ?? this.deps.config.agents.defaults.model,
          joinedAt: this.deps.clock.now(),
        });
      }
      // A team Claude Code made keeps its name and lead (its session's `team-lead`); our lead leads only a team we made.
      writeJsonFile(path, {
        ...current,
        name: typeof current.name === 'string' ? current.name : this.claudeName,
        description: current.description ?? `Switchboard team ${this.team.id}`,
        leadAgentId: typeof current.leadAgentId === 'string' ? current.leadAgentId : `${this.team.lead}@${this.claudeName}`,
        members,
      });
    });
    for (const name of this.ours())
      if (!nameTaken(this.inbox(name)))
        await withLock(this.inbox(name), this.deps.clock, () => nameTaken(this.inbox(name)) || writeJsonFile(this.inbox(name), []));
    this.published = true;
  }

  /** Every unread message in our agents' inboxes becomes an input, then is marked read. */
  async ingest(): Promise<void> {
    if (!this.published) await this.publish();
    this.folders();
    // One inbox that cannot be read (a link, not an array) holds up neither the others nor the next pass.
    for (const agentId of this.ours())
      await this.ingestInbox(agentId).catch((error) =>
        this.logOnce(`team ${this.team.id}: the inbox of ${agentId} is not read: ${errorMessage(error)}`),
      );
  }

  private async ingestInbox(agentId: string): Promise<void> {
    const path = this.inbox(agentId);
    const unread = (await withLock(path, this.deps.clock, () => readInbox(path))).filter(
      (entry): entry is ClaudeInboxEntry => isInboxEntry(entry) && entry.read !== true,
    );
    if (unread.length === 0) return;
    const taken: ClaudeInboxEntry[] = [];
    for (const entry of unread) {
      const refusal = nameRefusal(entry.from);
      if (refusal) {
        // Set aside: never an input (its sender would be a session key and a reply's path), marked read so that it
        // holds up nothing, and kept in the file as it is.
        this.deps.log(`team ${this.team.id}: a message to ${agentId} is set aside, marked read, not taken: its sender ${refusal}`);
        taken.push(entry);
        continue;
      }
      try {
        await this.accept(agentId, entry);
        taken.push(entry);
      } catch (error) {
        // Taken again at the next pass: an entry is marked read only once it is an input.
        this.deps.log(`team ${this.team.id}: a message from ${entry.from} to ${agentId} was not taken yet: ${errorMessage(error)}`);
        break;
      }
    }
    if (taken.length === 0) return;
    await withLock(path, this.deps.clock, () => {
      const entries = readInbox(path);
      writeJsonFile(
        path,
        entries.map((entry) =>
          isInboxEntry(entry) && entry.read !== true && taken.some((done) => sameEntry(done, entry)) ? { ...entry, read: true } : entry,
        ),
      );
    });
  }

  private async accept(agentId: string, entry: ClaudeInboxEntry): Promise<void> {
    const policy = this.deps.config.tools.agentToAgent;
    const sender = this.deps.config.agents.list.find((agent) => agent.id === entry.from);
    if (sender && !agentToAgentAllowed(policy, sender.id, agentId)) {
      this.deps.log(
        `team ${this.team.id}: agent "${sender.id}" may not message agent "${agentId}" (tools.agentToAgent); marked read, not taken`,
      );
      return;
    }
    try {
      await acceptFileMessage(this.deps.api(), {
        channel: 'claude',
        agentId,
        inbox: `${this.team.id}/${agentId}`,
        from: entry.from,
        messageId: createHash('sha256').update(`${entry.from}\n${entry.timestamp}\n${entry.text}`).digest('hex').slice(0, 32),
        text: readableText(entry.text),
        conversation: carriedConversation(entry.switchboard),
        trace: (entry.switchboard as { traceparent?: unknown } | undefined)?.traceparent,
      });
    } catch (error) {
      if (!SwitchboardError.isInstance(error) || error.code !== 'HOP_LIMIT_EXCEEDED') throw error;
      // Journalled by the gateway (loop.stopped); marked read so that it does not hold up the messages after it.
      this.deps.log(`team ${this.team.id}: a message from ${entry.from} to ${agentId} was refused, marked read: ${error.message}`);
    }
  }

  /** A reply from one of our agents, appended to the teammate's inbox once (a repeat finds it there). */
  async deliver(row: OutboxRecord, from: string): Promise<void> {
    const payload = row.payload as { route: { peer?: string }; text: string | null; conversation?: Conversation };
    const to = payload.route.peer ?? '';
    const refusal = nameRefusal(to);
    if (refusal) throw new PermanentDeliveryError(`no reply written into Claude Code team ${this.team.id}: the teammate ${refusal}`);
    this.folders();
    const listed = readJsonFile<Partial<ClaudeTeamConfig>>(join(this.root, 'config.json'), {}).members;
    // Only members whose names could be inboxes are members: a refused name is neither written to nor listed.
    const members = (Array.isArray(listed) ? listed : []).flatMap((member) =>
      member && typeof member === 'object' && !nameRefusal(member.name) ? [member.name] : [],
    );
    if (!nameTaken(this.inbox(to)) && !members.includes(to))
      throw new PermanentDeliveryError(
        `no teammate "${to}" in Claude Code team ${this.team.id} (members: ${members.join(', ') || 'none'})`,
      );
    const text = payload.text ?? '';
    await appendToInbox(this.inbox(to), this.deps.clock, {
      from,
      text,
      timestamp: new Date(row.createdAt).toISOString(),
      read: false,
      summary: text.split('\n')[0].slice(0, 60),
      ...(payload.conversation ? { switchboard: { ...carried(payload.conversation), ...traceHeader() } } : {}),
    });
  }
}

/** The mirrors of the teams that have a `claudeDir`: published at start, then read and written every second. */
export class ClaudeTeams {
  readonly mirrors = new Map<string, { team: ClaudeTeam; tasks: ClaudeTasks }>();
  /** The failure last logged for each team, until a pass of it succeeds. */
  private readonly failing = new Map<string, string>();
  private readonly passes: PeriodicTask;

  constructor(private readonly deps: ClaudeTeamDeps) {
    for (const config of deps.config.teams) {
      if (!config.claudeDir) continue;
      const withDir = { ...config, claudeDir: config.claudeDir };
      const team = new ClaudeTeam(withDir, deps);
      this.mirrors.set(config.id, { team, tasks: new ClaudeTasks(withDir, deps.board, () => team.ours(), deps.log, deps.clock) });
    }
    this.passes = new PeriodicTask(
      () => this.pass(),
      (error) => deps.log(`team: Claude Code files: ${errorMessage(error)}`),
      1000,
    );
  }

  async start(): Promise<void> {
    if (this.mirrors.size === 0) return;
    await this.each((mirror) => mirror.team.publish());
    this.passes.start();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  private async pass(): Promise<void> {
    await this.each(async (mirror) => {
      await mirror.team.ingest();
      await mirror.tasks.sync();
    });
  }

  /** A reply whose route names `<team>/<agent>` as the inbox it came in by. */
  async deliver(row: OutboxRecord): Promise<void> {
    const account = (row.payload as { route: { account?: string } }).route.account ?? '';
    const [teamId, agentId] = account.split('/');
    const mirror = this.mirrors.get(teamId);
    if (!mirror) throw new PermanentDeliveryError(`no Claude Code team "${teamId}" (teams[].claudeDir) to reply into`);
    await mirror.team.deliver(row, agentId);
  }

  /**
   * One team's failure (a lock held too long, a file that is not JSON, a folder that is a link) does not hold up the
   * others; it is logged when it starts or changes, not at every pass.
   */
  private async each(step: (mirror: { team: ClaudeTeam; tasks: ClaudeTasks }) => Promise<void>): Promise<void> {
    for (const [id, mirror] of this.mirrors)
      await step(mirror).then(
        () => this.failing.delete(id),
        (error) => {
          const message = `team ${id}: Claude Code files: ${SwitchboardError.isInstance(error) ? error.message : errorMessage(error)}`;
          if (this.failing.get(id) !== message) this.deps.log(message);
          this.failing.set(id, message);
        },
      );
  }
}
