/** Schedules' tables (ports/schedules.ts): each schedule's first sighting, and its slots as they are claimed and fired. */
import type { Kysely } from 'kysely';

export async function scheduleTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('schedule_anchors')
    .addColumn('schedule_id', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('since', 'bigint', (col) => col.notNull())
    .execute();
  // The primary key is the claim: a slot's row is inserted once, whoever tries.
  await db.schema
    .createTable('schedule_slots')
    .addColumn('schedule_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('slot_at', 'bigint', (col) => col.notNull())
    .addColumn('claimed_by', 'varchar(200)', (col) => col.notNull())
    .addColumn('claimed_at', 'bigint', (col) => col.notNull())
    .addColumn('input_id', 'varchar(64)')
    .addColumn('fired_at', 'bigint')
    .addPrimaryKeyConstraint('schedule_slots_pk', ['schedule_id', 'slot_at'])
    .execute();
}
