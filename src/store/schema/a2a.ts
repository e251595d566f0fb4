/** The A2A front's table types (src/a2a): its tasks, their events and push configs, and the remote tasks it follows. */
import type { Generated } from 'kysely';

export interface A2ATasksTable {
  id: string;
  agent_id: string;
  context_id: string;
  owner: string;
  state: string;
  task: string;
  session_key: string | null;
  input_id: string | null;
  first_message_id: string | null;
  status_at: number | null;
  created_at: number;
  updated_at: number;
  last_activity_at: number;
  /** The gateway whose executor works on its latest message (the others' task watches leave it to that one). */
  executor: string | null;
}

export interface A2ATaskEventsTable {
  seq: Generated<number>;
  task_id: string;
  type: string;
  detail: string;
  created_at: number;
}

export interface A2APushConfigsTable {
  task_id: string;
  config_id: string;
  owner: string;
  config: string;
  wire_version: string;
  created_at: number;
}

export interface A2ARemoteTasksTable {
  task_id: string;
  remote: string;
  context_id: string;
  session_key: string;
  state: string;
  remote_state: string;
  push_token: string | null;
  waiter_run_id: string | null;
  result: string | null;
  created_at: number;
  updated_at: number;
  message_id: string | null;
  /** The hop budget: the conversation and hop the a2a_send that made the task carried. */
  conversation_id: string | null;
  hop: number | null;
  /** The gateway following it in the background, and until when its claim holds (renewed while it follows). */
  follower: string | null;
  follow_until: Generated<number>;
}
