/**
 * Migrations 0001-0007: the first tables (sessions, inputs, transcript, runs, outbox, leases, the journal), then
 * exchanges, A2A tasks, sub-agents, the tool-call ledger and rate marks, in the same portable DDL as the others.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../sql/dialect.js';

/** A migration's part that every engine runs; migrate.ts runs the dialect's own step of the same name after it. */
export type SharedMigration = (db: Kysely<unknown>, dialect: SqlDialect) => Promise<void>;

export const coreMigrations: Record<string, SharedMigration> = {
  '0001_core': async (db, dialect) => {
    await db.schema
      .createTable('sessions')
      .addColumn('key', 'varchar(512)', (col) => col.primaryKey())
      .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('label', 'varchar(256)')
      .addColumn('parent_key', 'varchar(512)')
      .addColumn('depth', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('route', 'text')
      .addColumn('state', 'varchar(16)', (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .addColumn('last_run_at', 'bigint')
      .execute();
    await db.schema.createIndex('sessions_agent').on('sessions').columns(['agent_id', 'updated_at']).execute();
    await db.schema.createIndex('sessions_label').on('sessions').column('label').execute();

    await dialect
      .serialKey(db.schema.createTable('inputs'), 'seq')
      .addColumn('id', 'varchar(64)', (col) => col.notNull().unique())
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
      .addColumn('idempotency_key', 'varchar(512)', (col) => col.notNull().unique())
      .addColumn('mode', 'varchar(16)', (col) => col.notNull())
      .addColumn('status', 'varchar(16)', (col) => col.notNull())
      .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('text', 'text', (col) => col.notNull())
      .addColumn('provenance', 'text', (col) => col.notNull())
      .addColumn('run_id', 'varchar(64)')
      .addColumn('note', 'text')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('inputs_session_status').on('inputs').columns(['session_key', 'status', 'seq']).execute();
    await db.schema.createIndex('inputs_status').on('inputs').columns(['status', 'created_at']).execute();
    await db.schema.createIndex('inputs_run').on('inputs').column('run_id').execute();

    await dialect
      .serialKey(db.schema.createTable('transcript'), 'seq')
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
      .addColumn('role', 'varchar(16)', (col) => col.notNull())
      .addColumn('content', 'text', (col) => col.notNull())
      .addColumn('provenance', 'text')
      .addColumn('input_id', 'varchar(64)')
      .addColumn('run_id', 'varchar(64)')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('transcript_session').on('transcript').columns(['session_key', 'seq']).execute();

    await db.schema
      .createTable('runs')
      .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
      .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('status', 'varchar(16)', (col) => col.notNull())
      .addColumn('owner', 'varchar(128)', (col) => col.notNull())
      .addColumn('epoch', 'integer', (col) => col.notNull())
      .addColumn('model', 'varchar(256)', (col) => col.notNull())
      .addColumn('started_at', 'bigint', (col) => col.notNull())
      .addColumn('ended_at', 'bigint')
      .addColumn('input_tokens', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('output_tokens', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('model_calls', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('steps', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('preamble_chars', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('prompt_chars', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('final_text', 'text')
      .addColumn('error_code', 'varchar(64)')
      .addColumn('error_message', 'text')
      .execute();
    await db.schema.createIndex('runs_session').on('runs').columns(['session_key', 'started_at']).execute();
    await db.schema.createIndex('runs_status').on('runs').column('status').execute();

    await db.schema
      .createTable('outbox')
      .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
      .addColumn('kind', 'varchar(64)', (col) => col.notNull())
      .addColumn('target', 'varchar(512)', (col) => col.notNull())
      .addColumn('payload', 'text', (col) => col.notNull())
      .addColumn('idempotency_key', 'varchar(512)', (col) => col.notNull().unique())
      .addColumn('status', 'varchar(16)', (col) => col.notNull())
      .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('delivered_at', 'bigint')
      .execute();
    await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();

    await db.schema
      .createTable('session_lease')
      .addColumn('session_key', 'varchar(512)', (col) => col.primaryKey())
      .addColumn('owner', 'varchar(128)', (col) => col.notNull())
      .addColumn('epoch', 'integer', (col) => col.notNull())
      .addColumn('expires_at', 'bigint', (col) => col.notNull())
      .execute();

    await dialect
      .serialKey(db.schema.createTable('events'), 'seq')
      .addColumn('type', 'varchar(64)', (col) => col.notNull())
      .addColumn('session_key', 'varchar(512)')
      .addColumn('run_id', 'varchar(64)')
      .addColumn('payload', 'text', (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('events_session').on('events').columns(['session_key', 'seq']).execute();
  },
  '0002_exchanges': async (db) => {
    await db.schema
      .createTable('exchanges')
      .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
      .addColumn('conversation_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('hop', 'integer', (col) => col.notNull())
      .addColumn('requester_session', 'varchar(512)', (col) => col.notNull())
      .addColumn('requester_agent', 'varchar(64)', (col) => col.notNull())
      .addColumn('target_session', 'varchar(512)', (col) => col.notNull())
      .addColumn('target_agent', 'varchar(64)', (col) => col.notNull())
      .addColumn('request_input_id', 'varchar(64)', (col) => col.notNull().unique())
      .addColumn('max_turns', 'integer', (col) => col.notNull())
      .addColumn('phase', 'varchar(16)', (col) => col.notNull())
      .addColumn('turn', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('reply_state', 'varchar(16)', (col) => col.notNull())
      .addColumn('waiter_run_id', 'varchar(64)')
      .addColumn('reply_run_id', 'varchar(64)')
      .addColumn('reply_status', 'varchar(16)')
      .addColumn('reply_text', 'text')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('exchanges_reply_state').on('exchanges').columns(['reply_state', 'created_at']).execute();
    await db.schema.createIndex('exchanges_requester').on('exchanges').columns(['requester_session', 'created_at']).execute();
    await db.schema.createIndex('exchanges_waiter').on('exchanges').column('waiter_run_id').execute();
  },
  '0003_a2a_tasks': async (db, dialect) => {
    await db.schema
      .createTable('a2a_tasks')
      .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
      .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('context_id', 'varchar(128)', (col) => col.notNull())
      .addColumn('owner', 'varchar(128)', (col) => col.notNull())
      .addColumn('state', 'varchar(32)', (col) => col.notNull())
      .addColumn('task', 'text', (col) => col.notNull())
      .addColumn('session_key', 'varchar(512)')
      .addColumn('input_id', 'varchar(64)')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .addColumn('last_activity_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('a2a_tasks_owner').on('a2a_tasks').columns(['agent_id', 'owner', 'last_activity_at']).execute();
    await db.schema.createIndex('a2a_tasks_state').on('a2a_tasks').columns(['state', 'last_activity_at']).execute();
    await dialect
      .serialKey(db.schema.createTable('a2a_task_events'), 'seq')
      .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('type', 'varchar(64)', (col) => col.notNull())
      .addColumn('detail', 'text', (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('a2a_task_events_task').on('a2a_task_events').columns(['task_id', 'seq']).execute();
    await db.schema
      .createTable('a2a_push_configs')
      .addColumn('task_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('config_id', 'varchar(128)', (col) => col.notNull())
      .addColumn('owner', 'varchar(128)', (col) => col.notNull())
      .addColumn('config', 'text', (col) => col.notNull())
      .addColumn('wire_version', 'varchar(16)', (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addPrimaryKeyConstraint('a2a_push_configs_pk', ['task_id', 'config_id'])
      .execute();
    await db.schema
      .createTable('a2a_remote_tasks')
      .addColumn('task_id', 'varchar(128)', (col) => col.primaryKey())
      .addColumn('remote', 'varchar(1024)', (col) => col.notNull())
      .addColumn('context_id', 'varchar(128)', (col) => col.notNull())
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
      .addColumn('state', 'varchar(16)', (col) => col.notNull())
      .addColumn('remote_state', 'varchar(32)', (col) => col.notNull())
      .addColumn('push_token', 'varchar(128)')
      .addColumn('waiter_run_id', 'varchar(64)')
      .addColumn('result', 'text')
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('a2a_remote_tasks_state').on('a2a_remote_tasks').column('state').execute();
  },
  '0004_subagents': async (db) => {
    await db.schema
      .createTable('subagents')
      .addColumn('id', 'varchar(64)', (col) => col.primaryKey())
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull().unique())
      .addColumn('parent_session', 'varchar(512)', (col) => col.notNull())
      .addColumn('root_session', 'varchar(512)', (col) => col.notNull())
      .addColumn('agent_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('depth', 'integer', (col) => col.notNull())
      .addColumn('role', 'varchar(16)', (col) => col.notNull())
      .addColumn('label', 'varchar(256)')
      .addColumn('task', 'text', (col) => col.notNull())
      .addColumn('correlation_id', 'varchar(256)', (col) => col.notNull())
      .addColumn('first_run_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('run_id', 'varchar(64)')
      .addColumn('model', 'varchar(256)')
      .addColumn('tools', 'text', (col) => col.notNull())
      .addColumn('timeout_seconds', 'integer', (col) => col.notNull())
      .addColumn('workdir', 'text')
      .addColumn('worktree', 'text')
      .addColumn('state', 'varchar(16)', (col) => col.notNull())
      .addColumn('history', 'text', (col) => col.notNull())
      .addColumn('waiting', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('frozen_text', 'text')
      .addColumn('result', 'text')
      .addColumn('result_hash', 'varchar(64)')
      .addColumn('result_chars', 'integer')
      .addColumn('usage', 'text')
      .addColumn('diagnostic', 'text')
      .addColumn('completion', 'varchar(16)')
      .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('settled_at', 'bigint')
      .addColumn('archived_at', 'bigint')
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .addUniqueConstraint('subagents_correlation', ['parent_session', 'correlation_id'])
      .execute();
    await db.schema.createIndex('subagents_root').on('subagents').columns(['root_session', 'created_at']).execute();
    await db.schema.createIndex('subagents_state').on('subagents').columns(['state', 'settled_at']).execute();
  },
  '0005_tool_calls_and_rate_marks': async (db) => {
    // The tool-call ledger: one row per side-effecting call, keyed by what a retried run keeps the same.
    await db.schema
      .createTable('tool_calls')
      .addColumn('key', 'varchar(256)', (col) => col.primaryKey())
      .addColumn('scope', 'varchar(128)', (col) => col.notNull())
      .addColumn('step', 'integer', (col) => col.notNull())
      .addColumn('call_index', 'integer', (col) => col.notNull())
      .addColumn('tool', 'varchar(64)', (col) => col.notNull())
      .addColumn('args_hash', 'varchar(64)', (col) => col.notNull())
      .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
      .addColumn('first_run_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('run_id', 'varchar(64)', (col) => col.notNull())
      .addColumn('state', 'varchar(16)', (col) => col.notNull())
      .addColumn('result', 'text')
      .addColumn('diverged_from', 'varchar(256)')
      .addColumn('calls', 'integer', (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('updated_at', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('tool_calls_position').on('tool_calls').columns(['scope', 'step', 'call_index']).execute();
    await db.schema.createIndex('tool_calls_session').on('tool_calls').columns(['session_key', 'created_at']).execute();
    // A2A: a retried first message finds its task; ListTasks filters on the status time before paging.
    await db.schema.alterTable('a2a_tasks').addColumn('first_message_id', 'varchar(256)').execute();
    await db.schema.alterTable('a2a_tasks').addColumn('status_at', 'bigint').execute();
    await db.schema.createIndex('a2a_tasks_first_message').on('a2a_tasks').columns(['agent_id', 'owner', 'first_message_id']).execute();
    // a2a_send: a rerun finds the remote task its first attempt's message made, instead of sending again.
    await db.schema.alterTable('a2a_remote_tasks').addColumn('message_id', 'varchar(256)').execute();
    await db.schema.createIndex('a2a_remote_tasks_message').on('a2a_remote_tasks').column('message_id').execute();
    // Sliding-window rate limits kept in the store, so they survive restarts and hold across gateways.
    await db.schema
      .createTable('rate_marks')
      .addColumn('bucket', 'varchar(1100)', (col) => col.notNull())
      .addColumn('at', 'bigint', (col) => col.notNull())
      .addColumn('ref', 'varchar(256)', (col) => col.notNull())
      .addPrimaryKeyConstraint('rate_marks_pk', ['bucket', 'at', 'ref'])
      .execute();
  },
  '0006_run_request_size': async (db) => {
    // What the model calls actually sent (request bodies), and what the provider read from its cache.
    for (const column of ['request_bytes', 'request_system_bytes', 'request_tool_bytes', 'cached_input_tokens']) {
      await db.schema
        .alterTable('runs')
        .addColumn(column, 'bigint', (col) => col.notNull().defaultTo(0))
        .execute();
    }
    // Whether a session has spawned anyone decides which tools it is offered, at every model step.
    await db.schema.createIndex('sessions_parent').on('sessions').column('parent_key').execute();
  },
  '0007_a2a_task_context': async (db) => {
    // Every A2A message checks who else has tasks in its context (a context belongs to one peer).
    await db.schema.createIndex('a2a_tasks_context').on('a2a_tasks').columns(['agent_id', 'context_id', 'last_activity_at']).execute();
  },
};
