/**
 * The gateway's watchdog: every `watchdog.intervalMs` it archives the sub-agents due for it and looks for stalled
 * lanes (queued inputs and no active run), waking each one again and journalling `lane.stalled`.
 */
import { errorMessage } from '../../core/errors.js';
import type { EventRecord, NewEvent } from '../../ports/index.js';
import type { LaneScheduler } from '../runs/lanes.js';
import type { GatewayLog, StalledLane } from '../../ports/gateway.js';
import type { SubagentLifecycle } from '../subagents/subagent-lifecycle.js';

export interface WatchdogDeps {
  lanes: Pick<LaneScheduler, 'findAndRepairStalls'>;
  subagents: Pick<SubagentLifecycle, 'archive'>;
  journalEvent: (event: NewEvent) => Promise<EventRecord>;
  log: GatewayLog;
}

export class Watchdog {
  /** The lanes the last look found stalled (`status` shows them). */
  lastStalls: StalledLane[] = [];
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: WatchdogDeps) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.check(), intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    const { lanes, subagents, journalEvent, log } = this.deps;
    await subagents.archive().catch((error) => log('error', `sub-agent archive: ${errorMessage(error)}`));
    try {
      this.lastStalls = await lanes.findAndRepairStalls();
      for (const stall of this.lastStalls) {
        log('warn', 'lane stalled: queued inputs and no active run; woken again', { ...stall });
        await journalEvent({ type: 'lane.stalled', sessionKey: stall.sessionKey, payload: { ...stall } });
      }
    } catch (error) {
      log('error', `watchdog: ${String(error)}`);
    }
  }
}
