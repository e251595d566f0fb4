/**
 * The run store on PostgreSQL: a run's start and its commit each in one round trip, through the functions of
 * migrations 0013 and 0019-0022 (migrations.ts), which write what the portable transactions write. A start for a
 * sub-agent's run, and a commit that settles a sub-agent or records tool calls, are left to the portable path
 * (runs/run-store.ts): KyselyRunStore is handed these paths and takes each one that answers.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type { CommittedRun, NewRun, RunCommit, StartedRun } from '../../ports/index.js';
import { outcomeValues, type RunFastPaths } from '../runs/run-store.js';
import { json, toEvent, toInput, toRun, toSession, toTranscript } from '../sql/rows.js';
import { COMMIT_LEASE_LOST, START_NO_SESSION, START_TAKEN } from './migrations.js';
import type { Database, EventsTable, InputsTable, RunsTable, SessionsTable, TranscriptTable } from '../schema/database.js';
import { withSenderPayload } from '../../kit/trace-context.js';

const codeOf = (error: unknown) => (error as { code?: string }).code;

export class PostgresRunPaths implements RunFastPaths {
  constructor(private readonly db: Kysely<Database>) {}

  start(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'> | undefined {
    return run.subagentId ? undefined : this.startInOneCall(run, now);
  }

  commit(commit: RunCommit, now: number): Promise<CommittedRun> | undefined {
    return commit.subagent || commit.toolCalls?.length || commit.stepResults?.length ? undefined : this.commitInOneCall(commit, now);
  }

  private async startInOneCall(run: NewRun, now: number): Promise<StartedRun | 'leased' | 'taken' | 'missing'> {
    const payload = json({ inputIds: run.inputIds, model: run.model });
    let answer:
      | { status: 'leased' }
      | {
          status: 'started';
          epoch: number;
          inputs: Selectable<InputsTable>[];
          event: Selectable<EventsTable>;
          session: Selectable<SessionsTable>;
          // Both come with a history limit, neither without one.
          history: Selectable<TranscriptTable>[] | null;
          reachedOut: { spawned: boolean; sent: boolean } | null;
        };
    try {
      const { rows } = await sql<{ answer: typeof answer }>`SELECT sb_start_run_history(${run.sessionKey}, ${run.owner},
        ${run.leaseTtlMs}, ${run.id}, ${run.agentId}, ${run.model}, ${now}, ${run.inputIds}::text[], ${payload},
        ${run.historyLimit ?? null}::integer) AS answer`.execute(this.db);
      answer = rows[0]!.answer;
    } catch (error) {
      if (codeOf(error) === START_TAKEN) return 'taken';
      if (codeOf(error) === START_NO_SESSION) return 'missing';
      throw error;
    }
    if (answer.status === 'leased') return 'leased';
    return {
      epoch: answer.epoch,
      inputs: answer.inputs.map(toInput),
      events: [toEvent(answer.event)],
      session: toSession(answer.session),
      ...(answer.history && answer.reachedOut ? { history: answer.history.map(toTranscript), reachedOut: answer.reachedOut } : {}),
    };
  }

  private async commitInOneCall(commit: RunCommit, now: number): Promise<CommittedRun> {
    const values = outcomeValues(commit.outcome);
    const transcript = commit.transcript.map((entry) => ({
      role: entry.role,
      content: json(entry.content),
      provenance: entry.provenance ? json(entry.provenance) : null,
      inputId: entry.inputId,
      runId: entry.runId,
    }));
    const outbox = commit.outbox.map((row) => ({ ...row, payload: json(withSenderPayload(row.payload, commit.trace)) }));
    const events = commit.events.map((event) => ({
      type: event.type,
      sessionKey: event.sessionKey ?? null,
      runId: event.runId ?? null,
      payload: json(event.payload ?? {}),
    }));
    try {
      const { rows } = await sql<{
        answer: { run: Selectable<RunsTable>; events: Selectable<EventsTable>[]; queued: boolean };
      }>`SELECT sb_commit_run_queued(
        ${commit.runId}, ${commit.sessionKey}, ${commit.epoch}, ${now}, ${JSON.stringify(values)}::json, ${JSON.stringify(transcript)}::json,
        ${commit.consumedInputIds}::text[], ${JSON.stringify(outbox)}::json, ${JSON.stringify(events)}::json) AS answer`.execute(this.db);
      const { run, events: appended, queued } = rows[0]!.answer;
      return { run: toRun(run), events: appended.map(toEvent), queued };
    } catch (error) {
      if (codeOf(error) !== COMMIT_LEASE_LOST) throw error;
      throw new SwitchboardError(
        'LEASE_LOST',
        `run ${commit.runId} lost its lease on ${commit.sessionKey} (epoch ${commit.epoch}, now ${(error as Error).message}); its results were not committed`,
      );
    }
  }
}
