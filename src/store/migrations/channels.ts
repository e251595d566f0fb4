/** The channel front's tables (ports/channels.ts): who may talk through a channel, and the parts of replies sent. */
import type { Kysely } from 'kysely';

export async function channelTables(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('channel_senders')
    .addColumn('channel', 'varchar(32)', (col) => col.notNull())
    .addColumn('account', 'varchar(64)', (col) => col.notNull())
    .addColumn('sender_id', 'varchar(200)', (col) => col.notNull())
    .addColumn('name', 'varchar(200)')
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('code', 'varchar(32)')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('channel_senders_pk', ['channel', 'account', 'sender_id'])
    .execute();
  await db.schema.createIndex('channel_senders_code').on('channel_senders').columns(['channel', 'code']).execute();
  await db.schema
    .createTable('channel_parts')
    .addColumn('outbox_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('part_index', 'integer', (col) => col.notNull())
    .addColumn('message_id', 'text', (col) => col.notNull())
    .addColumn('sent_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('channel_parts_pk', ['outbox_id', 'part_index'])
    .execute();
}
