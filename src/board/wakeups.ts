/**
 * What in the journal wakes the board's dispatcher before its next sweep: a board change that may free or make work,
 * a task it follows cancelled by hand, and the end of a board session's run (its task may need settling).
 */
import { parseSessionKey } from '../core/session-key.js';
import type { EventRecord } from '../ports/index.js';

const BOARD_EVENTS_THAT_WAKE = new Set(['created', 'moved', 'promoted', 'released', 'reclaimed', 'attempt_failed', 'linked']);

/** Whether the event calls for a pass now; `cancelled` is the task cancelled by hand, when it is one. */
export function dispatcherWakeup(event: EventRecord): { wake: boolean; cancelled?: string } {
  if (event.type === 'board.updated') {
    const board = event.payload as { event?: string; taskId?: string; state?: string };
    const cancelled = board.state === 'cancelled' ? board.taskId : undefined;
    return { wake: BOARD_EVENTS_THAT_WAKE.has(board.event ?? ''), ...(cancelled ? { cancelled } : {}) };
  }
  const sessionEnded =
    (event.type === 'run.completed' || event.type === 'input.dropped') &&
    event.sessionKey !== null &&
    parseSessionKey(event.sessionKey)?.kind === 'board';
  return { wake: sessionEnded };
}
