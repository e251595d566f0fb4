/** The tool-call ledger over Kysely: one row per side-effecting call, found again by a retried run. */
import type { Kysely, Selectable } from 'kysely';
import type { NewToolCall, SettledToolCall, ToolCallRecord, ToolCallState, ToolCallStore } from '../../ports/index.js';
import { json, num, parse, type Db } from '../sql/rows.js';
import type { Database, ToolCallsTable } from '../schema/database.js';

function toToolCall(row: Selectable<ToolCallsTable>): ToolCallRecord {
  return {
    key: row.key,
    scope: row.scope,
    step: num(row.step),
    index: num(row.call_index),
    tool: row.tool,
    argsHash: row.args_hash,
    sessionKey: row.session_key,
    firstRunId: row.first_run_id,
    runId: row.run_id,
    state: row.state as ToolCallState,
    result: parse(row.result),
    divergedFrom: row.diverged_from,
    calls: num(row.calls),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

/**
 * Records a call, inside the caller's transaction, unless it is already there. A call new at a position
 * that holds another call (a rerun whose model chose other arguments) names the one it diverged from.
 */
export async function recordToolCall(db: Db, call: NewToolCall, now: number, intent: unknown = null): Promise<boolean> {
  const earlier = await db
    .selectFrom('tool_calls')
    .select('key')
    .where('scope', '=', call.scope)
    .where('step', '=', call.step)
    .where('call_index', '=', call.index)
    .where('key', '<>', call.key)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  const inserted = await db
    .insertInto('tool_calls')
    .values({
      key: call.key,
      scope: call.scope,
      step: call.step,
      call_index: call.index,
      tool: call.tool,
      args_hash: call.argsHash,
      session_key: call.sessionKey,
      first_run_id: call.runId,
      run_id: call.runId,
      state: 'started',
      result: intent === null ? null : json(intent),
      diverged_from: earlier?.key ?? null,
      calls: 1,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('key').doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** A run's calls and their results, inside its commit's transaction. */
export async function settleToolCalls(db: Db, settled: readonly SettledToolCall[], now: number): Promise<void> {
  for (const { call, result, rerun } of settled) {
    await recordToolCall(db, call, now);
    await db
      .updateTable('tool_calls')
      .set((eb) => ({
        state: 'completed',
        result: json(result),
        run_id: call.runId,
        calls: rerun ? eb('calls', '+', 1) : eb.ref('calls'),
        updated_at: now,
      }))
      .where('key', '=', call.key)
      .execute();
  }
}

export class KyselyToolCallStore implements ToolCallStore {
  constructor(private readonly db: Kysely<Database>) {}

  async get(key: string): Promise<ToolCallRecord | undefined> {
    const row = await this.db.selectFrom('tool_calls').selectAll().where('key', '=', key).executeTakeFirst();
    return row ? toToolCall(row) : undefined;
  }

  async begin(call: NewToolCall, intent: unknown, now: number): Promise<{ record: ToolCallRecord; earlier: boolean }> {
    const created = await this.db.transaction().execute((trx) => recordToolCall(trx, call, now, intent));
    const record = await this.get(call.key);
    if (!record) throw new Error(`tool call ${call.key} was recorded but cannot be read back`);
    return { record, earlier: !created };
  }

  async list(filter: { sessionKey?: string; runId?: string; limit?: number }): Promise<ToolCallRecord[]> {
    let query = this.db.selectFrom('tool_calls').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.runId) query = query.where((eb) => eb.or([eb('run_id', '=', filter.runId!), eb('first_run_id', '=', filter.runId!)]));
    const rows = await query
      .orderBy('created_at')
      .orderBy('scope')
      .orderBy('step')
      .orderBy('call_index')
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toToolCall);
  }
}
