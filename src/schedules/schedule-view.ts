/**
 * A schedule as `GET /v1/schedules` and `switchboard schedules list` show it (docs/schedules.md#in-the-control-api):
 * its config, its next slot, and what the store says it fired. One builder for the gateway's answer and for the CLI's
 * reading of the config file when no gateway runs (which has no store state to give).
 */
import type { ScheduleConfig } from '../config/schema-schedules.js';
import { mainSessionKey, parseSessionKey } from '../core/session-key.js';
import type { ScheduleStateRecord } from '../ports/index.js';
import { slotClock } from './slots.js';

export interface ScheduleView {
  id: string;
  cron: string | null;
  every: string | number | null;
  timezone: string | null;
  sessionKey: string;
  agentId: string;
  message: string;
  missed: 'skip' | 'catchup';
  maxCatchUp: number;
  enabled: boolean;
  /** The next slot due (ISO), null when disabled or when the expression has none left. */
  nextSlotAt: string | null;
  lastFiredSlotAt: string | null;
  lastInputId: string | null;
  lastFiredAt: string | null;
  /** Slots claimed whose input is not recorded yet (taken up again at the next pass). */
  unfired: number;
}

/** The session a schedule's messages go to, and its agent. */
export function scheduleTarget(schedule: ScheduleConfig): { sessionKey: string; agentId: string } {
  if (schedule.session !== undefined) return { sessionKey: schedule.session, agentId: parseSessionKey(schedule.session)!.agentId };
  return { sessionKey: mainSessionKey(schedule.agent!), agentId: schedule.agent! };
}

const iso = (at: number | null | undefined) => (at === null || at === undefined ? null : new Date(at).toISOString());

/** The schedule's view at `now`; without a store state (no gateway to ask), nothing fired and nothing unfired. */
export function scheduleView(schedule: ScheduleConfig, state: ScheduleStateRecord | undefined, now: number): ScheduleView {
  return {
    id: schedule.id,
    cron: schedule.cron ?? null,
    every: schedule.every ?? null,
    timezone: schedule.timezone ?? null,
    ...scheduleTarget(schedule),
    message: schedule.message,
    missed: schedule.missed,
    maxCatchUp: schedule.maxCatchUp,
    enabled: schedule.enabled,
    nextSlotAt: schedule.enabled ? iso(slotClock(schedule).next(now)) : null,
    lastFiredSlotAt: iso(state?.lastFired?.slotAt),
    lastInputId: state?.lastFired?.inputId ?? null,
    lastFiredAt: iso(state?.lastFired?.firedAt),
    unfired: state?.unfired.length ?? 0,
  };
}
