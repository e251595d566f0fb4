/** The gates' tables (ports/gates.ts): approval requests, and what each budget key spent and holds reserved. */
import type { Kysely } from 'kysely';

export async function gateTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('approvals')
    .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('kind', 'varchar(16)', (col) => col.notNull())
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
    .addColumn('run_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('step', 'integer', (col) => col.notNull())
    .addColumn('call_index', 'integer', (col) => col.notNull())
    .addColumn('tool_call_id', 'varchar(200)')
    .addColumn('subject', 'varchar(512)', (col) => col.notNull())
    .addColumn('args', 'text', (col) => col.notNull())
    .addColumn('details', 'text', (col) => col.notNull())
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('editable', 'integer', (col) => col.notNull())
    .addColumn('on_expiry', 'varchar(8)', (col) => col.notNull())
    .addColumn('requested_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('decided_at', 'bigint')
    .addColumn('decided_by', 'varchar(200)')
    .addColumn('note', 'text')
    .addColumn('edited_args', 'text')
    .execute();
  await db.schema.createIndex('approvals_status').on('approvals').columns(['status', 'requested_at']).execute();
  await db.schema
    .createTable('budget_spend')
    .addColumn('key', 'varchar(600)', (col) => col.primaryKey())
    .addColumn('spent_tokens', 'bigint', (col) => col.notNull())
    .addColumn('spent_cost', 'bigint', (col) => col.notNull())
    .addColumn('raised_tokens', 'bigint')
    .addColumn('raised_cost', 'bigint')
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema
    .createTable('budget_holds')
    .addColumn('id', 'varchar(100)', (col) => col.notNull())
    .addColumn('key', 'varchar(600)', (col) => col.notNull())
    .addColumn('run_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('tokens', 'bigint', (col) => col.notNull())
    .addColumn('cost', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('budget_holds_pk', ['id', 'key'])
    .execute();
  await db.schema.createIndex('budget_holds_key').on('budget_holds').columns(['key', 'expires_at']).execute();
}
