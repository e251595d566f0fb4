/** The tool-call ledger over Kysely: one row per side-effecting call, found again by a retried run. */
import type { Kysely, Selectable } from 'kysely';
import type { NewToolCall, ToolCallRecord, ToolCallState, ToolCallStore } from '../ports.js';
import { json, num, parse } from './kysely-rows.js';
import type { Database, ToolCallsTable } from './schema.js';

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

export class KyselyToolCallStore implements ToolCallStore {
  constructor(private readonly db: Kysely<Database>) {}

  begin(call: NewToolCall, now: number): Promise<{ record: ToolCallRecord; created: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      const earlier = await trx
        .selectFrom('tool_calls')
        .select('key')
        .where('scope', '=', call.scope)
        .where('step', '=', call.step)
        .where('call_index', '=', call.index)
        .where('key', '<>', call.key)
        .orderBy('created_at', 'desc')
        .executeTakeFirst();
      const row = {
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
        result: null,
        diverged_from: earlier?.key ?? null,
        calls: 1,
        created_at: now,
        updated_at: now,
      };
      const inserted = await trx.insertInto('tool_calls').values(row).onConflict((oc) => oc.column('key').doNothing()).executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return { record: toToolCall(row), created: true };
      await trx.updateTable('tool_calls').set((eb) => ({ calls: eb('calls', '+', 1), run_id: call.runId, updated_at: now })).where('key', '=', call.key).execute();
      const existing = await trx.selectFrom('tool_calls').selectAll().where('key', '=', call.key).executeTakeFirstOrThrow();
      return { record: toToolCall(existing), created: false };
    });
  }

  async complete(key: string, runId: string, result: unknown, now: number): Promise<void> {
    await this.db.updateTable('tool_calls').set({ state: 'completed', run_id: runId, result: json(result), updated_at: now }).where('key', '=', key).execute();
  }

  async get(key: string): Promise<ToolCallRecord | undefined> {
    const row = await this.db.selectFrom('tool_calls').selectAll().where('key', '=', key).executeTakeFirst();
    return row ? toToolCall(row) : undefined;
  }

  async list(filter: { sessionKey?: string; runId?: string; limit?: number }): Promise<ToolCallRecord[]> {
    let query = this.db.selectFrom('tool_calls').selectAll();
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    if (filter.runId) query = query.where((eb) => eb.or([eb('run_id', '=', filter.runId!), eb('first_run_id', '=', filter.runId!)]));
    const rows = await query.orderBy('created_at').orderBy('scope').orderBy('step').orderBy('call_index').limit(filter.limit ?? 1000).execute();
    return rows.map(toToolCall);
  }
}
