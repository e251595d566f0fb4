/**
 * A run's steps over Kysely (ports/steps.ts). Every write is fenced by the run's row: it holds only while the run is
 * `running` at the writer's epoch, checked by the UPDATE that adds the step's usage to the run (a compare-and-set that
 * holds the run's row to the commit, so a recovery that fences the run off waits for it or finds it fenced).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type {
  EventRecord,
  ForkedRun,
  ForkRequest,
  NewStep,
  RunStepStore,
  SettledToolCall,
  StepRecord,
  StepToolResult,
} from '../../ports/index.js';
import { json, newRunRow, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { prepared } from '../sql/prepared.js';
import { appendEvent, type Relax } from '../sql/writes.js';
import { settleToolCalls } from '../tool-calls/tool-call-store.js';
import type { Database, RunStepsTable, RunsTable } from '../schema/database.js';

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

const FENCE = (db: Db, param: (name: 'id' | 'epoch') => never) =>
  db.updateTable('runs').where('id', '=', param('id')).where('epoch', '=', param('epoch')).where('status', '=', 'running');

/** The step's usage added to its run, only while the run is running at `epoch`: the fence of a step's commit. */
const addToRun = prepared<
  'id' | 'epoch' | 'inputTokens' | 'outputTokens' | 'cachedInputTokens' | 'bytes' | 'systemBytes' | 'toolBytes',
  { id: string }
>((db, param) =>
  FENCE(db, param)
    .set({
      input_tokens: sql`input_tokens + ${param('inputTokens')}`,
      output_tokens: sql`output_tokens + ${param('outputTokens')}`,
      cached_input_tokens: sql`cached_input_tokens + ${param('cachedInputTokens')}`,
      request_bytes: sql`request_bytes + ${param('bytes')}`,
      request_system_bytes: sql`request_system_bytes + ${param('systemBytes')}`,
      request_tool_bytes: sql`request_tool_bytes + ${param('toolBytes')}`,
      model_calls: sql`model_calls + 1`,
      steps: sql`steps + 1`,
    })
    .returning('id'),
);

/** The fence alone: the run's row, held, while it is running at `epoch`. */
const holdRun = prepared<'id' | 'epoch', { id: string }>((db, param) =>
  FENCE(db, param)
    .set({ epoch: param('epoch') })
    .returning('id'),
);

const insertStep = prepared<keyof RunStepsTable, never>((db, param) =>
  db.insertInto('run_steps').values({
    run_id: param('run_id'),
    step: param('step'),
    attempt: param('attempt'),
    session_key: param('session_key'),
    model: param('model'),
    response: param('response'),
    tool_names: param('tool_names'),
    input_ids: param('input_ids'),
    results: param('results'),
    input_tokens: param('input_tokens'),
    output_tokens: param('output_tokens'),
    cached_input_tokens: param('cached_input_tokens'),
    request_bytes: param('request_bytes'),
    request_system_bytes: param('request_system_bytes'),
    request_tool_bytes: param('request_tool_bytes'),
    started_at: param('started_at'),
    answered_at: param('answered_at'),
    settled_at: param('settled_at'),
  }),
);

/**
 * A step's results, once: a step settled already keeps its first. Results of only some of its calls (a run that
 * suspended while another call of the step waited) leave it unsettled (`settledAt` null), to be completed later.
 */
const settleStep = prepared<'runId' | 'step' | 'results' | 'settledAt', never>((db, param) =>
  db
    .updateTable('run_steps')
    .set({ results: param('results'), settled_at: param('settledAt') })
    .where('run_id', '=', param('runId'))
    .where('step', '=', param('step'))
    .where('settled_at', 'is', null),
);

/** Commits a step's results inside the caller's transaction (a run's commit holds those it left to it). */
export function settleStepRow(trx: Db, runId: string, step: { step: number; results: StepToolResult[] }, now: number): Promise<never[]> {
  return settleStep(trx, { runId, step: step.step, results: json(step.results), settledAt: now });
}

export class KyselyRunStepStore implements RunStepStore {
  constructor(
    private readonly db: Kysely<Database>,
    /**
     * A step's writes are internal (see `Relax`): every effect a step's tools make is a durable write (a ledger row, an
     * input, a spawn) whose commit and sync cover the step. A step lost with the process before then is asked again, as
     * the step in flight is. Its `run.step` event is published at once, as a run's `run.started` is.
     */
    private readonly relax?: Relax,
  ) {}

  record(step: NewStep, now: number): Promise<EventRecord> {
    return this.db.transaction().execute(async (trx) => {
      this.relax?.();
      const { usage, request } = step;
      const fenced = await addToRun(trx, { id: step.runId, epoch: step.epoch, ...usage, ...request });
      if (fenced.length === 0) throw leaseLost(step.runId, step.epoch);
      // The step before, when its results were left to this commit (its tools have no effects: ports/steps.ts).
      if (step.previous) await settleStepRow(trx, step.runId, step.previous, now);
      await insertStep(trx, {
        run_id: step.runId,
        step: step.step,
        attempt: step.attempt,
        session_key: step.sessionKey,
        model: step.model,
        response: json(step.response),
        tool_names: json(step.toolNames),
        input_ids: json(step.inputIds),
        results: null,
        input_tokens: usage.inputTokens,
        output_tokens: usage.outputTokens,
        cached_input_tokens: usage.cachedInputTokens,
        request_bytes: request.bytes,
        request_system_bytes: request.systemBytes,
        request_tool_bytes: request.toolBytes,
        started_at: step.startedAt,
        answered_at: now,
        settled_at: null,
      });
      const payload = {
        step: step.step,
        attempt: step.attempt,
        model: step.model,
        tools: step.toolNames,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        ms: now - step.startedAt,
      };
      return appendEvent(trx, { type: 'run.step', sessionKey: step.sessionKey, runId: step.runId, payload }, now);
    });
  }

  async settle(
    step: { runId: string; epoch: number; step: number; results: StepToolResult[]; toolCalls: SettledToolCall[]; partial?: boolean },
    now: number,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      this.relax?.();
      if ((await holdRun(trx, { id: step.runId, epoch: step.epoch })).length === 0) throw leaseLost(step.runId, step.epoch);
      const settledAt = step.partial ? null : now;
      await settleStep(trx, { runId: step.runId, step: step.step, results: json(step.results), settledAt });
      if (step.toolCalls.length > 0) await settleToolCalls(trx, step.toolCalls, now);
    });
  }

  async list(runId: string): Promise<StepRecord[]> {
    const rows = await this.db.selectFrom('run_steps').selectAll().where('run_id', '=', runId).orderBy('step').execute();
    return rows.map(toStep);
  }

  fork(request: ForkRequest, now: number): Promise<ForkedRun> {
    return this.db.transaction().execute(async (trx) => {
      const source = await trx.selectFrom('runs').selectAll().where('id', '=', request.fromRunId).executeTakeFirst();
      if (!source) throw new SwitchboardError('RUN_NOT_FOUND', `no run "${request.fromRunId}" (list them with "switchboard runs list")`);
      const rows = await trx.selectFrom('run_steps').selectAll().where('run_id', '=', source.id).orderBy('step').execute();
      const steps = rows.map(toStep);
      const kept = keptSteps(source.id, steps, request.step);
      const { sessionKey, runId } = request;

      const [session] = await trx
        .insertInto('sessions')
        .values({
          key: sessionKey,
          agent_id: source.agent_id,
          label: null,
          parent_key: null,
          depth: 0,
          route: null,
          state: 'idle',
          created_at: now,
          updated_at: now,
          last_run_at: null,
        })
        .onConflict((oc) => oc.column('key').doNothing())
        .returning('key')
        .execute();
      if (!session)
        throw new SwitchboardError('INVALID_REQUEST', `session "${sessionKey}" exists already; fork again (a new run id makes a new key)`);
      await copyHistory(trx, source, sessionKey);

      // The inputs the kept steps read: the run's own (step 0 names them, with any steered in before it), then those
      // steered in before a later kept step. Queued and naming the new run, as a suspended run's inputs are.
      const oldIds = [...steps[0].inputIds, ...kept.slice(1).flatMap((step) => step.inputIds)];
      const newIds = new Map(oldIds.map((id) => [id, request.newId()]));
      const originals = new Map(
        oldIds.length === 0
          ? []
          : (await trx.selectFrom('inputs').selectAll().where('id', 'in', oldIds).execute()).map((row) => [row.id, row]),
      );
      const copies = [...newIds].map(([id, copyId]) => {
        const original = originals.get(id);
        if (!original)
          throw new SwitchboardError(
            'INVALID_REQUEST',
            `input ${id}, which run ${source.id} read, no longer exists; the run cannot be forked`,
          );
        return {
          id: copyId,
          session_key: sessionKey,
          idempotency_key: `fork:${runId}:${id}`,
          mode: original.mode,
          status: 'queued',
          attempts: 0,
          text: original.text,
          provenance: original.provenance,
          run_id: runId,
          // A note is shown to the model with its input: the fork's reads as the source's first attempt read it.
          note: null,
          created_at: now,
          updated_at: now,
        };
      });
      if (copies.length > 0) await trx.insertInto('inputs').values(copies).execute();

      await trx
        .insertInto('runs')
        .values({
          ...newRunRow({
            id: runId,
            sessionKey,
            agentId: source.agent_id,
            status: 'suspended',
            owner: request.owner,
            epoch: 0,
            model: source.model,
            now,
          }),
          error_message: `forked from run ${source.id} at step ${request.step}; it resumes in its session`,
          // The resume makes it one more than every copied step's: `runs show` marks them all replayed.
          attempt: Math.max(1, ...kept.map((step) => step.attempt)),
        })
        .execute();
      if (kept.length > 0)
        await trx
          .insertInto('run_steps')
          .values(
            kept.map((step) => ({
              run_id: runId,
              step: step.step,
              attempt: step.attempt,
              session_key: sessionKey,
              model: step.model,
              response: json(step.response),
              tool_names: json(step.toolNames),
              input_ids: json(step.inputIds.map((id) => newIds.get(id) ?? id)),
              results: json(step.results),
              // What the fork spent on the step: nothing (see RunStepStore.fork).
              input_tokens: 0,
              output_tokens: 0,
              cached_input_tokens: 0,
              request_bytes: 0,
              request_system_bytes: 0,
              request_tool_bytes: 0,
              started_at: step.startedAt,
              answered_at: step.answeredAt,
              settled_at: step.settledAt,
            })),
          )
          .execute();
      const event = await appendEvent(
        trx,
        {
          type: 'run.forked',
          sessionKey,
          runId,
          payload: { fromRun: source.id, fromSession: source.session_key, fromStep: request.step, sessionKey },
        },
        now,
      );
      return { sessionKey, runId, inputIds: [...newIds.values()], event };
    });
  }
}

/** The steps a fork at `step` keeps (0 to `step` - 1), each with its results committed; else what to do instead. */
function keptSteps(runId: string, steps: StepRecord[], step: number): StepRecord[] {
  if (!Number.isInteger(step) || step < 0)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `step: expected a whole number of 0 or more (how many of the run's steps to keep), got ${step}`,
    );
  // The highest step a fork may be at: every step before it settled.
  const firstUnsettled = steps.findIndex((candidate, index) => candidate.step !== index || candidate.settledAt === null);
  const forkable = firstUnsettled < 0 ? steps.length : firstUnsettled;
  if (steps.length === 0)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `run ${runId} committed no steps (a run that answered in its first model call, or ran with durability "run", has none), so there is no state to fork from; send its input again instead`,
    );
  if (step > steps.length)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `run ${runId} has ${steps.length} committed step(s), 0 to ${steps.length - 1} ("switchboard runs show ${runId}" lists them): fork it at --step 0 to ${forkable}`,
    );
  const unsettled = steps.slice(0, step).find((candidate) => candidate.settledAt === null);
  if (unsettled)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `step ${unsettled.step} of run ${runId} has no committed results (its tools were cut off before they answered), so the state after it is not known: fork it at --step ${unsettled.step} or lower, which asks the model again from that step`,
    );
  return steps.slice(0, step);
}

/**
 * Copies into `sessionKey` the transcript the run's session had before the run: the entries before the run's first
 * (its commit writes them together), or, for a run that wrote none (one that is suspended, running, or was interrupted),
 * those written by the time it started. In seq order, so the copies keep it.
 */
async function copyHistory(trx: Db, run: Selectable<RunsTable>, sessionKey: string): Promise<void> {
  const [first] = await trx
    .selectFrom('transcript')
    .select((eb) => eb.fn.min('seq').as('seq'))
    .where('session_key', '=', run.session_key)
    .where('run_id', '=', run.id)
    .execute();
  const firstSeq = first?.seq === null || first?.seq === undefined ? undefined : num(first.seq);
  const before = trx
    .selectFrom('transcript')
    .select([sql<string>`${sessionKey}`.as('session_key'), 'role', 'content', 'provenance', 'input_id', 'run_id', 'created_at'])
    .where('session_key', '=', run.session_key)
    .where((eb) => (firstSeq === undefined ? eb('created_at', '<=', num(run.started_at)) : eb('seq', '<', firstSeq)))
    .orderBy('seq');
  await trx
    .insertInto('transcript')
    .columns(['session_key', 'role', 'content', 'provenance', 'input_id', 'run_id', 'created_at'])
    .expression(before)
    .execute();
}
