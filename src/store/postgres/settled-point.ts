/**
 * How far a table with a sequence-numbered log (the journal, the board's event log) can be read without skipping a
 * row that commits late. On PostgreSQL a sequence's numbers are not its commit order: a number taken later can commit
 * first, and a reader that moved past the earlier one would never see it. The settled point is the highest number
 * at and below which every transaction has ended. Each row's transaction takes its xid before its number (the
 * column's default, migrations 0011 and 0012), so the numbers handed out by the time the sequence's `last_value` is
 * read belong to transactions whose xids are below the xmax of a snapshot taken after; they have all ended once a
 * later snapshot's xmin reaches that xmax (at once, when no transaction runs). A rolled-back number leaves a hole that
 * settles the same way. (SQLite has one writer: its newest row is settled, sqlite/sqlite-dialect.ts.)
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema/database.js';
import type { SettledPoint } from '../sql/dialect.js';

export class SnapshotSettledPoint implements SettledPoint {
  /** Numbers taken by then, each waiting for the transactions running then to end. */
  private readonly unsettled: { seq: number; xmax: bigint }[] = [];
  private settledSeq = 0;

  constructor(
    private readonly db: Kysely<Database>,
    /** The sequence behind the log's numbers. */
    private readonly sequence: string,
  ) {}

  /** The settled point, and whether numbers above it are still waiting for their transactions. */
  async read(): Promise<{ seq: number; unsettled: boolean }> {
    const taken = await sql<{
      last_value: string;
      is_called: boolean;
    }>`SELECT last_value, is_called FROM ${sql.table(this.sequence)}`.execute(this.db);
    const last = taken.rows[0]!.is_called ? Number(taken.rows[0]!.last_value) : 0;
    const snapshot = await sql<{ xmin: string; xmax: string }>`
      SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax`.execute(this.db);
    const xmin = BigInt(snapshot.rows[0]!.xmin);
    const xmax = BigInt(snapshot.rows[0]!.xmax);
    if (last > (this.unsettled.at(-1)?.seq ?? this.settledSeq)) this.unsettled.push({ seq: last, xmax });
    while (this.unsettled.length > 0 && this.unsettled[0]!.xmax <= xmin)
      this.settledSeq = Math.max(this.settledSeq, this.unsettled.shift()!.seq);
    return { seq: this.settledSeq, unsettled: this.unsettled.length > 0 };
  }
}
