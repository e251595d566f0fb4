/**
 * Approval requests over Kysely (ports/gates.ts). A request is written once per id (a resumed run finds its own again);
 * an answer and an expiry are each a compare-and-set on `pending`, so that of two racing answers, or an answer racing
 * the expiry, exactly one takes effect. Expiry is on the database's clock.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { ApprovalDecision, ApprovalRecord, ApprovalStatus, ApprovalStore, EventRecord, NewApproval } from '../../ports/index.js';
import { json, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { appendEvent } from '../sql/writes.js';
import type { ApprovalsTable, Database } from '../schema/database.js';

function toApproval(row: Selectable<ApprovalsTable>): ApprovalRecord {
  return {
    id: row.id,
    kind: row.kind as ApprovalRecord['kind'],
    status: row.status as ApprovalStatus,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    runId: row.run_id,
    step: num(row.step),
    index: num(row.call_index),
    toolCallId: row.tool_call_id,
    subject: row.subject,
    args: parse(row.args),
    details: parse<Record<string, unknown>>(row.details),
    reason: row.reason,
    editable: num(row.editable) === 1,
    onExpiry: row.on_expiry as ApprovalRecord['onExpiry'],
    requestedAt: num(row.requested_at),
    expiresAt: num(row.expires_at),
    decidedAt: numOrNull(row.decided_at),
    decidedBy: row.decided_by,
    note: row.note,
    editedArgs: parse(row.edited_args),
  };
}

function decidedEvent(db: Db, approval: ApprovalRecord, now: number): Promise<EventRecord> {
  return appendEvent(
    db,
    {
      type: 'approval.decided',
      sessionKey: approval.sessionKey,
      runId: approval.runId,
      payload: {
        approvalId: approval.id,
        kind: approval.kind,
        subject: approval.subject,
        status: approval.status,
        decidedBy: approval.decidedBy,
        note: approval.note,
        edited: approval.editedArgs !== null,
      },
    },
    now,
  );
}

export class KyselyApprovalStore implements ApprovalStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dbNowMs: () => RawBuilder<number>,
  ) {}

  request(approval: NewApproval, now: number): Promise<{ approval: ApprovalRecord; event?: EventRecord }> {
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('approvals')
        .values({
          id: approval.id,
          kind: approval.kind,
          status: 'pending',
          agent_id: approval.agentId,
          session_key: approval.sessionKey,
          run_id: approval.runId,
          step: approval.step,
          call_index: approval.index,
          tool_call_id: approval.toolCallId,
          subject: approval.subject,
          args: json(approval.args),
          details: json(approval.details),
          reason: approval.reason,
          editable: approval.editable ? 1 : 0,
          on_expiry: approval.onExpiry,
          // On the database's clock, as the expiry that compares with it.
          requested_at: this.dbNowMs(),
          expires_at: sql<number>`${this.dbNowMs()} + ${approval.ttlMs}`,
          decided_at: null,
          decided_by: null,
          note: null,
          edited_args: null,
        })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!inserted) {
        const row = await trx.selectFrom('approvals').selectAll().where('id', '=', approval.id).executeTakeFirstOrThrow();
        return { approval: toApproval(row) };
      }
      const record = toApproval(inserted);
      const event = await appendEvent(
        trx,
        {
          type: 'approval.requested',
          sessionKey: record.sessionKey,
          runId: record.runId,
          payload: { approvalId: record.id, kind: record.kind, subject: record.subject, step: record.step, expiresAt: record.expiresAt },
        },
        now,
      );
      return { approval: record, event };
    });
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const row = await this.db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toApproval(row);
  }

  async list(filter: { status?: ApprovalStatus; sessionKey?: string; limit?: number }): Promise<ApprovalRecord[]> {
    let query = this.db.selectFrom('approvals').selectAll();
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.sessionKey) query = query.where('session_key', '=', filter.sessionKey);
    const rows = await query
      .orderBy('requested_at', 'desc')
      .orderBy('id')
      .limit(filter.limit ?? 100)
      .execute();
    return rows.map(toApproval);
  }

  decide(id: string, decision: ApprovalDecision, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('approvals')
        .set({
          status: decision.approve ? 'approved' : 'denied',
          decided_at: now,
          decided_by: decision.by,
          note: decision.note ?? null,
          edited_args: decision.approve && decision.editedArgs !== undefined ? json(decision.editedArgs) : null,
        })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      const approval = toApproval(row);
      return { approval, event: await decidedEvent(trx, approval, now) };
    });
  }

  expire(id: string, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('approvals')
        .set({ status: 'expired', decided_at: now, decided_by: 'expiry' })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .where('expires_at', '<=', this.dbNowMs())
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      const approval = toApproval(row);
      return { approval, event: await decidedEvent(trx, approval, now) };
    });
  }

  async pendingCount(): Promise<number> {
    const row = await this.db
      .selectFrom('approvals')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return num(row.count);
  }
}
