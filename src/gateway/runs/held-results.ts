/**
 * The one redelivery path. A run that waits can take a result from elsewhere as a tool result: the
 * reply to its sessions_send, the end of a remote task it sent with a2a_send. That result is the run's
 * only if the run commits successfully (it is then in the transcript). If the run fails, is cancelled
 * or dies with the process, the result is delivered to the session as a message instead, under its own
 * idempotency key, so that it is neither lost nor given twice.
 */
import type { TerminalRunStatus } from '../../core/run-status.js';
import type { InputRecord, NewInput, Store } from '../../ports/index.js';
import type { HeldResult, HeldResultSource } from '../../ports/runtimes.js';

export interface HeldResultsDeps {
  store: Store;
  newId: () => string;
  accept: (input: NewInput) => Promise<InputRecord>;
}

export class HeldResults {
  constructor(
    private readonly deps: HeldResultsDeps,
    private readonly sources: readonly HeldResultSource[],
  ) {}

  /** After a run commits with `status`. */
  async afterRun(runId: string, status: TerminalRunStatus): Promise<void> {
    for (const source of this.sources) for (const held of await source.held(runId)) await this.settle(held, status === 'succeeded');
  }

  /** Crash recovery: results held by runs that are no longer running are settled as those runs ended. */
  async recover(): Promise<void> {
    for (const source of this.sources) {
      for (const held of await source.held()) {
        const run = held.runId ? await this.deps.store.runs.get(held.runId) : undefined;
        // Still running: a live gateway sharing the store owns it, and settles it when it commits. Suspended: it
        // resumes, and settles it when it commits.
        if (run?.status === 'running' || run?.status === 'suspended') continue;
        await this.settle(held, run?.status === 'succeeded');
      }
    }
  }

  private async settle(held: HeldResult, committed: boolean): Promise<void> {
    if (committed || !held.redelivery) return held.settle(false);
    await this.deps.accept({ id: this.deps.newId(), ...held.redelivery });
    await held.settle(true);
  }
}
