/**
 * The schedules front (docs/schedules.md): each configured schedule's due slots become ordinary inputs through the
 * door's intake (Intake.send, as any system message), with provenance `system`, channel `schedule`, peer the schedule's id.
 *
 * A slot fires once across restarts and across the gateways sharing the store: it is claimed in the store first (an
 * insert that one caller wins), then its input is accepted with the idempotency key `schedule:<id>:<slot ISO>`, then
 * the slot is marked fired with the input's id. A gateway that stops between the claim and the mark leaves the slot
 * claimed and unfired; the next pass of any gateway accepts it again, and the intake's dedupe makes that one input.
 * A slot is given up instead (recorded with no input, logged once) when the intake refuses it for good, or, with
 * `missed: "skip"`, when a stopped gateway left it and it is past the grace at the next one's first look.
 *
 * A schedule changed (its definition) or switched on again while a gateway runs starts over: its anchor moves to that
 * moment, so that slots which were never due are not caught up.
 */
import type { SwitchboardConfig } from '../config/schema.js';
import type { ScheduleConfig } from '../config/schema-schedules.js';
import { errorMessage, SwitchboardError } from '../core/errors.js';
import { PeriodicTask } from '../kit/serial-task.js';
import type { Intake } from '../ports/gateway.js';
import type { Clock, ScheduleStore } from '../ports/index.js';
import { type ScheduleView, scheduleTarget, scheduleView } from './schedule-view.js';
import { dueSlots, type SlotClock, slotClock } from './slots.js';

/** The channel of a schedule's inputs (their provenance), and of `messages.queue.byChannel`. */
export const SCHEDULE_CHANNEL = 'schedule';

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
  /** Its definition as last seen (scheduleDefinition): a change re-anchors it. */
  definition: string;
  slots: SlotClock;
  since: number;
  nextAt: number | undefined;
  readAt: number;
  /** A slot failed to fire: read again at the next pass. */
  retry: boolean;
}

/** Fired slots' rows are kept this long after firing before they are pruned (a pass of another gateway may still read them). */
const KEEP_FIRED_MS = 3_600_000;

/**
 * The longest wait a timer takes (2^31-1 ms, 24.8 days): a longer one fires at once, with a TimeoutOverflowWarning.
 * A slot further off than that gets no wake-up of its own; the passes that read the schedule again come to it.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What decides a schedule's slots and where they go: a change to it starts the schedule over (docs/schedules.md#changing-schedules). */
function scheduleDefinition(schedule: ScheduleConfig): string {
  const { cron, every, timezone } = schedule;
  return JSON.stringify({ cron, every, timezone, target: scheduleTarget(schedule).sessionKey });
}

/** A refusal that sending again will not change: a 4xx of the intake other than 429 (a full lane, a rate). */
function refusedForGood(error: unknown): error is SwitchboardError {
  return SwitchboardError.isInstance(error) && error.httpStatus >= 400 && error.httpStatus < 500 && error.httpStatus !== 429;
}

export function slotKey(scheduleId: string, slotAt: number): string {
  return `schedule:${scheduleId}:${new Date(slotAt).toISOString()}`;
}

export class ScheduleRunner {
  private readonly task: PeriodicTask;
  private readonly seen = new Map<string, Seen>();
  /** Schedules this gateway saw disabled or removed: switched on again, they start over (their time off is no time missed). */
  private readonly off = new Set<string>();
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
    return schedules.map((schedule) => scheduleView(schedule, states.get(schedule.id), now));
  }

  private async pass(): Promise<void> {
    const live = new Set<string>();
    for (const schedule of this.deps.config.schedules) {
      if (this.task.stopped || this.deps.intake.stopping) return;
      live.add(schedule.id);
      if (!schedule.enabled) {
        this.switchOff(schedule.id);
        continue;
      }
      await this.serve(schedule);
    }
    for (const id of this.seen.keys()) if (!live.has(id)) this.switchOff(id);
  }

  private switchOff(scheduleId: string): void {
    this.seen.delete(scheduleId);
    this.off.add(scheduleId);
  }

  private async serve(schedule: ScheduleConfig): Promise<void> {
    const now = this.deps.clock.now();
    const fingerprint = JSON.stringify(schedule);
    const definition = scheduleDefinition(schedule);
    const known = this.seen.get(schedule.id);
    const current = known?.fingerprint === fingerprint ? known : undefined;
    // Nothing due yet and nothing to take up again: no need to ask the store.
    if (current && !current.retry && current.nextAt !== undefined && now < current.nextAt && now - current.readAt < this.rereadMs) return;
    const slots = current?.slots ?? slotClock(schedule);
    // Changed, or switched on again, while this gateway ran: it starts over now. Its newest slot claimed may be of the
    // old definition, and the slots between it and now were never due (a gateway ran): none of them is missed.
    const restart = (known !== undefined && known.definition !== definition) || this.off.has(schedule.id);
    const since = restart
      ? await this.deps.store.reanchor(schedule.id, now)
      : (known?.since ?? (await this.deps.store.anchor(schedule.id, now)));
    this.off.delete(schedule.id);
    const [state] = await this.deps.store.states([schedule.id]);
    let ok = true;
    // Claimed before and not recorded: a gateway stopped between its claim and its input. Accepting it again is one
    // input. With `skip`, one already past the grace when this gateway first reads the schedule was left by a gateway
    // that stopped then: it passed while none ran, and is given up (an input it may have become stays).
    for (const slot of state?.unfired ?? []) {
      if (!ok) break;
      const leftBehind = known === undefined && now - slot > this.graceMs;
      if (schedule.missed === 'skip' && leftBehind)
        await this.giveUp(schedule, slot, 'claimed by a gateway that stopped before sending it, and past the grace (missed: "skip")');
      else ok = await this.fire(schedule, slot);
    }
    const after = Math.max(since, state?.lastSlotAt ?? Number.NEGATIVE_INFINITY);
    for (const slot of dueSlots(slots, schedule, after, now, this.graceMs)) {
      if (!ok || this.task.stopped) break;
      if (await this.deps.store.claim(schedule.id, slot, this.deps.gatewayId, this.deps.clock.now())) ok = await this.fire(schedule, slot);
    }
    const nextAt = slots.next(now);
    this.seen.set(schedule.id, { fingerprint, definition, slots, since, nextAt, readAt: now, retry: !ok });
    if (nextAt !== undefined && nextAt - now <= MAX_TIMER_MS) this.task.kickAt(nextAt);
  }

  /**
   * Accepts the slot's input and records it. False (logged once) when the intake refused it for now, to try again at
   * the next pass; a refusal for good (a 4xx) gives the slot up, so that it holds back none after it.
   */
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
      if (refusedForGood(error)) {
        await this.giveUp(schedule, slot, `the intake refused it (${error.code}): ${error.message}`);
        return true;
      }
      this.logOnce(`schedules: ${key} was not fired, tried again at the next pass: ${errorMessage(error)}`);
      return false;
    }
  }

  private async giveUp(schedule: ScheduleConfig, slot: number, why: string): Promise<void> {
    await this.deps.store.giveUp(schedule.id, slot, this.deps.clock.now());
    this.logOnce(`schedules: ${slotKey(schedule.id, slot)} was given up, not sent: ${why}`);
  }

  private logOnce(message: string): void {
    if (this.logged.has(message)) return;
    if (this.logged.size >= 1000) this.logged.clear();
    this.logged.add(message);
    this.deps.log(message);
  }
}
