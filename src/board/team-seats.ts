/**
 * Team members' seats at their team's board (docs/teams.md), taken in the dispatcher's pass: a member with a `work`
 * seat and no task of the board takes the next ready one that is unassigned and matches its skills, through the
 * board's fenced claim (so two members never hold one task); a `release` seat gives back what its member holds.
 */
import type { BoardClaim, BoardStore } from '../ports/index.js';
import type { Follower } from './remote-follow.js';

/** With `finish`, the member takes no new task; with `release`, what it holds is given back (not counted as a failure). */
export interface TeamSeat {
  agentId: string;
  board: string;
  /** A task with labels is taken only by a member with one of them; a member without skills takes any. */
  skills: readonly string[];
  mode: 'work' | 'finish' | 'release';
}

/** The dispatcher as the seats use it. */
export interface SeatHost {
  /** The store as the dispatcher writes to it, fenced by its lease. */
  store: BoardStore;
  claimMs: number;
  now(): number;
  stopped(): boolean;
  /** The tasks of `board` the dispatcher follows for `agentId`. */
  holding(agentId: string, board: string): Follower[];
  handToAgent(claim: BoardClaim, agentId: string): Promise<void>;
  giveBack(follower: Follower, why: string): Promise<void>;
}

export function skillsMatch(labels: readonly string[], skills: readonly string[]): boolean {
  return skills.length === 0 || labels.length === 0 || labels.some((label) => skills.includes(label));
}

export async function seatTeams(seats: readonly TeamSeat[], host: SeatHost): Promise<void> {
  for (const seat of seats) {
    if (host.stopped()) return;
    const holding = host.holding(seat.agentId, seat.board);
    if (seat.mode === 'release') {
      for (const follower of holding) await host.giveBack(follower, 'the team was shut down');
      continue;
    }
    if (seat.mode === 'finish' || holding.length > 0) continue;
    for (const task of await host.store.list({ board: seat.board, states: ['ready'], limit: 100 })) {
      if (task.assignee !== null || !skillsMatch(task.labels, seat.skills)) continue;
      const claim = await host.store.claim(
        { worker: `agent:${seat.agentId}`, board: seat.board, taskId: task.id, ttlMs: host.claimMs },
        host.now(),
      );
      if (!claim) continue;
      await host.handToAgent(claim, seat.agentId);
      break;
    }
  }
}
