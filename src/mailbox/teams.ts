/**
 * Teams (docs/teams.md): a lead agent and members (agents of this gateway, or outside processes by their mailbox
 * names) on a shared board. Members take the board's tasks through the board dispatcher's seats (a fenced claim, so
 * two members never hold one task); a member that becomes idle tells the lead once per change, keyed by the attempt
 * it finished, so neither a poll nor a restart tells it twice; the lead can shut the team down, letting members
 * finish or releasing what they hold.
 */
import { SwitchboardError, errorMessage } from '../core/errors.js';
import type { TeamConfig } from '../config/schema-mailbox.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { BoardService } from '../board/board.js';
import type { BoardTaskRecord, Clock, MailboxStore, TeamState } from '../ports/index.js';
import type { TeamSeat } from '../board/dispatcher.js';
import type { Intake } from '../ports/gateway.js';

export interface TeamsDeps {
  config: SwitchboardConfig;
  /** The board's reads (the team's tasks and their attempts); members take tasks through the dispatcher's seats. */
  board: Pick<BoardService, 'task' | 'taskView' | 'tasks'>;
  store: MailboxStore;
  clock: Clock;
  api: () => Pick<Intake, 'send'>;
  /** Has the board's dispatcher look at the seats again now. */
  kick: () => void;
  /** A message from the lead to an outside member through the mailbox (once per key); absent without a mailbox. */
  tellOutside?: (lead: string, member: string, text: string, key: string) => Promise<void>;
  /** Whether an outside member is alive in the mailbox (its registration's process runs). */
  alive?: (name: string) => boolean | undefined;
  log: (message: string) => void;
}

/** An attempt a member ended: what the lead is told about. */
interface Ended {
  taskId: string;
  title: string;
  attempt: number;
  outcome: string;
  text: string | null;
  at: number;
}

export interface TeamMemberStatus {
  name: string;
  kind: 'agent' | 'outside';
  state: 'busy' | 'idle' | 'gone';
  task?: { id: string; title: string; attempt: number };
  last?: Ended;
}

export interface TeamStatus {
  id: string;
  lead: string;
  board: string;
  state: TeamState;
  release: boolean;
  tasks: Record<string, number>;
  members: TeamMemberStatus[];
}

const NOTE_CHARS = 300;

export class Teams {
  /** What each member was last seen doing (`team\nmember`): its task, or null when idle. */
  private readonly seen = new Map<string, { taskId: string; title: string; attempt: number } | null>();

  constructor(private readonly deps: TeamsDeps) {}

  list(): TeamConfig[] {
    return this.deps.config.teams;
  }

  get(id: string): TeamConfig {
    const team = this.list().find((candidate) => candidate.id === id);
    if (!team)
      throw new SwitchboardError(
        'NOT_FOUND',
        `no team "${id}" (teams: ${
          this.list()
            .map((known) => known.id)
            .join(', ') || 'none configured'
        })`,
      );
    return team;
  }

  /** The teams this agent leads. */
  ledBy(agentId: string): TeamConfig[] {
    return this.list().filter((team) => team.lead === agentId);
  }

  private boardOf(team: TeamConfig): string {
    return team.board ?? team.id;
  }

  private isAgent(name: string): boolean {
    return this.deps.config.agents.list.some((agent) => agent.id === name);
  }

  /** Each agent member's seat at its team's board, as the team's state says. */
  async seats(): Promise<TeamSeat[]> {
    const seats: TeamSeat[] = [];
    for (const team of this.list()) {
      const { state, release } = await this.deps.store.teamState(team.id);
      const mode = state === 'active' ? 'work' : state === 'stopping' && release ? 'release' : 'finish';
      for (const member of team.members)
        if (this.isAgent(member)) seats.push({ agentId: member, board: this.boardOf(team), skills: team.skills[member] ?? [], mode });
    }
    return seats;
  }

  /** The tasks members hold now, by member. */
  private async holding(team: TeamConfig): Promise<Map<string, BoardTaskRecord>> {
    const running = await this.deps.board.tasks({ board: this.boardOf(team), states: ['running'], limit: 1000 });
    const held = new Map<string, BoardTaskRecord>();
    for (const member of team.members) {
      const task = running.find((candidate) => candidate.claimWorker === `agent:${member}` || candidate.claimWorker === member);
      if (task) held.set(member, task);
    }
    return held;
  }

  /** After a dispatcher pass: idle notices for members whose state changed, and a stopping team that is done stops. */
  async afterPass(): Promise<void> {
    for (const team of this.list()) {
      const { state } = await this.deps.store.teamState(team.id);
      if (state === 'stopped') continue;
      const held = await this.holding(team);
      // The whole board is read once, and only while some member is seen idle for the first time since the start.
      let board: Map<string, Ended> | undefined;
      for (const member of team.members) {
        const key = `${team.id}\n${member}`;
        const before = this.seen.get(key);
        const task = held.get(member);
        this.seen.set(key, task ? { taskId: task.id, title: task.title, attempt: task.attempts } : null);
        if (task || before === null) continue;
        // Busy before and idle now; or first seen idle since this gateway started (a notice it may have missed is sent,
        // and one already sent is the same input).
        const ended = before ? (await this.lastEnded(team, before.taskId)).get(member) : (board ??= await this.lastEnded(team)).get(member);
        if (ended) await this.notify(team, member, ended);
      }
      if (state === 'stopping' && held.size === 0) {
        const stopped = await this.deps.store.setTeamState(
          team.id,
          ['stopping'],
          { state: 'stopped', release: false },
          this.deps.clock.now(),
        );
        if (stopped)
          await this.tellLead(
            team,
            `team:${team.id}:stopped:${stopped.changedAt}`,
            'team',
            `team ${team.id} has shut down: every member is idle.`,
          );
      }
    }
  }

  /** Each member's newest ended attempt on the team's board (only on `taskId` when given), each task read once. */
  private async lastEnded(team: TeamConfig, taskId?: string): Promise<Map<string, Ended>> {
    const tasks = taskId ? [await this.deps.board.task(taskId)] : await this.deps.board.tasks({ board: this.boardOf(team), limit: 1000 });
    const newest = new Map<string, Ended>();
    for (const task of tasks) {
      if (!task || task.attempts === 0) continue;
      const view = await this.deps.board.taskView(task.id, { comments: 0 });
      for (const attempt of view?.attempts ?? []) {
        const member = team.members.find((name) => attempt.worker === `agent:${name}` || attempt.worker === name);
        if (!member || attempt.endedAt === null || (newest.get(member)?.at ?? -1) >= attempt.endedAt) continue;
        newest.set(member, {
          taskId: task.id,
          title: task.title,
          attempt: attempt.attempt,
          outcome: attempt.outcome ?? 'ended',
          text: attempt.summary ?? attempt.error ?? (attempt.outcome === 'completed' ? view!.task.result : null),
          at: attempt.endedAt,
        });
      }
    }
    return newest;
  }

  private async notify(team: TeamConfig, member: string, ended: Ended): Promise<void> {
    const ready = (await this.deps.board.tasks({ board: this.boardOf(team), states: ['ready'], limit: 1000 })).length;
    const said = ended.text ? `: ${ended.text.slice(0, NOTE_CHARS)}` : '';
    await this.tellLead(
      team,
      `team:${team.id}:idle:${member}:${ended.taskId}:${ended.attempt}`,
      member,
      `team ${team.id}: ${member} is idle. Its task ${ended.taskId} "${ended.title}" (attempt ${ended.attempt}) ended ${ended.outcome}${said}. Ready on board ${this.boardOf(team)}: ${ready}.`,
    );
  }

  private async tellLead(team: TeamConfig, key: string, peer: string, message: string): Promise<void> {
    try {
      await this.deps
        .api()
        .send({ target: team.lead, message, idempotencyKey: key, provenance: { kind: 'system', channel: 'team', peer } });
    } catch (error) {
      this.deps.log(`team ${team.id}: could not tell the lead ${team.lead}: ${errorMessage(error)}`);
    }
  }

  async status(id: string): Promise<TeamStatus> {
    const team = this.get(id);
    const { state, release } = await this.deps.store.teamState(team.id);
    const held = await this.holding(team);
    const tasks: Record<string, number> = {};
    for (const task of await this.deps.board.tasks({ board: this.boardOf(team), limit: 10_000 }))
      tasks[task.state] = (tasks[task.state] ?? 0) + 1;
    const ended = await this.lastEnded(team);
    const members: TeamMemberStatus[] = [];
    for (const name of team.members) {
      const kind = this.isAgent(name) ? 'agent' : 'outside';
      const task = held.get(name);
      const gone = kind === 'outside' && this.deps.alive?.(name) === false;
      const last = ended.get(name);
      members.push({
        name,
        kind,
        state: task ? 'busy' : gone ? 'gone' : 'idle',
        ...(task ? { task: { id: task.id, title: task.title, attempt: task.attempts } } : {}),
        ...(last ? { last } : {}),
      });
    }
    return { id: team.id, lead: team.lead, board: this.boardOf(team), state, release, tasks, members };
  }

  /** No new tasks for the members; with `release`, what they hold is given back now, else they finish it. */
  async shutdown(id: string, release: boolean): Promise<TeamStatus> {
    const team = this.get(id);
    const changed = await this.deps.store.setTeamState(
      team.id,
      ['active', 'stopping'],
      { state: 'stopping', release },
      this.deps.clock.now(),
    );
    this.deps.kick();
    // Outside members are not dispatched to: they are asked, through the mailbox, to finish (or release) and take no more.
    if (changed && this.deps.tellOutside)
      for (const member of team.members.filter((name) => !this.isAgent(name)))
        await this.deps
          .tellOutside(
            team.lead,
            member,
            `team ${team.id} is shutting down: take no new tasks from board ${this.boardOf(team)}, and ${release ? 'release' : 'finish'} the one you hold.`,
            `team:${team.id}:shutdown:${member}:${changed.changedAt}`,
          )
          .catch((error) => this.deps.log(`team ${team.id}: could not tell ${member}: ${errorMessage(error)}`));
    return this.status(id);
  }

  /** A team shut down (or shutting down) works again. */
  async resume(id: string): Promise<TeamStatus> {
    const team = this.get(id);
    await this.deps.store.setTeamState(team.id, ['stopping', 'stopped'], { state: 'active', release: false }, this.deps.clock.now());
    this.deps.kick();
    return this.status(id);
  }
}
