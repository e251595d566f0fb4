/**
 * Queue-mode decisions for inputs reaching a session (ARCHITECTURE.md section 5). Pure: the lanes feed in
 * what is queued and act on the answer.
 */
export const QUEUE_MODES = ['steer', 'followup', 'collect', 'interrupt', 'notify'] as const;
export type QueueMode = (typeof QUEUE_MODES)[number];

export interface QueuedInputView {
  id: string;
  mode: QueueMode;
  /** Milliseconds since the epoch at which the input was accepted. */
  createdAt: number;
  /** The collect quiet window of the input's channel, when it has its own. */
  debounceMs?: number;
  /** Set on a queued input only when it belongs to a suspended run: that run resumes with it. */
  runId?: string | null;
}

export type ArrivalAction =
  /** Nothing runs for this session: schedule a run (or a collect window). */
  | 'schedule'
  /** The session is busy: the active run picks this input up at its next model step. */
  | 'steer'
  /** The session is busy: abort the active run, then run this input first. */
  | 'interrupt'
  /** The session is busy: wait for the active run to end. */
  | 'wait'
  /** Store it in the transcript; start nothing. */
  | 'store';

export function decideOnArrival(mode: QueueMode, sessionBusy: boolean): ArrivalAction {
  if (mode === 'notify') return 'store';
  if (!sessionBusy) return 'schedule';
  if (mode === 'steer') return 'steer';
  if (mode === 'interrupt') return 'interrupt';
  return 'wait';
}

export type NextRunPlan =
  | { kind: 'idle' }
  | { kind: 'run'; inputIds: string[] }
  /** A suspended run resumes from its last committed step, with the inputs queued for it. */
  | { kind: 'resume'; runId: string; inputIds: string[] }
  /** A collect window is still open: look again at `untilMs`. */
  | { kind: 'wait'; untilMs: number };

/**
 * Which queued inputs the next run consumes.
 * Contract: `queued` is in FIFO order and holds no notify inputs. The newest interrupt input jumps the
 * queue; a collect input at the head takes every queued collect input with it once the newest has been
 * quiet for its channel's window (else `collectDebounceMs`); anything else runs alone, in order. A suspended run's
 * inputs go before all of them: the run was the session's before they came.
 */
export function planNextRun(queued: readonly QueuedInputView[], nowMs: number, collectDebounceMs: number): NextRunPlan {
  if (queued.length === 0) return { kind: 'idle' };
  const suspended = queued.find((input) => input.runId);
  if (suspended?.runId) {
    const runId = suspended.runId;
    return { kind: 'resume', runId, inputIds: queued.filter((input) => input.runId === runId).map((input) => input.id) };
  }
  for (let i = queued.length - 1; i >= 0; i -= 1) {
    if (queued[i].mode === 'interrupt') return { kind: 'run', inputIds: [queued[i].id] };
  }
  const head = queued[0];
  if (head.mode !== 'collect') return { kind: 'run', inputIds: [head.id] };
  const collected = queued.filter((input) => input.mode === 'collect');
  const newest = collected.reduce((latest, input) => (input.createdAt >= latest.createdAt ? input : latest));
  const untilMs = newest.createdAt + (newest.debounceMs ?? collectDebounceMs);
  if (untilMs > nowMs) return { kind: 'wait', untilMs };
  return { kind: 'run', inputIds: collected.map((input) => input.id) };
}

/** A channel's queue setting (`messages.queue.byChannel`): a mode, or a mode and a collect window of its own. */
export type ChannelQueueSetting = QueueMode | { mode?: QueueMode; debounceMs?: number };

/** The queue mode and collect window a channel's inputs get: its own setting where it has one, else the defaults. */
export function channelQueue(
  queue: { mode: QueueMode; debounceMs: number; byChannel: Record<string, ChannelQueueSetting> },
  channel: string | undefined,
): { mode: QueueMode; debounceMs: number } {
  const setting = channel === undefined ? undefined : queue.byChannel[channel];
  if (typeof setting === 'object') return { mode: setting.mode ?? queue.mode, debounceMs: setting.debounceMs ?? queue.debounceMs };
  return { mode: setting ?? queue.mode, debounceMs: queue.debounceMs };
}
