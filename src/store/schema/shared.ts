/** Table types of what the gateways share beside sessions and runs: agents' memory, the gateways' registry and shared secrets. */
import type { Generated } from 'kysely';

export interface MemoryDocsTable {
  agent_id: string;
  path: string;
  source: string;
  hash: string;
  bytes: number;
  modified_at: number;
  indexed_at: number;
  idempotency_key: string | null;
}

export interface MemoryChunksTable {
  seq: Generated<number>;
  agent_id: string;
  path: string;
  source: string;
  start_line: number;
  end_line: number;
  text: string;
  modified_at: number;
}

export interface GatewaysTable {
  id: string;
  pid: number;
  host: string;
  url: string | null;
  version: string;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
  /** JSON: what the gateway reports of itself at each heartbeat (GatewayReport). */
  info: string;
}

export interface SharedSecretsTable {
  name: string;
  value: string;
}

export interface MailboxReservationsTable {
  holder: string;
  pattern: string;
  absolute: string;
  reason: string | null;
  since: number;
  expires_at: number;
}

export interface TeamStatesTable {
  team_id: string;
  state: string;
  release: number;
  changed_at: number;
}
