/**
 * The schedules front as the composition root plugs it in (src/app.ts): the runner, on the door's intake and its own
 * store port, started with the gateway's extensions (after recovery) and stopped with them.
 */
import type { ExtensionParts, GatewayExtension } from '../ports/extensions.js';
import type { Intake } from '../ports/gateway.js';
import type { ScheduleStore } from '../ports/index.js';
import { ScheduleRunner } from './schedule-runner.js';

export interface SchedulesFront {
  runner: ScheduleRunner;
  extension: GatewayExtension;
}

export function schedulesFront(parts: Omit<ExtensionParts, 'enqueueDelivery'>, store: ScheduleStore): SchedulesFront {
  // The door exists once the gateway is built; the runner asks for it only from start() on.
  const intake: Pick<Intake, 'send' | 'stopping'> = {
    send: (request) => parts.api().send(request),
    get stopping() {
      return parts.api().stopping;
    },
  };
  const runner = new ScheduleRunner({
    config: parts.config,
    store,
    intake,
    clock: parts.clock,
    gatewayId: parts.gatewayId,
    log: parts.log,
  });
  return {
    runner,
    extension: { start: async () => runner.start(), stop: () => runner.stop() },
  };
}
