/**
 * Moving an installation between stores (`switchboard store copy`): every table of one store copied into another,
 * empty one, in pages, with each serial column's sequence moved on past what was copied, then the row counts of both
 * compared table by table. Both stores are at this build's schema (opening them migrates them).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

/** Every table of the store (the record's type makes leaving one out a compile error), and whether it is numbered by a sequence. */
const TABLES = {
  sessions: false,
  inputs: true,
  transcript: true,
  runs: false,
  outbox: false,
  session_lease: false,
  events: true,
  exchanges: false,
  a2a_tasks: false,
  a2a_task_events: true,
  a2a_push_configs: false,
  a2a_remote_tasks: false,
  subagents: false,
  tool_calls: false,
  run_steps: false,
  rate_marks: false,
  board_tasks: false,
  board_deps: false,
  board_comments: true,
  board_attempts: false,
  board_events: true,
  board_leases: false,
  gateways: false,
  shared_secrets: false,
  memory_docs: false,
  memory_chunks: true,
  mailbox_reservations: false,
  team_states: false,
  approvals: false,
  budget_spend: false,
  budget_holds: false,
  channel_senders: false,
  channel_parts: false,
  schedule_anchors: false,
  schedule_slots: false,
} as const satisfies Record<keyof Database, boolean>;

export type TableName = keyof typeof TABLES;
export const STORE_TABLES = Object.keys(TABLES) as TableName[];

const PAGE = 1000;

export interface TableCopy {
  table: TableName;
  source: number;
  copied: number;
  target: number;
}

async function count(db: Kysely<Database>, table: TableName): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The first table of the target that holds rows, if any: a copy goes only into an empty store. */
export async function firstNonEmpty(db: Kysely<Database>): Promise<{ table: TableName; rows: number } | undefined> {
  for (const table of STORE_TABLES) {
    const rows = await count(db, table);
    if (rows > 0) return { table, rows };
  }
  return undefined;
}

/** Copies every table of a SQLite store (paged in rowid order) into another; `progress` hears of each as it ends. */
export async function copyTables(
  from: Kysely<Database>,
  to: Kysely<Database>,
  toDialect: SqlDialect,
  progress: (copy: TableCopy) => void = () => {},
): Promise<TableCopy[]> {
  const report: TableCopy[] = [];
  for (const table of STORE_TABLES) {
    let copied = 0;
    for (let offset = 0; ; offset += PAGE) {
      const rows = (
        await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)} ORDER BY rowid LIMIT ${PAGE} OFFSET ${offset}`.execute(from)
      ).rows;
      if (rows.length === 0) break;
      await to
        .insertInto(table)
        .values(rows as never)
        .execute();
      copied += rows.length;
      if (rows.length < PAGE) break;
    }
    // The next row the target numbers comes after the copied ones.
    if (TABLES[table]) await toDialect.continueNumbering(to, table);
    const copy = { table, source: await count(from, table), copied, target: await count(to, table) };
    report.push(copy);
    progress(copy);
  }
  return report;
}
