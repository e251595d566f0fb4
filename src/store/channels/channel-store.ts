/**
 * The channel front's state over Kysely (ports/channels.ts). Every change is one statement that says what it expects:
 * a sender is inserted only where none is (the first record, and its pairing code, hold), a pairing is approved only from
 * `pending` with its code, and a reply's part keeps the first id recorded for it.
 */
import type { Kysely, Selectable } from 'kysely';
import type { ChannelStore, ChatSenderRecord, ChatSenderStatus } from '../../ports/channels.js';
import { num } from '../sql/rows.js';
import type { ChannelSendersTable, Database } from '../schema/database.js';

function toSender(row: Selectable<ChannelSendersTable>): ChatSenderRecord {
  return {
    channel: row.channel,
    account: row.account,
    senderId: row.sender_id,
    name: row.name,
    status: row.status as ChatSenderStatus,
    code: row.code,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export class KyselyChannelStore implements ChannelStore {
  constructor(private readonly db: Kysely<Database>) {}

  async sender(channel: string, account: string, senderId: string): Promise<ChatSenderRecord | undefined> {
    const row = await this.db
      .selectFrom('channel_senders')
      .selectAll()
      .where('channel', '=', channel)
      .where('account', '=', account)
      .where('sender_id', '=', senderId)
      .executeTakeFirst();
    return row ? toSender(row) : undefined;
  }

  async addSender(record: Omit<ChatSenderRecord, 'createdAt' | 'updatedAt'>, now: number): Promise<boolean> {
    const inserted = await this.db
      .insertInto('channel_senders')
      .values({
        channel: record.channel,
        account: record.account,
        sender_id: record.senderId,
        name: record.name,
        status: record.status,
        code: record.code,
        created_at: now,
        updated_at: now,
      })
      .onConflict((conflict) => conflict.columns(['channel', 'account', 'sender_id']).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async approvePairing(channel: string, code: string, now: number): Promise<ChatSenderRecord | undefined> {
    const row = await this.db
      .updateTable('channel_senders')
      .set({ status: 'allowed', code: null, updated_at: now })
      .where('channel', '=', channel)
      .where('code', '=', code.toUpperCase())
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
    return row ? toSender(row) : undefined;
  }

  async setSenderStatus(
    channel: string,
    account: string,
    senderId: string,
    status: ChatSenderStatus,
    now: number,
  ): Promise<ChatSenderRecord | undefined> {
    const row = await this.db
      .updateTable('channel_senders')
      .set({ status, code: null, updated_at: now })
      .where('channel', '=', channel)
      .where('account', '=', account)
      .where('sender_id', '=', senderId)
      .returningAll()
      .executeTakeFirst();
    return row ? toSender(row) : undefined;
  }

  async listSenders(filter: { channel?: string; status?: ChatSenderStatus; limit?: number }): Promise<ChatSenderRecord[]> {
    let query = this.db.selectFrom('channel_senders').selectAll();
    if (filter.channel) query = query.where('channel', '=', filter.channel);
    if (filter.status) query = query.where('status', '=', filter.status);
    const rows = await query
      .orderBy('updated_at', 'desc')
      .orderBy('sender_id')
      .limit(filter.limit ?? 100)
      .execute();
    return rows.map(toSender);
  }

  async sentParts(outboxId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('channel_parts')
      .select(['part_index', 'message_id'])
      .where('outbox_id', '=', outboxId)
      .orderBy('part_index')
      .execute();
    // Parts are recorded in order, so the rows are 0..n-1; a gap (none is expected) ends what counts as sent.
    const sent: string[] = [];
    for (const row of rows) {
      if (num(row.part_index) !== sent.length) break;
      sent.push(row.message_id);
    }
    return sent;
  }

  async recordPart(outboxId: string, index: number, messageId: string, now: number): Promise<void> {
    await this.db
      .insertInto('channel_parts')
      .values({ outbox_id: outboxId, part_index: index, message_id: messageId, sent_at: now })
      .onConflict((conflict) => conflict.columns(['outbox_id', 'part_index']).doNothing())
      .execute();
  }
}
