/**
 * Waiting for and stopping what was accepted: a wait on an input until its run ends (every wait has a
 * deadline), and cancelling a run or an input. The gateway extends this.
 */
import { isTerminalRunStatus } from '../core/run-status.js';
import { GatewayIntake } from './gateway-intake.js';
import type { WaitResult } from './gateway-queries.js';
import { waitUntil, type Wakeups } from '../kit/wait-until.js';
import type { EventBus } from './event-bus.js';
import type { RunRecord } from '../ports/index.js';

export abstract class GatewayControl extends GatewayIntake {
  /** What every wait sleeps on: journal events, the clock and the gateway stopping. */
  protected abstract readonly wakeups: Wakeups;
  /** Where commits say which inputs they consumed, with the run. */
  abstract readonly bus: EventBus;
  /** After an input was dropped: journalled, and an exchange waiting on it told. */
  protected abstract onInputDropped(inputId: string, journal?: boolean): Promise<void>;
  abstract readonly gatewayId: string;

  /**
   * Waits until the input has been consumed by a run that ended (or was stored, or dropped). Every
   * wait has a deadline: on timeout the input is still delivered and will still be processed. A gateway
   * that stops ends every wait the same way, at once: the input is processed after the restart.
   *
   * `fresh`: the caller created the input a moment ago and waits at once (a waited send), so it is still queued and
   * the first look needs no read. Were it settled in between, the wait would find out at its next look (a second at
   * most), never answer wrongly.
   */
  async waitForInput(inputId: string, timeoutMs: number, fresh = false): Promise<WaitResult> {
    // The commit that consumes the input hands over its run: the answer needs no read of the input and the run.
    let committed: RunRecord | undefined;
    const unsubscribe = this.bus.onSettled(inputId, (run) => (committed = run));
    let skipRead = fresh;
    try {
      const check = async () => {
        if (committed) return { status: 'completed' as const, run: committed, reply: committed.finalText };
        if (!skipRead) return this.inputOutcome(inputId);
        skipRead = false;
        return undefined;
      };
      // A run taking the input changes no answer: only its end, a drop or a store does.
      const settled = await waitUntil(this.clock.now() + timeoutMs, check, this.wakeups, {
        keys: [`input:${inputId}`],
        test: (payload, _sessionKey, type) => {
          const about = payload as { inputIds?: string[]; inputId?: string };
          return type !== 'run.started' && (about.inputIds?.includes(inputId) === true || about.inputId === inputId);
        },
      });
      return settled ?? { status: 'timeout', input: (await this.store.inputs.get(inputId))! };
    } finally {
      unsubscribe();
    }
  }

  /** The run that took an input, once one has. */
  async inputRunId(inputId: string): Promise<string | undefined> {
    return (await this.store.inputs.get(inputId))?.runId ?? undefined;
  }

  /** Cancels an active run, on whichever gateway runs it: it is recorded `cancelled` with its partial output. */
  async cancelRun(runId: string): Promise<boolean> {
    const { run } = await this.getRun(runId);
    if (isTerminalRunStatus(run.status)) return false;
    return this.abortRun(runId, 'cancel');
  }

  /**
   * Aborts a run wherever it runs: at once when it runs here; otherwise through the journal, whose every gateway
   * reads the request and the one running it aborts it (a gateway that died has its runs taken over instead).
   * False when the run is not running.
   */
  protected async abortRun(runId: string, reason: 'cancel' | 'interrupt'): Promise<boolean> {
    if (this.lanes.abortRun(runId, reason)) return true;
    const run = await this.store.runs.get(runId);
    if (run?.status !== 'running') return false;
    await this.journalEvent({ type: 'run.abort_requested', sessionKey: run.sessionKey, runId, payload: { reason, by: this.gatewayId } });
    return true;
  }

  /** Stops what an input is doing: its active run is cancelled, or, still queued, it is dropped with `why`. */
  async cancelInput(inputId: string, why: string): Promise<void> {
    const input = await this.store.inputs.get(inputId);
    if (input?.runId && (await this.store.runs.get(input.runId))?.status === 'running') await this.abortRun(input.runId, 'cancel');
    else if (input?.status === 'queued') {
      for (const dropped of await this.store.inputs.drop([inputId], why, this.clock.now())) await this.onInputDropped(dropped);
    }
  }
}
