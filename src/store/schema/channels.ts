/** The channel front's tables (ports/channels.ts). */

export interface ChannelSendersTable {
  channel: string;
  account: string;
  sender_id: string;
  name: string | null;
  status: string;
  code: string | null;
  created_at: number;
  updated_at: number;
}

export interface ChannelPartsTable {
  outbox_id: string;
  part_index: number;
  message_id: string;
  sent_at: number;
}
