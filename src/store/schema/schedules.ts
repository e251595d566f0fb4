/** Schedules' table types (ports/schedules.ts). Times are integer milliseconds. */

/** When a gateway first saw a schedule: no slot before it is due. */
export interface ScheduleAnchorsTable {
  schedule_id: string;
  since: number | string;
}

/** One slot of one schedule: claimed (inserted) once across the database, then fired with its input. */
export interface ScheduleSlotsTable {
  schedule_id: string;
  slot_at: number | string;
  claimed_by: string;
  claimed_at: number | string;
  input_id: string | null;
  fired_at: number | string | null;
}
