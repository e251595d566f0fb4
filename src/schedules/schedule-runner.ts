/**
 * The schedules front (docs/schedules.md): each configured schedule's due slots become ordinary inputs through the
 * door's intake (Intake.send, as any system message), with provenance `system`, channel `schedule`, peer the schedule's id.
 *
 * A slot fires once across restarts and across the gateways sharing the store: it is claimed in the store first (an
 * insert that one caller wins), then its input is accepted with the idempotency key `schedule:<id>:<slot ISO>`, then
 * the slot is marked fired with the input's id. A gateway that stops between the claim and the mark leaves the slot
 * claimed and unfired; the next pass of any gateway accepts it again, and the intake's dedupe makes that one input.
 */
import type { SwitchboardConfig } from '../config/schema.js';
import type { ScheduleConfig } from '../config/schema-schedules.js';
import { errorMessage } from '../core/errors.js';
import { mainSessionKey, parseSessionKey } from '../core/session-key.js';
import { PeriodicTask } from '../kit/serial-task.js';
import type { Intake } from '../ports/gateway.js';
import type { Clock, ScheduleStore } from '../ports/index.js';
import { dueSlots, type SlotClock, slotClock } from './slots.js';

/** The channel of a schedule's inputs (their provenance), and of `messages.queue.byChannel`. */
export const SCHEDULE_CHANNEL = 'schedule';

/** A schedule as `GET /v1/schedules` shows it: its config, its next slot, and the slot it fired last. */
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

export interface ScheduleRunnerDeps {
  /** The running config: `schedules` is read at each pass, so a reload takes effect at the next one. */
  config: SwitchboardConfig;
  store: ScheduleStore;
  intake: Pick<Intake, 'send' | 'stopping'>;
  /** The store's clock (the database's on PostgreSQL), which every gateway on the store agrees on. */
  clock: Clock;
  gatewayId: string;
  log: (message: string) => void;
  /** How often the schedules are looked at besides the wake-up at each next slot (default 1000 ms). */
  tickMs?: number;
  /** A `skip` schedule's slot reached later than this passed while no gateway ran, and is skipped (default 60 s). */
  graceMs?: number;
  /** How long a schedule with nothing due goes without reading its state again (another gateway's unfired slots). */
  rereadMs?: number;
}

interface Seen {
  /** The schedule's config as last seen: a change (a reload) reads it again at once. */
  fingerprint: string;
  slots: SlotClock;
  since: number;
  nextAt: number | undefined;
  readAt: number;
  /** A slot failed to fire: read again at the next pass. */
  retry: boolean;
}

/** Fired slots' rows are kept this long after firing before they are pruned (a pass of another gateway may still read them). */
const KEEP_FIRED_MS = 3_600_000;

export function scheduleTarget(schedule: ScheduleConfig): { sessionKey: string; agentId: string } {
  if (schedule.session !== undefined) return { sessionKey: schedule.session, agentId: parseSessionKey(schedule.session)!.agentId };
  return { sessionKey: mainSessionKey(schedule.agent!), agentId: schedule.agent! };
}

export function slotKey(scheduleId: string, slotAt: number): string {
  return `schedule:${scheduleId}:${new Date(slotAt).toISOString()}`;
}

export class ScheduleRunner {
  private readonly task: PeriodicTask;
  private readonly seen = new Map<string, Seen>();
  /** Failures already logged (schedule, slot and message), so a slot that keeps failing is logged once. */
  private readonly logged = new Set<string>();
  private readonly graceMs: number;
  private readonly rereadMs: number;

  constructor(private readonly deps: ScheduleRunnerDeps) {
    this.graceMs = deps.graceMs ?? 60_000;
    this.rereadMs = deps.rereadMs ?? 30_000;
    this.task = new PeriodicTask(
      () => this.pass(),
      (error) => deps.log(`schedules: a pass failed: ${errorMessage(error)}`),
      deps.tickMs ?? 1000,
      deps.clock,
    );
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** Settles once a pass that started after the call has ended (tests). */
  settle(): Promise<void> {
    return this.task.settle();
  }

  /** Each configured schedule, with its next slot and the slot it fired last. */
  async list(): Promise<ScheduleView[]> {
    const schedules = this.deps.config.schedules;
    const states = new Map(
      (await this.deps.store.states(schedules.map((schedule) => schedule.id))).map((state) => [state.scheduleId, state]),
    );
    const now = this.deps.clock.now();
    const iso = (at: number | null | undefined) => (at === null || at === undefined ? null : new Date(at).toISOString());
    return schedules.map((schedule) => {
      const state = states.get(schedule.id);
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
    });
  }

  private async pass(): Promise<void> {
    const live = new Set<string>();
    for (const schedule of this.deps.config.schedules) {
      if (this.task.stopped || this.deps.intake.stopping) return;
      live.add(schedule.id);
      if (!schedule.enabled) {
        this.seen.delete(schedule.id);
        continue;
      }
      await this.serve(schedule);
    }
    for (const id of this.seen.keys()) if (!live.has(id)) this.seen.delete(id);
  }

  private async serve(schedule: ScheduleConfig): Promise<void> {
    const now = this.deps.clock.now();
    const fingerprint = JSON.stringify(schedule);
    const known = this.seen.get(schedule.id);
    const current = known?.fingerprint === fingerprint ? known : undefined;
    // Nothing due yet and nothing to take up again: no need to ask the store.
    if (current && !current.retry && current.nextAt !== undefined && now < current.nextAt && now - current.readAt < this.rereadMs) return;
    const slots = current?.slots ?? slotClock(schedule);
    const since = current?.since ?? (await this.deps.store.anchor(schedule.id, now));
    const [state] = await this.deps.store.states([schedule.id]);
    let ok = true;
    // Claimed before and not recorded: a gateway stopped between its claim and its input. Accepting it again is one input.
    for (const slot of state?.unfired ?? []) if (ok) ok = await this.fire(schedule, slot);
    const after = Math.max(since, state?.lastSlotAt ?? Number.NEGATIVE_INFINITY);
    for (const slot of dueSlots(slots, schedule, after, now, this.graceMs)) {
      if (!ok || this.task.stopped) break;
      if (await this.deps.store.claim(schedule.id, slot, this.deps.gatewayId, this.deps.clock.now())) ok = await this.fire(schedule, slot);
    }
    const nextAt = slots.next(now);
    this.seen.set(schedule.id, { fingerprint, slots, since, nextAt, readAt: now, retry: !ok });
    if (nextAt !== undefined) this.task.kickAt(nextAt);
  }

  /** Accepts the slot's input and records it; false (logged once) when the intake refused it, to try again at the next pass. */
  private async fire(schedule: ScheduleConfig, slot: number): Promise<boolean> {
    const key = slotKey(schedule.id, slot);
    try {
      // Intake.send, not accept: a schedule may target an agent's main session, which a front's accept does not open.
      // The intake scopes the key to the session (`client:<session>:schedule:<id>:<slot>`), one input per slot.
      const { sessionKey } = scheduleTarget(schedule);
      const accepted = await this.deps.intake.send({
        target: sessionKey,
        message: schedule.message,
        idempotencyKey: key,
        inbound: { channel: SCHEDULE_CHANNEL },
        provenance: { kind: 'system', channel: SCHEDULE_CHANNEL, peer: schedule.id },
      });
      const now = this.deps.clock.now();
      await this.deps.store.markFired(schedule.id, slot, accepted.input.id, now);
      await this.deps.store.prune(schedule.id, slot, now - KEEP_FIRED_MS);
      return true;
    } catch (error) {
      const message = `schedules: ${key} was not fired, tried again at the next pass: ${errorMessage(error)}`;
      if (!this.logged.has(message)) {
        if (this.logged.size >= 1000) this.logged.clear();
        this.logged.add(message);
        this.deps.log(message);
      }
      return false;
    }
  }
}
