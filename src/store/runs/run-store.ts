/** The run store: starting runs, steering, the atomic commit, and crash recovery. */
import { settleToolCalls } from '../tool-calls/tool-call-store.js';
import { settleStepRow } from '../steps/step-store.js';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type { RunStatus } from '../../core/run-status.js';
import type {
  CommittedRun,
  NewRun,
  OrphanRecovery,
  RecoveryReport,
  RunCommit,
  RunOutcome,
  UsageSlice,
  UsageTotal,
  RunRecord,
  RunStore,
  ResumeRun,
  ResumedRun,
  RunWait,
  WaitDeadlines,
  Journaled,
  StartedRun,
} from '../../ports/index.js';
import { json, newRunRow, num, parse, toInput, toRun, toSession } from '../sql/rows.js';
import { appendEvent, appendTranscript, currentEpoch, insertOutbox, type LeaseTaker, type Relax } from '../sql/writes.js';
import { recoverOrphans } from './run-recovery.js';
import type { SqlDialect } from '../sql/dialect.js';
import { endSubagentRun, startSubagentRun } from '../subagents/subagent-rows.js';
import type { Database, InputsTable, RunsTable, SessionsTable } from '../schema/database.js';
import { prepared, preparedPerCount } from '../sql/prepared.js';

// The statements every run makes, compiled once.
const sessionRunning = prepared<'key' | 'now', Selectable<SessionsTable>>((db, param) =>
  db
    .updateTable('sessions')
    .set({ state: 'running', updated_at: param('now'), last_run_at: param('now') })
    .where('key', '=', param('key'))
    .returningAll(),
);
const sessionIdle = prepared<'key' | 'now', never>((db, param) =>
  db
    .updateTable('sessions')
    .set({ state: 'idle', updated_at: param('now') })
    .where('key', '=', param('key')),
);
/** One queued input of the session, if it holds any. */
const anyQueued = prepared<'key', { seq: number }>((db, param) =>
  db.selectFrom('inputs').select('seq').where('session_key', '=', param('key')).where('status', '=', 'queued').limit(1),
);
/** Lets the lease go, keeping its epoch: the next holder's is higher, so this run's epoch stays fenced off. */
const releaseLease = prepared<'key' | 'epoch', { epoch: number }>((db, param) =>
  db
    .updateTable('session_lease')
    .set({ expires_at: 0 })
    .where('session_key', '=', param('key'))
    .where('epoch', '=', param('epoch'))
    .returning('epoch'),
);

const insertRun = prepared<'id' | 'sessionKey' | 'agentId' | 'owner' | 'epoch' | 'model' | 'now', never>((db, param) =>
  db.insertInto('runs').values(
    newRunRow({
      id: param('id'),
      sessionKey: param('sessionKey'),
      agentId: param('agentId'),
      status: 'running',
      owner: param('owner'),
      epoch: param('epoch'),
      model: param('model'),
      now: param('now'),
    }),
  ),
);
const claimInputs = preparedPerCount<'runId' | 'now', 'ids', Selectable<InputsTable>>((db, count, param, item) =>
  db
    .updateTable('inputs')
    .set((eb) => ({ status: 'claimed', run_id: param('runId'), attempts: eb('attempts', '+', 1), updated_at: param('now') }))
    .where(
      'id',
      'in',
      Array.from({ length: count }, (_, i) => item('ids', i)),
    )
    .where('status', '=', 'queued')
    .returningAll(),
);
const consumeInputs = preparedPerCount<'runId' | 'now', 'ids', never>((db, count, param, item) =>
  db
    .updateTable('inputs')
    .set({ status: 'consumed', updated_at: param('now') })
    .where(
      'id',
      'in',
      Array.from({ length: count }, (_, i) => item('ids', i)),
    )
    .where('run_id', '=', param('runId')),
);
type FinishParam =
  | 'id'
  | 'epoch'
  | 'status'
  | 'now'
  | 'inputTokens'
  | 'outputTokens'
  | 'modelCalls'
  | 'steps'
  | 'preambleChars'
  | 'promptChars'
  | 'requestBytes'
  | 'requestSystemBytes'
  | 'requestToolBytes'
  | 'cachedInputTokens'
  | 'finalText'
  | 'errorCode'
  | 'errorMessage';
/** The run's outcome, only while it is still running under this epoch. */
const finishRun = prepared<FinishParam, Selectable<RunsTable>>((db, param) =>
  db
    .updateTable('runs')
    .set({
      status: param('status'),
      ended_at: param('now'),
      input_tokens: param('inputTokens'),
      output_tokens: param('outputTokens'),
      model_calls: param('modelCalls'),
      steps: param('steps'),
      preamble_chars: param('preambleChars'),
      prompt_chars: param('promptChars'),
      request_bytes: param('requestBytes'),
      request_system_bytes: param('requestSystemBytes'),
      request_tool_bytes: param('requestToolBytes'),
      cached_input_tokens: param('cachedInputTokens'),
      final_text: param('finalText'),
      error_code: param('errorCode'),
      error_message: param('errorMessage'),
    })
    .where('id', '=', param('id'))
    .where('status', '=', 'running')
    .where('epoch', '=', param('epoch'))
    .returningAll(),
);

/** A run's outcome as the values its row takes (the portable commit's and PostgreSQL's sb_commit_run's). */
export function outcomeValues(outcome: RunOutcome) {
  return {
    status: outcome.status,
    inputTokens: outcome.usage.inputTokens,
    outputTokens: outcome.usage.outputTokens,
    modelCalls: outcome.usage.modelCalls,
    steps: outcome.usage.steps,
    preambleChars: outcome.preambleChars,
    promptChars: outcome.promptChars,
    requestBytes: outcome.request?.bytes ?? 0,
    requestSystemBytes: outcome.request?.systemBytes ?? 0,
    requestToolBytes: outcome.request?.toolBytes ?? 0,
    cachedInputTokens: outcome.usage.cachedInputTokens ?? 0,
    finalText: outcome.finalText,
    errorCode: outcome.errorCode ?? null,
    errorMessage: outcome.errorMessage ?? null,
  };
}

/**
 * An engine's own start and commit of a run, where it has a faster one (PostgreSQL: one round trip each). Each answers
 * undefined for a run it does not take, which then takes the portable transaction; both write the same rows.
 */
export interface RunFastPaths {
  start(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'> | undefined;
  commit(commit: RunCommit, now: number): Promise<CommittedRun> | undefined;
}

export class KyselyRunStore implements RunStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    /** The database clock: recovery judges leases by it. */
    private readonly dbNowMs: () => RawBuilder<number>,
    /** Takes the session's lease: a run's start does, in its own transaction. */
    private readonly takeLease: LeaseTaker,
    /** Starting a run and claiming steered inputs are internal writes (see `Relax`). */
    private readonly relax?: Relax,
    /** The engine's faster start and commit, where it has them. */
    private readonly fast?: RunFastPaths,
    /**
     * Where the store answers a start with the session's history and what it reached out to (StartedRun.history),
     * read right after the start's transaction: an adapter whose calls cross a thread saves the runner two of them.
     */
    private readonly startReads?: (sessionKey: string, historyLimit: number) => Promise<Pick<StartedRun, 'history' | 'reachedOut'>>,
  ) {}

  async start(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'> {
    const fast = this.fast?.start(run, now);
    if (fast) return fast;
    const started = await this.startRun(run, now);
    if (typeof started === 'string' || run.historyLimit === undefined || !this.startReads) return started;
    // The run has started: a failed read leaves the history to the runner, which reads it (and records its failure).
    const read = await this.startReads(run.sessionKey, run.historyLimit).catch(() => undefined);
    return read ? { ...started, ...read } : started;
  }

  private startRun(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'> {
    return this.db
      .transaction()
      .execute(async (trx): Promise<StartedRun | 'leased'> => {
        this.relax?.();
        // The lease and the run in one transaction: one commit where there were two.
        const lease = await this.takeLease(trx, run.sessionKey, run.owner, run.leaseTtlMs);
        if (!lease) return 'leased';
        const claimed = await claimInputs(trx, run.inputIds.length, { runId: run.id, now, ids: run.inputIds });
        // Someone else took an input first: undo the lease and the claim by throwing inside the transaction.
        if (claimed.length !== run.inputIds.length) throw new StartConflict('taken');
        await insertRun(trx, {
          id: run.id,
          sessionKey: run.sessionKey,
          agentId: run.agentId,
          owner: run.owner,
          epoch: lease.epoch,
          model: run.model,
          now,
        });
        const [session] = await sessionRunning(trx, { key: run.sessionKey, now });
        if (!session) throw new StartConflict('missing');
        const started = await appendEvent(
          trx,
          { type: 'run.started', sessionKey: run.sessionKey, runId: run.id, payload: { inputIds: run.inputIds, model: run.model } },
          now,
        );
        if (run.subagentId) await startSubagentRun(trx, run.subagentId, run.id, now);
        const inputs = claimed.map(toInput).sort((a, b) => a.seq - b.seq);
        return { epoch: lease.epoch, inputs, session: toSession(session), events: [started] };
      })
      .catch((error: unknown) => {
        if (error instanceof StartConflict) return error.answer;
        throw error;
      });
  }

  async resume(run: ResumeRun, now: number): Promise<ResumedRun | 'leased' | 'taken' | 'missing' | 'waiting'> {
    return this.db
      .transaction()
      .execute(async (trx): Promise<ResumedRun | 'leased'> => {
        this.relax?.();
        const lease = await this.takeLease(trx, run.sessionKey, run.owner, run.leaseTtlMs);
        if (!lease) return 'leased';
        // The deadline of the wait it was suspended in, if any: the resumed wait keeps it.
        // Held to the commit: a cancel asked meanwhile (requestAbort) is read here, not erased unread by the update.
        const before = await this.dialect
          .lockRows(trx.selectFrom('runs').select(['wake_keys', 'wait_deadlines', 'error_code']).where('id', '=', run.runId))
          .executeTakeFirst();
        // The compare-and-set: of two gateways resuming one run, one finds it suspended (and not waiting).
        const [resumed] = await trx
          .updateTable('runs')
          .set((eb) => ({
            status: 'running',
            owner: run.owner,
            epoch: lease.epoch,
            attempt: eb('attempt', '+', 1),
            ended_at: null,
            error_code: null,
            error_message: null,
            wake_at: null,
            wait_deadlines: null,
          }))
          .where('id', '=', run.runId)
          .where('session_key', '=', run.sessionKey)
          .where('status', '=', 'suspended')
          .where('wake_keys', 'is', null)
          .returningAll()
          .execute();
        if (!resumed) throw before?.wake_keys ? new StillWaiting() : new StartConflict('taken');
        const claimed = await trx
          .updateTable('inputs')
          .set((eb) => ({ status: 'claimed', attempts: eb('attempts', '+', 1), updated_at: now }))
          .where('run_id', '=', run.runId)
          .where('status', '=', 'queued')
          .returningAll()
          .execute();
        const [session] = await sessionRunning(trx, { key: run.sessionKey, now });
        if (!session) throw new StartConflict('missing');
        const record = toRun(resumed);
        const event = await appendEvent(
          trx,
          {
            type: 'run.resumed',
            sessionKey: run.sessionKey,
            runId: run.runId,
            payload: { attempt: record.attempt, owner: run.owner, inputIds: claimed.map((input) => input.id) },
          },
          now,
        );
        if (run.subagentId) await startSubagentRun(trx, run.subagentId, run.runId, now);
        const inputs = claimed.map(toInput).sort((a, b) => a.seq - b.seq);
        const waitDeadlines = parse<WaitDeadlines | null>(before?.wait_deadlines ?? null) ?? {};
        const abort = before?.error_code?.startsWith(ABORT_REQUESTED) ? before.error_code.slice(ABORT_REQUESTED.length) : undefined;
        const abortRequested = abort === 'cancel' || abort === 'interrupt' ? abort : undefined;
        return { epoch: lease.epoch, inputs, session: toSession(session), events: [event], run: record, waitDeadlines, abortRequested };
      })
      .catch((error: unknown) => {
        if (error instanceof StartConflict) return error.answer;
        if (error instanceof StillWaiting) return 'waiting' as const;
        throw error;
      });
  }

  suspend(wait: RunWait & { epoch: number; deadlines: WaitDeadlines }, now: number): Promise<Journaled> {
    return this.db.transaction().execute(async (trx) => {
      const [released] = await releaseLease(trx, { key: wait.sessionKey, epoch: wait.epoch });
      const suspended = !released
        ? []
        : await trx
            .updateTable('runs')
            .set({ status: 'suspended', wake_at: wait.until, wake_keys: json(wait.keys), wait_deadlines: json(wait.deadlines) })
            .where('id', '=', wait.runId)
            .where('epoch', '=', wait.epoch)
            .where('status', '=', 'running')
            .returning('id')
            .execute();
      if (suspended.length === 0) {
        const epoch = await currentEpoch(trx, wait.sessionKey);
        throw new SwitchboardError(
          'LEASE_LOST',
          `run ${wait.runId} lost its lease on ${wait.sessionKey} (epoch ${wait.epoch}, now ${epoch ?? 'none'}); it was not suspended`,
        );
      }
      // Queued again for it: the session's next run is its resume. A wait is progress, not a failed attempt.
      const inputs = await trx
        .updateTable('inputs')
        // Their notes stay: the model reads them, and the resumed run must read what it read.
        .set({ status: 'queued', attempts: 0, updated_at: now })
        .where('run_id', '=', wait.runId)
        .where('status', '=', 'claimed')
        .returning('id')
        .execute();
      await sessionIdle(trx, { key: wait.sessionKey, now });
      const event = await appendEvent(
        trx,
        {
          type: 'run.suspended',
          sessionKey: wait.sessionKey,
          runId: wait.runId,
          payload: { waiting: true, until: wait.until, keys: wait.keys, inputIds: inputs.map((input) => input.id) },
        },
        now,
      );
      return { events: [event] };
    });
  }

  async wake(runId: string): Promise<string | undefined> {
    const [woken] = await this.db
      .updateTable('runs')
      .set({ wake_keys: null })
      .where('id', '=', runId)
      .where('status', '=', 'suspended')
      .where('wake_keys', 'is not', null)
      .returning('session_key')
      .execute();
    return woken?.session_key;
  }

  async requestAbort(runId: string, reason: 'cancel' | 'interrupt'): Promise<string | undefined> {
    const [asked] = await this.db
      .updateTable('runs')
      .set({ error_code: `${ABORT_REQUESTED}${reason}`, wake_keys: null })
      .where('id', '=', runId)
      .where('status', '=', 'suspended')
      .returning('session_key')
      .execute();
    return asked?.session_key;
  }

  async abandon(runId: string, why: string, now: number): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ status: 'interrupted', ended_at: now, error_code: 'INTERRUPTED', error_message: why, wake_at: null, wake_keys: null })
      .where('id', '=', runId)
      .where('status', '=', 'suspended')
      .execute();
  }

  async waiting(): Promise<RunWait[]> {
    const rows = await this.db
      .selectFrom('runs')
      .select(['id', 'session_key', 'wake_at', 'wake_keys', 'owner'])
      .where('wake_at', 'is not', null)
      .where('wake_keys', 'is not', null)
      .where('status', '=', 'suspended')
      .execute();
    return rows.map((row) => ({
      runId: row.id,
      sessionKey: row.session_key,
      until: num(row.wake_at),
      keys: JSON.parse(row.wake_keys ?? '[]'),
      owner: row.owner,
    }));
  }

  async claimMore(runId: string, sessionKey: string, epoch: number, inputIds: string[], now: number): Promise<string[]> {
    if (inputIds.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      this.relax?.();
      // The lease's row is held to the end: a recovery that fences this run off and queues its inputs again waits
      // for this claim, or this claim sees the grown epoch and claims nothing.
      if ((await currentEpoch(trx, sessionKey, this.dialect)) !== epoch) return [];
      const rows = await trx
        .updateTable('inputs')
        .set((eb) => ({ status: 'claimed', run_id: runId, attempts: eb('attempts', '+', 1), updated_at: now }))
        .where('id', 'in', inputIds)
        .where('session_key', '=', sessionKey)
        .where('status', '=', 'queued')
        .returning('id')
        .execute();
      return rows.map((row) => row.id);
    });
  }

  async commit(commit: RunCommit, now: number): Promise<CommittedRun> {
    const fast = this.fast?.commit(commit, now);
    if (fast) return fast;
    return this.db.transaction().execute(async (trx) => {
      // The run is over: its lease goes with the commit, saving the scheduler a write of its own. Taking it
      // first is also the fence: no row with this epoch means another owner has the session.
      const [released] = await releaseLease(trx, { key: commit.sessionKey, epoch: commit.epoch });
      const { outcome } = commit;
      const [run] = !released ? [] : await finishRun(trx, { id: commit.runId, epoch: commit.epoch, now, ...outcomeValues(outcome) });
      if (!run) {
        // Thrown before anything else is written; the transaction undoes the two statements above.
        const epoch = await currentEpoch(trx, commit.sessionKey);
        throw new SwitchboardError(
          'LEASE_LOST',
          `run ${commit.runId} lost its lease on ${commit.sessionKey} (epoch ${commit.epoch}, now ${epoch ?? 'none'}); its results were not committed`,
        );
      }
      await appendTranscript(trx, commit.sessionKey, commit.transcript, now);
      if (commit.consumedInputIds.length > 0)
        await consumeInputs(trx, commit.consumedInputIds.length, { runId: commit.runId, now, ids: commit.consumedInputIds });
      await endSubagentRun(trx, commit, now, this.dialect);
      if (commit.toolCalls?.length) await settleToolCalls(trx, commit.toolCalls, now);
      for (const step of commit.stepResults ?? []) await settleStepRow(trx, commit.runId, step, now);
      await sessionIdle(trx, { key: commit.sessionKey, now });
      for (const row of commit.outbox) await insertOutbox(trx, row, now, commit.trace);
      const events = [];
      for (const event of commit.events) events.push(await appendEvent(trx, event, now));
      // Read with the lease's row held since the transaction's first statement (CommittedRun.queued).
      const queued = (await anyQueued(trx, { key: commit.sessionKey })).length > 0;
      return { run: toRun(run), events, queued };
    });
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const row = await this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRun(row) : undefined;
  }

  async list(filter: { sessionKey?: string; status?: RunStatus; limit?: number } = {}): Promise<RunRecord[]> {
    let query = this.db.selectFrom('runs').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.status) query = query.where('status', '=', filter.status);
    return (
      await query
        .orderBy('started_at', 'desc')
        .orderBy('id')
        .limit(filter.limit ?? 1000)
        .execute()
    ).map(toRun);
  }

  async usageSince(since: number): Promise<UsageTotal[]> {
    const rows = await this.db
      .selectFrom('runs')
      .select(({ fn }) => [
        'agent_id',
        'model',
        fn.countAll().as('runs'),
        fn.sum('input_tokens').as('input_tokens'),
        fn.sum('output_tokens').as('output_tokens'),
        fn.sum('cached_input_tokens').as('cached_input_tokens'),
      ])
      .where('started_at', '>=', since)
      .groupBy(['agent_id', 'model'])
      .orderBy('agent_id')
      .orderBy('model')
      .execute();
    return rows.map(usageTotal);
  }

  async usageByTime(since: number, bucketMs: number): Promise<UsageSlice[]> {
    if (!Number.isSafeInteger(since) || !Number.isSafeInteger(bucketMs) || bucketMs < 1)
      throw new SwitchboardError('INVALID_REQUEST', `usage slices need whole milliseconds (since ${since}, bucket ${bucketMs})`);
    // Written inline (checked integers above), so that the select and the GROUP BY are one expression on PostgreSQL.
    const at = sql<number>`started_at - ((started_at - ${sql.lit(since)}) % ${sql.lit(bucketMs)})`;
    const rows = await this.db
      .selectFrom('runs')
      .select(({ fn }) => [
        at.as('at'),
        'agent_id',
        'model',
        fn.countAll().as('runs'),
        fn.sum('input_tokens').as('input_tokens'),
        fn.sum('output_tokens').as('output_tokens'),
        fn.sum('cached_input_tokens').as('cached_input_tokens'),
      ])
      .where('started_at', '>=', since)
      .groupBy([at, 'agent_id', 'model'])
      .orderBy(at)
      .orderBy('agent_id')
      .orderBy('model')
      .execute();
    return rows.map((row) => ({ at: Number(row.at), ...usageTotal(row) }));
  }

  recoverOrphans(recovery: OrphanRecovery, now: number): Promise<RecoveryReport> {
    return recoverOrphans(this.db, this.dialect, this.dbNowMs, recovery, now);
  }
}

/** The error code a suspended run is asked to end with (RunStore.requestAbort), read when it resumes. */
const ABORT_REQUESTED = 'ABORT_REQUESTED:';

/** Undoes a start by throwing inside its transaction, with what the start answers. */
class StartConflict extends Error {
  constructor(readonly answer: 'taken' | 'missing') {
    super(`the run did not start: ${answer}`);
  }
}

/** Undoes a resume of a run still suspended in its wait. */
class StillWaiting extends Error {
  constructor() {
    super('the run is suspended in a wait that has not ended');
  }
}

/** One group of runs' summed usage, as both usage queries read it. */
function usageTotal(row: {
  agent_id: string;
  model: string;
  runs: unknown;
  input_tokens: unknown;
  output_tokens: unknown;
  cached_input_tokens: unknown;
}): UsageTotal {
  return {
    agentId: row.agent_id,
    model: row.model,
    runs: Number(row.runs),
    inputTokens: Number(row.input_tokens ?? 0),
    outputTokens: Number(row.output_tokens ?? 0),
    cachedInputTokens: Number(row.cached_input_tokens ?? 0),
  };
}
