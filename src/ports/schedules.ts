/**
 * Schedules' own state (docs/schedules.md): when each schedule was first seen, and its slots as gateways claim and
 * fire them. A slot is one time a schedule is due, in epoch ms; it is fired at most once across restarts and across
 * the gateways sharing the store because its row is claimed before its input is accepted.
 */

/** A schedule's record in the store, as the runner and `GET /v1/schedules` read it. */
export interface ScheduleStateRecord {
  scheduleId: string;
  /** When a gateway first saw the schedule: no slot before it is due. Null when none has yet. */
  since: number | null;
  /** The newest slot claimed (fired or not): the next slots due come after it. */
  lastSlotAt: number | null;
  /** The newest slot fired, with the input it became (a slot given up is not one). */
  lastFired: { slotAt: number; inputId: string; firedAt: number } | null;
  /** Slots claimed whose input is not recorded nor given up (the claimer stopped in between), oldest first. */
  unfired: number[];
}

export interface ScheduleStore {
  /**
   * Insert-or-nothing: the time the schedule was first seen, `at` on the first call for `scheduleId` across the
   * database, the stored time on every later one.
   */
  anchor(scheduleId: string, at: number): Promise<number>;
  /**
   * Moves the schedule's anchor to `at` (inserted when there is none), so that no slot before it is due: the schedule
   * changed, or was switched on again. An anchor already later stays (another gateway took the same change later);
   * answers the stored time.
   */
  reanchor(scheduleId: string, at: number): Promise<number>;
  /**
   * Compare-and-set on the slot's row: true when this call claimed it (so the caller fires it), false when any caller
   * (this gateway or another) claimed it before.
   */
  claim(scheduleId: string, slotAt: number, gatewayId: string, now: number): Promise<boolean>;
  /** Records the slot's input: the first record stands, a later one (a slot fired again after a crash) changes nothing. */
  markFired(scheduleId: string, slotAt: number, inputId: string, now: number): Promise<void>;
  /**
   * Records the claimed slot as given up at `now`, with no input: it is no longer unfired, nor the last fired. A slot
   * already recorded (fired or given up) stays as it is.
   */
  giveUp(scheduleId: string, slotAt: number, now: number): Promise<void>;
  /** Each schedule's state, for the ids asked (every schedule the store knows without). */
  states(scheduleIds?: readonly string[]): Promise<ScheduleStateRecord[]>;
  /**
   * Deletes the schedule's fired slots before `slotBefore` fired before `firedBefore`; answers how many. The caller
   * passes its newest fired slot: no slot before the newest claimed one is due again, so their rows are history.
   */
  prune(scheduleId: string, slotBefore: number, firedBefore: number): Promise<number>;
}
