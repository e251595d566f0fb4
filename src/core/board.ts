/**
 * The task board's rules (seed 000: Hermes Kanban, Claude team task lists): the states, which moves a
 * person or an agent may make by hand, and what happens to a task whose attempt failed. The store applies
 * them inside its transactions; workers move tasks only through claims, which are fenced by a token.
 */

export const BOARD_STATES = ['triage', 'todo', 'ready', 'running', 'review', 'done', 'blocked', 'cancelled', 'archived'] as const;
export type BoardState = (typeof BOARD_STATES)[number];

/** Why a task is blocked: a worker's kind (dependency, needs_input, failed), or the board's own `gave_up`. */
export const BLOCK_KINDS = ['dependency', 'needs_input', 'failed'] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number] | 'gave_up';

/**
 * How an attempt (one claim) ended. `expired` and `failed` count against the task's max attempts;
 * `released` (the worker gave it back) and `cancelled` (a person stopped it) do not.
 */
export type AttemptOutcome = 'completed' | 'review' | 'blocked' | 'released' | 'expired' | 'failed' | 'cancelled';

/** The states a task may be moved to by hand from each state. Running tasks move only through their claim (or a cancel). */
const MOVES: Record<BoardState, readonly BoardState[]> = {
  triage: ['todo', 'ready', 'cancelled'],
  todo: ['triage', 'ready', 'blocked', 'cancelled'],
  ready: ['triage', 'todo', 'blocked', 'cancelled'],
  running: ['cancelled'],
  review: ['done', 'ready', 'cancelled'],
  blocked: ['triage', 'todo', 'ready', 'cancelled'],
  done: ['archived'],
  cancelled: ['archived'],
  archived: [],
};

/** Null when the move is allowed, else why not, in a sentence that says what is possible instead. */
export function refuseMove(from: BoardState, to: BoardState): string | null {
  if (from === to) return `the task is already ${to}`;
  if (MOVES[from].includes(to)) return null;
  if (from === 'running')
    return `a running task moves only through its claim (complete, block, release) or a cancel; it cannot be moved to ${to} by hand`;
  const allowed = MOVES[from];
  const task = `${/^[aeiou]/.test(from) ? 'an' : 'a'} ${from} task`;
  return allowed.length === 0 ? `${task} is final and cannot be moved` : `${task} can be moved to ${allowed.join(', ')}, not to ${to}`;
}

/** Where a new task starts: triage when asked, else ready unless a task it depends on is not done yet. */
export function initialState(triage: boolean, openDependencies: number): BoardState {
  if (triage) return 'triage';
  return openDependencies > 0 ? 'todo' : 'ready';
}

/** After a failed attempt: ready again while the budget lasts, else blocked for good (`gave_up`). */
export function afterFailure(failures: number, maxAttempts: number): 'ready' | 'blocked' {
  return failures >= maxAttempts ? 'blocked' : 'ready';
}

/**
 * The path that linking `taskId -> dependsOn` would close into a cycle, or null. `dependenciesOf`
 * answers from what the store has loaded; the search walks from `dependsOn` looking for `taskId`.
 */
export function cyclePath(taskId: string, dependsOn: string, dependenciesOf: (id: string) => readonly string[]): string[] | null {
  if (taskId === dependsOn) return [taskId, taskId];
  const cameFrom = new Map<string, string>([[dependsOn, taskId]]);
  const queue = [dependsOn];
  while (queue.length > 0) {
    const current = queue.shift()!;
    for (const next of dependenciesOf(current)) {
      if (cameFrom.has(next)) continue;
      cameFrom.set(next, current);
      if (next === taskId) {
        const path = [taskId];
        for (let at = current; at !== taskId; at = cameFrom.get(at)!) path.unshift(at);
        path.unshift(taskId);
        return path;
      }
      queue.push(next);
    }
  }
  return null;
}

/** The states a task may gain dependencies in: it has not started yet (nor been stopped). */
const LINKABLE: readonly BoardState[] = ['triage', 'todo', 'ready', 'review', 'blocked'];

/** Null when a dependency may be added to a task in `state`, else why not. */
export function refuseLink(taskId: string, state: BoardState): string | null {
  return LINKABLE.includes(state) ? null : `task ${taskId} is ${state}; dependencies can be added only to tasks that have not started`;
}

/** Whether a new dependency sends a ready task back to todo: it does while the dependency is not done. */
export function demotedByLink(state: BoardState, dependencyState: BoardState): boolean {
  return state === 'ready' && dependencyState !== 'done';
}

/** Null when a task in `state` can be reviewed (approved or sent back), else why not. */
export function refuseReview(taskId: string, state: BoardState): string | null {
  return state === 'review'
    ? null
    : `task ${taskId} is ${state}, not in review; only a task a worker sent to review can be approved or sent back`;
}

/** Null when a task may be moved to ready by hand with these dependencies still open, else why not. */
export function refuseReady(taskId: string, openDependencies: readonly string[]): string | null {
  return openDependencies.length === 0
    ? null
    : `task ${taskId} cannot be ready: it depends on ${openDependencies.join(', ')}, not done yet (it becomes ready by itself when they are)`;
}

/**
 * Why a running task's claim is taken back at `now`, or null while it holds: it ran past the task's max runtime, or
 * its claim expired without a heartbeat.
 */
export function claimOverdue(
  claim: { claimedAt: number; claimExpiresAt: number; maxRuntimeMs: number | null },
  now: number,
): 'overran' | 'expired' | null {
  if (claim.maxRuntimeMs !== null && claim.claimedAt + claim.maxRuntimeMs < now) return 'overran';
  return claim.claimExpiresAt < now ? 'expired' : null;
}
