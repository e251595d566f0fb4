/**
 * Approval requests over Kysely (ports/gates.ts). A request is written once per id (a resumed run finds its own again);
 * an answer and an expiry are each a compare-and-set on `pending`, so that of two racing answers, or an answer racing
 * the expiry, exactly one takes effect. Expiry is on the database's clock.
 */
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type {
  ApprovalDecision,
  ApprovalRecord,
  ApprovalStatus,
  ApprovalStore,
  BudgetAmount,
  EventRecord,
  NewApproval,
} from '../../ports/index.js';
import { raiseCap } from './budget-store.js';
import { json, num, numOrNull, parse, type Db } from '../sql/rows.js';
import { appendEvent } from '../sql/writes.js';
import type { ApprovalsTable, Database, RunsTable } from '../schema/database.js';

/** A pending request's run is still live (no run row: asked from outside a run). */
const LIVE_RUN = ['running', 'suspended'];

/** A request as stored, its run's status beside it: a pending request whose run ended before an answer is `closed`. */
function toApproval(row: Selectable<ApprovalsTable> & { run_status?: string | null }): ApprovalRecord {
  const closed = row.status === 'pending' && row.run_status != null && !LIVE_RUN.includes(row.run_status);
  return {
    id: row.id,
    kind: row.kind as ApprovalRecord['kind'],
    status: closed ? 'closed' : (row.status as ApprovalStatus),
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
        // A raise wakes every run waiting on the cap, not only the one that asked.
        ...(approval.kind === 'budget' ? { budgetKey: approval.subject } : {}),
      },
    },
    now,
  );
}

/** The request's run is live, or it has no run row. */
const liveRun = (eb: ExpressionBuilder<Database & { runs: RunsTable }, 'approvals' | 'runs'>) =>
  eb.or([eb('runs.status', 'is', null), eb('runs.status', 'in', LIVE_RUN)]);

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
    const row = await this.withRuns().where('approvals.id', '=', id).executeTakeFirst();
    return row && toApproval(row);
  }

  async list(filter: { status?: ApprovalStatus; sessionKey?: string; limit?: number }): Promise<ApprovalRecord[]> {
    let query = this.withRuns();
    if (filter.status === 'pending') query = query.where('approvals.status', '=', 'pending').where(liveRun);
    else if (filter.status === 'closed') query = query.where('approvals.status', '=', 'pending').where((eb) => eb.not(liveRun(eb)));
    else if (filter.status) query = query.where('approvals.status', '=', filter.status);
    if (filter.sessionKey) query = query.where('approvals.session_key', '=', filter.sessionKey);
    const rows = await query
      .orderBy('approvals.requested_at', 'desc')
      .orderBy('approvals.id')
      .limit(filter.limit ?? 100)
      .execute();
    return rows.map(toApproval);
  }

  /** The requests with their run's status. */
  private withRuns() {
    return this.db
      .selectFrom('approvals')
      .leftJoin('runs', 'runs.id', 'approvals.run_id')
      .selectAll('approvals')
      .select('runs.status as run_status');
  }

  decide(
    id: string,
    decision: ApprovalDecision,
    now: number,
    raise?: { key: string; limit: Partial<BudgetAmount> },
  ): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
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
        // Past its expiry (on the database's clock) a request takes no answer: it is expired, whether marked so yet or not.
        .where('expires_at', '>', this.dbNowMs())
        // Nothing waits for an answer once the run that asked has ended.
        .where((eb) =>
          eb.not(
            eb.exists(
              eb.selectFrom('runs').select('runs.id').whereRef('runs.id', '=', 'approvals.run_id').where('runs.status', 'not in', LIVE_RUN),
            ),
          ),
        )
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      const approval = toApproval(row);
      // A raise takes effect with its approval, and only with it.
      if (raise && approval.status === 'approved') await raiseCap(trx, raise.key, raise.limit, now);
      return { approval, event: await decidedEvent(trx, approval, now) };
    });
  }

  withdraw(id: string, why: string, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
    return this.end(id, { decided_by: 'withdrawn', note: why }, false, now);
  }

  expire(id: string, now: number): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
    return this.end(id, { decided_by: 'expiry' }, true, now);
  }

  /** Marks a pending request expired (only once its time has passed on the database's clock, when `due`), with its event. */
  private end(
    id: string,
    by: { decided_by: string; note?: string },
    due: boolean,
    now: number,
  ): Promise<{ approval: ApprovalRecord; event: EventRecord } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      let update = trx
        .updateTable('approvals')
        .set({ status: 'expired', decided_at: now, ...by })
        .where('id', '=', id)
        .where('status', '=', 'pending');
      if (due) update = update.where('expires_at', '<=', this.dbNowMs());
      const row = await update.returningAll().executeTakeFirst();
      if (!row) return undefined;
      const approval = toApproval(row);
      return { approval, event: await decidedEvent(trx, approval, now) };
    });
  }

  async pendingCount(): Promise<number> {
    const row = await this.db
      .selectFrom('approvals')
      .leftJoin('runs', 'runs.id', 'approvals.run_id')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('approvals.status', '=', 'pending')
      .where(liveRun)
      .executeTakeFirstOrThrow();
    return num(row.count);
  }
}
