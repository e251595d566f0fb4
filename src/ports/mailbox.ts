/**
 * The file mailbox's own state (docs/mailbox.md, docs/teams.md): reservations of paths held by mailbox names, and each
 * team's state. Times are epoch ms.
 */

export interface MailboxReservationRecord {
  /** The mailbox name holding it. */
  holder: string;
  /** As the holder wrote it (relative to its working folder, or absolute); ending in `/`, a folder and all below. */
  pattern: string;
  /** The pattern made absolute against the holder's folder, keeping a trailing `/`: what overlaps are judged on. */
  absolute: string;
  reason: string | null;
  since: number;
  expiresAt: number;
}

export type ReserveOutcome = { ok: true; reservation: MailboxReservationRecord } | { ok: false; conflict: MailboxReservationRecord };

/** A team works, finishes what its members hold (no new tasks), or has stopped (every member idle). */
export type TeamState = 'active' | 'stopping' | 'stopped';

export interface TeamStateRecord {
  teamId: string;
  state: TeamState;
  /** With `stopping`: release the members' tasks now instead of letting them finish. */
  release: boolean;
  changedAt: number;
}

export interface MailboxStore {
  /**
   * Compare-and-set, one at a time across the database: `holder` gets the pattern unless a live reservation of another
   * holder overlaps it (then that one is the answer and nothing changes). The holder's own reservation of the same
   * pattern is renewed, keeping its `since`.
   */
  reserve(
    request: { holder: string; pattern: string; absolute: string; reason: string | null; ttlMs: number },
    now: number,
  ): Promise<ReserveOutcome>;
  /** The holder's reservations of these patterns (all of them without), released; the patterns released. */
  release(holder: string, patterns: readonly string[] | undefined, now: number): Promise<string[]>;
  /** Live reservations (not expired at `now`), of one holder or all, oldest first. */
  reservations(now: number, holder?: string): Promise<MailboxReservationRecord[]>;
  /** The team's state; `active` for a team never shut down. */
  teamState(teamId: string): Promise<TeamStateRecord>;
  /** Compare-and-set from one of `from`: the new record, or undefined (and nothing changed) when the team was in another state. */
  setTeamState(
    teamId: string,
    from: readonly TeamState[],
    to: { state: TeamState; release: boolean },
    now: number,
  ): Promise<TeamStateRecord | undefined>;
}
