/**
 * A run's steps over Kysely (ports/steps.ts). Every write is fenced by the run's row: it holds only while the run is
 * `running` at the writer's epoch, checked by the UPDATE that adds the step's usage to the run (a compare-and-set that
 * holds the run's row to the commit, so a recovery that fences the run off waits for it or finds it fenced).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type { EventRecord, NewStep, RunStepStore, SettledToolCall, StepRecord, StepToolResult } from '../../ports/index.js';
import { json, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { appendEvent } from '../sql/writes.js';
import { settleToolCalls } from '../tool-calls/tool-call-store.js';
import type { Database, RunStepsTable } from '../schema/database.js';

function toStep(row: Selectable<RunStepsTable>): StepRecord {
  return {
    runId: row.run_id,
    sessionKey: row.session_key,
    step: num(row.step),
    attempt: num(row.attempt),
    model: row.model,
    response: parse(row.response),
    toolNames: parse<string[]>(row.tool_names),
    inputIds: parse<string[]>(row.input_ids),
    results: parse<StepToolResult[] | null>(row.results),
    usage: { inputTokens: num(row.input_tokens), outputTokens: num(row.output_tokens), cachedInputTokens: num(row.cached_input_tokens) },
    request: { bytes: num(row.request_bytes), systemBytes: num(row.request_system_bytes), toolBytes: num(row.request_tool_bytes) },
    startedAt: num(row.started_at),
    answeredAt: num(row.answered_at),
    settledAt: numOrNull(row.settled_at),
  };
}

function leaseLost(runId: string, epoch: number): SwitchboardError {
  return new SwitchboardError(
    'LEASE_LOST',
    `run ${runId} is no longer running at epoch ${epoch} (recovered, resumed or taken over elsewhere); its step was not committed`,
  );
}

/** The run's row, only while it is running at `epoch`: the fence of every step write. */
async function fenceRun(
  trx: Db,
  runId: string,
  epoch: number,
  usage?: NewStep['usage'] & { bytes: number; systemBytes: number; toolBytes: number },
) {
  const update = trx
    .updateTable('runs')
    .set(
      usage
        ? {
            input_tokens: sql`input_tokens + ${usage.inputTokens}`,
            output_tokens: sql`output_tokens + ${usage.outputTokens}`,
            cached_input_tokens: sql`cached_input_tokens + ${usage.cachedInputTokens}`,
            request_bytes: sql`request_bytes + ${usage.bytes}`,
            request_system_bytes: sql`request_system_bytes + ${usage.systemBytes}`,
            request_tool_bytes: sql`request_tool_bytes + ${usage.toolBytes}`,
            model_calls: sql`model_calls + 1`,
            steps: sql`steps + 1`,
          }
        : { epoch },
    )
    .where('id', '=', runId)
    .where('epoch', '=', epoch)
    .where('status', '=', 'running');
  if ((await update.returning('id').execute()).length === 0) throw leaseLost(runId, epoch);
}

export class KyselyRunStepStore implements RunStepStore {
  constructor(private readonly db: Kysely<Database>) {}

  record(step: NewStep, now: number): Promise<EventRecord> {
    return this.db.transaction().execute(async (trx) => {
      await fenceRun(trx, step.runId, step.epoch, { ...step.usage, ...step.request });
      await trx
        .insertInto('run_steps')
        .values({
          run_id: step.runId,
          step: step.step,
          attempt: step.attempt,
          session_key: step.sessionKey,
          model: step.model,
          response: json(step.response),
          tool_names: json(step.toolNames),
          input_ids: json(step.inputIds),
          results: null,
          input_tokens: step.usage.inputTokens,
          output_tokens: step.usage.outputTokens,
          cached_input_tokens: step.usage.cachedInputTokens,
          request_bytes: step.request.bytes,
          request_system_bytes: step.request.systemBytes,
          request_tool_bytes: step.request.toolBytes,
          started_at: step.startedAt,
          answered_at: now,
          settled_at: null,
        })
        .execute();
      return appendEvent(
        trx,
        {
          type: 'run.step',
          sessionKey: step.sessionKey,
          runId: step.runId,
          payload: {
            step: step.step,
            attempt: step.attempt,
            model: step.model,
            tools: step.toolNames,
            inputTokens: step.usage.inputTokens,
            outputTokens: step.usage.outputTokens,
            ms: now - step.startedAt,
          },
        },
        now,
      );
    });
  }

  async settle(
    step: { runId: string; epoch: number; step: number; results: StepToolResult[]; toolCalls: SettledToolCall[] },
    now: number,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await fenceRun(trx, step.runId, step.epoch);
      await trx
        .updateTable('run_steps')
        .set({ results: json(step.results), settled_at: now })
        .where('run_id', '=', step.runId)
        .where('step', '=', step.step)
        .where('results', 'is', null)
        .execute();
      if (step.toolCalls.length > 0) await settleToolCalls(trx, step.toolCalls, now);
    });
  }

  async list(runId: string): Promise<StepRecord[]> {
    const rows = await this.db.selectFrom('run_steps').selectAll().where('run_id', '=', runId).orderBy('step').execute();
    return rows.map(toStep);
  }
}
