/** The control API's schedule routes (docs/schedules.md): each configured schedule with its next slot and the slot it fired last. */
import type { ScheduleRunner } from '../schedules/schedule-runner.js';
import type { RouteAdder } from './route.js';

export function scheduleRoutes(schedules: ScheduleRunner, route: RouteAdder): void {
  route('GET', /^\/v1\/schedules$/, async () => ({ schedules: await schedules.list() }));
}
