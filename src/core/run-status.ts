/**
 * Run lifecycle: running -> succeeded | failed | interrupted | cancelled | timed_out. A run that a crash or a lost lease
 * cut after it committed a step is `suspended` until it resumes (running again, its attempt one more).
 */
export const RUN_STATUSES = ['running', 'suspended', 'succeeded', 'failed', 'interrupted', 'cancelled', 'timed_out'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type TerminalRunStatus = Exclude<RunStatus, 'running' | 'suspended'>;

export function isTerminalRunStatus(status: RunStatus): status is TerminalRunStatus {
  return status !== 'running' && status !== 'suspended';
}

/** Why an active run was aborted; decides the terminal status it is recorded with. */
export type AbortReason = 'timeout' | 'cancel' | 'interrupt' | 'lease_lost' | 'shutdown' | 'suspend';

export function statusForAbort(reason: AbortReason): TerminalRunStatus {
  switch (reason) {
    case 'timeout':
      return 'timed_out';
    case 'cancel':
      return 'cancelled';
    default:
      return 'interrupted';
  }
}

export function abortMessage(reason: AbortReason): string {
  switch (reason) {
    case 'timeout':
      return 'run exceeded its hard timeout (agents.defaults.timeoutSeconds or agents.list[].timeoutSeconds) and was aborted';
    case 'cancel':
      return 'run was cancelled';
    case 'interrupt':
      return 'run was interrupted by a newer input sent with mode "interrupt"';
    case 'lease_lost':
      return 'run lost its session lease and was aborted';
    case 'shutdown':
      return 'gateway shut down while the run was active';
    case 'suspend':
      return 'run suspended in a wait; it resumes when the wait ends';
  }
}
