/**
 * The scheduler: a FIFO of inputs per session with at most one active run, held by a lease with a
 * fencing epoch, and global lanes that cap how many runs go at once (ARCHITECTURE.md section 5).
 */
import { channelQueue } from '../../core/queue-mode.js';
import { decideOnArrival, planNextRun } from '../../core/queue-mode.js';
import type { AbortReason } from '../../core/run-status.js';
import { parseSessionKey } from '../../core/session-key.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import type { Clock, InputRecord, Store } from '../../ports/index.js';
import type { LaneName, StalledLane } from '../../ports/gateway.js';
import { waitScope } from '../../kit/wait-until.js';
import { outsideTrace } from '../../kit/trace-context.js';

/** Queued inputs of a session read from its head to plan the next run; those that act from anywhere are read beyond it. */
export const PLAN_HEAD = 64;

/** nested: runs that only answer other agents (sessions_send), so a waiting requester cannot starve them. */

/**
 * What the scheduler hands the runner: the run must end (commit or give up) before it resolves. The
 * runner takes the session's lease with the run's start, in one transaction.
 */
export interface RunSlot {
  sessionKey: string;
  inputIds: string[];
  controller: AbortController;
  /** Set by the runner once it holds the session's lease: the lease's fencing epoch. */
  epoch?: number;
  /** Set by the runner when another owner holds the session's lease: the scheduler looks again later. */
  leasedElsewhere?: boolean;
  /** Set by the runner once the run row exists, so cancel-by-id can find it. */
  runId?: string;
  /** A cancel or an interrupt asked of the run, even once it was aborted for another reason (it suspends: it is told then). */
  asked?: 'cancel' | 'interrupt';
  /** The suspended run this slot resumes (its inputs are `inputIds`), instead of starting a new one. */
  resumeRunId?: string;
  /** Set by the runner when its commit released the lease, which then needs no write of its own. */
  leaseReleased?: boolean;
  /** Set by the runner from its commit: whether the session still held queued inputs (CommittedRun.queued). */
  queuedAfter?: boolean;
}

export type RunSessionFn = (slot: RunSlot) => Promise<void>;

export interface LaneOptions {
  owner: string;
  collectDebounceMs: number;
  /** A channel's collect window: its own under `messages.queue.byChannel`, else `collectDebounceMs` (core/queue-mode.ts channelQueue). */
  channelDebounceMs?: (channel: string | undefined) => number;
  leaseTtlMs: number;
  maxConcurrent: Record<LaneName, number>;
  maxWaiting: number;
  stallMs: number;
}

/** The lane settings a config gives (queue windows, lane sizes, the watchdog's stall time). */
export function laneOptions(config: SwitchboardConfig, owner: string, leaseTtlMs: number): LaneOptions {
  return {
    owner,
    // Read at each use: a config reload replaces config.messages.
    get collectDebounceMs() {
      return config.messages.queue.debounceMs;
    },
    channelDebounceMs: (channel) => channelQueue(config.messages.queue, channel).debounceMs,
    leaseTtlMs,
    maxConcurrent: {
      main: config.lanes.main.maxConcurrent,
      subagent: config.agents.defaults.subagents.maxConcurrent,
      nested: config.lanes.nested.maxConcurrent,
      acp: config.acp.maxConcurrentSessions,
    },
    maxWaiting: config.lanes.maxWaiting,
    stallMs: config.watchdog.stallMs,
  };
}

class Lane {
  active = 0;
  readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  acquire(): Promise<void> | undefined {
    if (this.active < this.max) {
      this.active += 1;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active -= 1;
  }
}

interface SessionState {
  active?: RunSlot;
  pumping: boolean;
  dirty: boolean;
  waitingForSlot: boolean;
  timer?: NodeJS.Timeout;
  /** Wakes so far: a run whose commit saw no queued input looks at the queue again only if one came after. */
  wakes: number;
}

export class LaneScheduler {
  private readonly sessions = new Map<string, SessionState>();
  private readonly lanes: Record<LaneName, Lane>;
  private readonly running = new Set<Promise<void>>();
  private stopping = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly options: LaneOptions,
    private readonly runSession: RunSessionFn,
    private readonly onError: (error: unknown, sessionKey: string) => void,
    /** Called after the scheduler itself wrote to the store (notify inputs stored). */
    private readonly afterWrite: () => void = () => {},
    /** An `interrupt` input for a session whose run is on another gateway (it holds the lease): that run must be told. */
    private readonly interruptElsewhere: (sessionKey: string) => void = () => {},
  ) {
    this.lanes = {
      main: new Lane(options.maxConcurrent.main),
      subagent: new Lane(options.maxConcurrent.subagent),
      nested: new Lane(options.maxConcurrent.nested),
      acp: new Lane(options.maxConcurrent.acp),
    };
  }

  laneFor(sessionKey: string, inputs: readonly InputRecord[] = []): LaneName {
    const kind = parseSessionKey(sessionKey)?.kind;
    if (kind === 'subagent') return 'subagent';
    if (kind === 'acp' || kind === 'process') return 'acp';
    return inputs.length > 0 && inputs.every((input) => input.provenance.exchange !== undefined) ? 'nested' : 'main';
  }

  /** True when accepting one more input for this lane would exceed `lanes.maxWaiting`. */
  isLaneFull(sessionKey: string): boolean {
    return this.lanes[this.laneFor(sessionKey)].waiting.length >= this.options.maxWaiting;
  }

  isBusy(sessionKey: string): boolean {
    return this.sessions.get(sessionKey)?.active !== undefined;
  }

  activeRuns(): RunSlot[] {
    return [...this.sessions.values()].flatMap((state) => (state.active ? [state.active] : []));
  }

  stats(): Record<LaneName, { active: number; waiting: number; max: number }> {
    const of = (lane: Lane) => ({ active: lane.active, waiting: lane.waiting.length, max: lane.max });
    return { main: of(this.lanes.main), subagent: of(this.lanes.subagent), nested: of(this.lanes.nested), acp: of(this.lanes.acp) };
  }

  /** Aborts the active run with this id. Returns false when no such run is active here. */
  abortRun(runId: string, reason: AbortReason): boolean {
    const slot = this.activeRuns().find((candidate) => candidate.runId === runId);
    if (!slot) return false;
    if (reason === 'cancel' || reason === 'interrupt') slot.asked = reason;
    slot.controller.abort(reason);
    return true;
  }

  /** Aborts the session's active run, when it has one here. */
  abortSession(sessionKey: string, reason: AbortReason): boolean {
    const slot = this.sessions.get(sessionKey)?.active;
    if (!slot) return false;
    if (reason === 'cancel' || reason === 'interrupt') slot.asked = reason;
    slot.controller.abort(reason);
    return true;
  }

  /**
   * Something changed for this session (an input arrived, a run ended): look at it again. `queued`: its queue as
   * `listQueuedForPlan(key, PLAN_HEAD)` read it just now, when the caller has it (OpenedInput.queued), so the
   * first look makes no read of its own.
   */
  wake(sessionKey: string, queued?: InputRecord[]): void {
    if (this.stopping) return;
    void this.pump(sessionKey, queued).catch((error) => this.onError(error, sessionKey));
  }

  private state(sessionKey: string): SessionState {
    let state = this.sessions.get(sessionKey);
    if (!state) {
      state = { pumping: false, dirty: false, waitingForSlot: false, wakes: 0 };
      this.sessions.set(sessionKey, state);
    }
    return state;
  }

  private forget(sessionKey: string, state: SessionState): void {
    if (!state.active && !state.pumping && !state.timer && !state.waitingForSlot) this.sessions.delete(sessionKey);
  }

  private async pump(sessionKey: string, queued?: InputRecord[]): Promise<void> {
    const state = this.state(sessionKey);
    state.wakes += 1;
    if (state.pumping) {
      state.dirty = true;
      return;
    }
    state.pumping = true;
    try {
      // Only the first look may take the caller's read: a later one comes after changes it did not see.
      let read = queued;
      do {
        state.dirty = false;
        await this.step(sessionKey, state, read);
        read = undefined;
      } while (state.dirty && !this.stopping);
    } finally {
      state.pumping = false;
      this.forget(sessionKey, state);
    }
  }

  private async step(sessionKey: string, state: SessionState, read?: InputRecord[]): Promise<void> {
    // The queue's head, and whatever acts from further back (a deep queue is not read whole at every wake).
    const queued = read ?? (await this.store.inputs.listQueuedForPlan(sessionKey, PLAN_HEAD));
    const runnable = [];
    for (const [index, input] of queued.entries()) {
      const action = decideOnArrival(input.mode, state.active !== undefined);
      // 'steer' inputs are claimed by the active run at its next step boundary; 'wait' ones stay queued.
      if (action === 'store') {
        await this.store.inputs.absorbNotify(input.id, this.clock.now());
        this.afterWrite();
        // A notify stored from the head makes room in it: look again, so the next head is not missed.
        if (index < PLAN_HEAD && queued.length >= PLAN_HEAD) state.dirty = true;
      } else if (action === 'interrupt' && state.active) {
        state.active.asked = 'interrupt';
        state.active.controller.abort('interrupt');
      } else {
        runnable.push(input);
      }
    }
    if (state.active || runnable.length === 0) return;

    const views = runnable.map((input) => ({ ...input, debounceMs: this.options.channelDebounceMs?.(input.provenance.channel) }));
    const plan = planNextRun(views, this.clock.now(), this.options.collectDebounceMs);
    if (plan.kind === 'idle') return;
    if (plan.kind === 'wait') {
      if (state.timer) clearTimeout(state.timer);
      state.timer = setTimeout(
        () => {
          state.timer = undefined;
          this.wake(sessionKey);
        },
        Math.max(1, plan.untilMs - this.clock.now()),
      );
      return;
    }

    // An `interrupt` input behind a suspended run ends that run first (it is woken and aborted as it resumes).
    if (plan.kind === 'resume' && runnable.some((input) => input.mode === 'interrupt' && !input.runId))
      await this.store.runs.requestAbort(plan.runId, 'interrupt');
    const planned = runnable.filter((input) => plan.inputIds.includes(input.id));
    const laneName = this.laneFor(sessionKey, planned);
    const lane = this.lanes[laneName];
    const wait = lane.acquire();
    if (wait) {
      state.waitingForSlot = true;
      await wait;
      state.waitingForSlot = false;
      if (this.stopping) return lane.release();
    }
    const slot: RunSlot = {
      sessionKey,
      inputIds: plan.inputIds,
      controller: new AbortController(),
      ...(plan.kind === 'resume' ? { resumeRunId: plan.runId } : {}),
    };
    const wakesBefore = state.wakes;
    state.active = slot;
    const renew = setInterval(
      () => {
        const epoch = slot.epoch;
        if (epoch === undefined) return;
        this.store.leases
          .renew(sessionKey, this.options.owner, epoch, this.options.leaseTtlMs)
          .then((ok) => {
            if (!ok) slot.controller.abort('lease_lost');
          })
          .catch((error) => this.onError(error, sessionKey));
      },
      Math.max(1000, Math.floor(this.options.leaseTtlMs / 3)),
    );
    let failed = false;
    // A run started from another run's tool call (a spawn, a send that wakes a lane) must not inherit that call's wait
    // scope (its waits would suspend the other run), nor its trace scope (what it writes is its own run's).
    const done = waitScope
      .exit(() => outsideTrace(() => this.runSession(slot)))
      .catch((error) => {
        failed = true;
        this.onError(error, sessionKey);
      })
      .finally(async () => {
        clearInterval(renew);
        lane.release();
        if (slot.epoch !== undefined && !slot.leaseReleased) {
          await this.store.leases.release(sessionKey, this.options.owner, slot.epoch).catch((error) => this.onError(error, sessionKey));
        }
        state.active = undefined;
        this.running.delete(done);
        if (slot.leasedElsewhere) {
          if (planned.some((input) => input.mode === 'interrupt')) this.interruptElsewhere(sessionKey);
          // Another gateway holds this session; look again when its lease may have expired.
          state.timer ??= setTimeout(() => {
            state.timer = undefined;
            this.wake(sessionKey);
          }, this.options.leaseTtlMs);
        } else if (!failed && (slot.queuedAfter !== false || state.wakes !== wakesBefore)) {
          // Look again unless the commit saw no queued input and none was accepted here since the run began (each
          // wakes the lane). After an unexpected failure, no hot retry loop: the watchdog looks again after `stallMs`.
          this.wake(sessionKey);
        }
        this.forget(sessionKey, state);
      });
    this.running.add(done);
  }

  /**
   * Lanes that hold queued inputs but have had no active run for longer than `stallMs`: reported and
   * woken again (the repair).
   */
  async findAndRepairStalls(): Promise<StalledLane[]> {
    const now = this.clock.now();
    const stalled: StalledLane[] = [];
    for (const { key, oldestQueuedAt } of await this.store.sessions.listWithQueuedInputs()) {
      const state = this.sessions.get(key);
      if (state && (state.active || state.pumping || state.timer || state.waitingForSlot)) continue;
      if (now - oldestQueuedAt < this.options.stallMs) continue;
      stalled.push({ sessionKey: key, oldestQueuedAt, stalledForMs: now - oldestQueuedAt });
      this.wake(key);
    }
    return stalled;
  }

  /** Stops scheduling, aborts active runs with `reason`, and waits for them to end. */
  async stop(reason: AbortReason = 'shutdown'): Promise<void> {
    this.stopping = true;
    for (const state of this.sessions.values()) {
      if (state.timer) clearTimeout(state.timer);
      state.active?.controller.abort(reason);
    }
    for (const lane of Object.values(this.lanes)) while (lane.waiting.length > 0) lane.release();
    await Promise.allSettled([...this.running]);
  }
}
