/**
 * When a schedule is due (docs/schedules.md): its slots, from a cron expression (croner) or an interval. An interval's
 * slots are whole multiples of it since the Unix epoch, so every gateway computes the same slots whenever it started.
 */
import { Cron } from 'croner';
import { intervalMs, type ScheduleConfig } from '../config/schema-schedules.js';

export interface SlotClock {
  /** The first slot strictly after `at`, or undefined when the expression has none left. */
  next(at: number): number | undefined;
  /** Up to `count` slots at or before `at`, newest first. */
  latest(at: number, count: number): number[];
}

export function slotClock(schedule: Pick<ScheduleConfig, 'cron' | 'every' | 'timezone'>): SlotClock {
  if (schedule.every !== undefined) {
    // The schema accepted it, so it is an interval.
    const every = intervalMs(schedule.every)!;
    return {
      next: (at) => (Math.floor(at / every) + 1) * every,
      latest: (at, count) => {
        const newest = Math.floor(at / every) * every;
        return Array.from({ length: count }, (_, index) => newest - index * every);
      },
    };
  }
  const cron = new Cron(schedule.cron!, { paused: true, timezone: schedule.timezone ?? 'UTC' });
  return {
    next: (at) => cron.nextRun(new Date(at))?.getTime(),
    // croner's previous runs are those before the reference (one in the same second counts when it is earlier): a
    // millisecond later takes a slot exactly at `at` in.
    latest: (at, count) => cron.previousRuns(count, new Date(at + 1)).map((date) => date.getTime()),
  };
}

/** At most this many slots are fired on time in one pass (a pass late by the grace of a schedule every second). */
export const MAX_ON_TIME = 100;

/**
 * The slots to fire now, oldest first, among those after `after` (the newest claimed slot, or when the schedule was
 * first seen) and at or before `now`. A slot at most `graceMs` old is on time: it is fired whatever `missed` says (a
 * pass that came late is no gateway down). An older one passed while no gateway ran: `skip` leaves it, `catchup` fires
 * the newest `maxCatchUp` of them.
 */
export function dueSlots(
  clock: SlotClock,
  schedule: Pick<ScheduleConfig, 'missed' | 'maxCatchUp'>,
  after: number,
  now: number,
  graceMs: number,
): number[] {
  const due = clock.latest(now, MAX_ON_TIME + schedule.maxCatchUp).filter((slot) => slot > after);
  const onTime = due.filter((slot) => now - slot <= graceMs).slice(0, MAX_ON_TIME);
  const missed = schedule.missed === 'catchup' ? due.filter((slot) => now - slot > graceMs).slice(0, schedule.maxCatchUp) : [];
  return [...onTime, ...missed].sort((a, b) => a - b);
}
