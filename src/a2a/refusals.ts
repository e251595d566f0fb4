/**
 * The A2A server's refusals (401, 403, 429) journaled as `a2a.refused` events and logged, so that an operator sees who
 * is knocking (`switchboard events --type a2a.`). A caller refused again and again is reported once per window with a
 * count, so that a flood of bad requests cannot flood the journal.
 */
import type { Clock } from '../ports/index.js';

export interface RefusalReport {
  agentId: string;
  status: 401 | 403 | 429;
  reason: string;
  message: string;
  /** The peer's id when its credentials were valid, else null. */
  peer: string | null;
  address: string;
  /** Refusals of the same caller, agent and status since the last one reported (this one included). */
  count: number;
}

/** One report per caller, agent and status in this long. */
export const REFUSAL_WINDOW_MS = 10_000;
/** Callers remembered at once; past it the oldest is forgotten (and its next refusal reported at once). */
const MAX_CALLERS = 10_000;

export class RefusalReporter {
  private readonly callers = new Map<string, { reportedAt: number; count: number }>();

  constructor(
    private readonly report: (refusal: RefusalReport) => void,
    private readonly clock: Clock,
  ) {}

  refused(refusal: Omit<RefusalReport, 'count'>): void {
    const key = `${refusal.peer ?? refusal.address}\u0000${refusal.agentId}\u0000${refusal.status}`;
    const now = this.clock.now();
    const seen = this.callers.get(key);
    if (seen && now - seen.reportedAt < REFUSAL_WINDOW_MS) {
      seen.count += 1;
      return;
    }
    this.callers.delete(key);
    this.callers.set(key, { reportedAt: now, count: 0 });
    if (this.callers.size > MAX_CALLERS) this.callers.delete(this.callers.keys().next().value!);
    this.report({ ...refusal, count: (seen?.count ?? 0) + 1 });
  }
}
