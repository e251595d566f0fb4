/**
 * What the gateway does once something has ended: a run committed (a line in the log when it did not succeed, the
 * results it held settled, a failed sub-agent's children stopped), an outbox row settled (a dead one journalled, and a
 * dead completion handed to its parent another way), an input dropped (journalled, and its exchange told, so nobody
 * waits for it in vain). Failures here are logged, never thrown into the lane: recovery settles the same on a restart.
 */
import type { GatewayLog } from '../../ports/gateway.js';
import { errorMessage } from '../../core/errors.js';
import { COMPLETION_KIND } from '../../core/subagent.js';
import type { EventRecord, IdGenerator, NewEvent, NewOutboxRow, OutboxRecord, Store } from '../../ports/index.js';
import { exchangeStepRow } from '../messaging/exchanges.js';
import type { HeldResults } from './held-results.js';
import type { RunOutcomeReport } from './session-runner.js';
import type { SubagentLifecycle } from '../subagents/subagent-lifecycle.js';

export interface AftermathDeps {
  store: Store;
  ids: IdGenerator;
  heldResults: HeldResults;
  subagents: Pick<SubagentLifecycle, 'onRunCommitted' | 'onCompletionDead'>;
  journalEvent: (event: NewEvent) => Promise<EventRecord>;
  enqueueDelivery: (row: NewOutboxRow) => Promise<void>;
  log: GatewayLog;
}

export class Aftermath {
  constructor(private readonly deps: AftermathDeps) {}

  async runCommitted(run: RunOutcomeReport): Promise<void> {
    const { log } = this.deps;
    if (run.status !== 'succeeded') this.logFailedRun(run);
    // Results are held only by the tool calls of a run (sessions_send, a2a_send waiting for a reply).
    if (run.calledTools) {
      await this.deps.heldResults
        .afterRun(run.runId, run.status)
        .catch((error) => log('error', `results held by run ${run.runId}: ${errorMessage(error)}`));
    }
    await this.deps.subagents
      .onRunCommitted(run.sessionKey, run.status)
      .catch((error) => log('error', `sub-agents of run ${run.runId}: ${errorMessage(error)}`));
  }

  /** One readable line per run that did not succeed: where, why, and the command that shows the rest. */
  private logFailedRun(run: RunOutcomeReport): void {
    const why = run.error ?? (run.status === 'cancelled' ? 'cancelled on request' : 'no detail recorded');
    const fields = {
      runId: run.runId,
      sessionKey: run.sessionKey,
      agentId: run.agentId,
      status: run.status,
      trace_id: run.trace.traceId,
      span_id: run.trace.spanId,
    };
    this.deps.log(
      run.status === 'cancelled' ? 'info' : 'warn',
      `run ${run.status}: agent ${run.agentId}, session ${run.sessionKey}: ${why} (switchboard runs show ${run.runId.slice(0, 8)})`,
      fields,
    );
  }

  outboxSettled(row: OutboxRecord, outcome: 'delivered' | 'retry' | 'dead', error?: string): void {
    const { log } = this.deps;
    if (outcome === 'delivered') return;
    log(outcome === 'dead' ? 'error' : 'warn', `outbox ${row.kind} ${outcome}`, { id: row.id, error });
    if (outcome !== 'dead') return;
    this.deps
      .journalEvent({ type: 'outbox.dead', sessionKey: row.target, payload: { id: row.id, kind: row.kind, error } })
      .catch((failure) => log('error', `outbox: ${errorMessage(failure)}`));
    if (row.kind === COMPLETION_KIND)
      this.deps.subagents
        .onCompletionDead(row, error ?? 'unknown error')
        .catch((failure) => log('error', `outbox: ${errorMessage(failure)}`));
  }

  /** After an input was dropped (by recovery or a cancel; the runner journals its own drops, `journal` false). */
  async inputDropped(inputId: string, journal = true): Promise<void> {
    const input = await this.deps.store.inputs.get(inputId);
    if (!input) return;
    const why = input.note ?? 'dropped';
    if (journal) await this.deps.journalEvent({ type: 'input.dropped', sessionKey: input.sessionKey, payload: { inputId, note: why } });
    const row = exchangeStepRow(input, { runId: null, status: 'dropped', text: null, error: why }, this.deps.ids.next());
    if (row) await this.deps.enqueueDelivery(row);
  }
}
