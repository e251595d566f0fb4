/**
 * Numbered migrations shared by every adapter, and running them. Only portable DDL: what differs goes through the
 * dialect object (sql/dialect.ts), its `serialKey` for an auto-incrementing key and its `migrationStep` for the part
 * of a migration that is one engine's alone (PostgreSQL's functions, each engine's full-text index), run after the
 * shared part. The names are the store's schema versions: a migration named for PostgreSQL is empty elsewhere.
 */
import { type Kysely, Migrator, type Migration, type MigrationProvider } from 'kysely';
import { boardKeys, boardTables, boardTrace } from './board.js';
import { coreMigrations, type SharedMigration } from './core.js';
import { mailboxTables, memoryTables } from './memory.js';
import { gatewayRegistry, outboxClaims } from './gateways.js';
import { gateTables } from './gates.js';
import { channelTables } from './channels.js';
import { scheduleTables } from './schedules.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Database } from '../schema/database.js';

const nothingShared: SharedMigration = async () => {};

/** Every migration's shared part, by name (the names are the store's schema versions, in order). */
const SHARED: Record<string, SharedMigration> = {
  ...coreMigrations,
  '0008_board': (db, dialect) => boardTables(db, dialect),
  '0009_board_keys': (db) => boardKeys(db),
  '0010_outbox_claims': (db) => outboxClaims(db),
  '0011_event_seq_after_xid': nothingShared,
  '0012_gateway_registry': (db) => gatewayRegistry(db),
  '0013_postgres_run_functions': nothingShared,
  '0014_postgres_keys_as_text': nothingShared,
  '0015_memory': (db, dialect) => memoryTables(db, dialect),
  '0016_mailbox': (db) => mailboxTables(db),
  // The external runtime (`acp:<name>`, `process:<name>`) a sub-agent runs on, when not a model in the gateway.
  '0017_subagent_runtime': (db) => db.schema.alterTable('subagents').addColumn('runtime', 'varchar(200)').execute(),
  '0018_console': (db) => consoleColumns(db),
  '0019_postgres_commit_says_queued': nothingShared,
  '0020_postgres_start_with_history': nothingShared,
  '0021_postgres_session_reads': nothingShared,
  '0022_postgres_rows_by_key': nothingShared,
  '0023_postgres_generic_plans': nothingShared,
  '0024_postgres_runs_in_one_body': nothingShared,
  // The hop budget (core/hops.ts): the conversation a board task or a remote A2A task was made in, and its hop.
  '0025_hop_budget': async (db) => {
    for (const table of ['board_tasks', 'a2a_remote_tasks']) {
      await db.schema.alterTable(table).addColumn('conversation_id', 'varchar(200)').execute();
      await db.schema.alterTable(table).addColumn('hop', 'integer').execute();
    }
  },
  '0026_run_steps': (db) => runSteps(db),
  // Gates (ports/gates.ts): approval requests and budgets.
  '0027_gates': (db) => gateTables(db),
  // Telemetry (docs/observability.md): the trace a board task's attempts join.
  '0028_board_trace': (db) => boardTrace(db),
  // Chat channels (ports/channels.ts): senders let in or refused, and the parts of replies sent.
  '0029_channels': (db) => channelTables(db),
  // Schedules (ports/schedules.ts): slots claimed once across gateways.
  '0030_schedules': (db) => scheduleTables(db),
  // sessions_wait is offered while a reply is still to come (SessionStore.reachedOut; PostgreSQL's run start says it too):
  // the pending exchanges of a session are found by key, however many it has sent.
  '0031_reply_to_come': (db) =>
    db.schema.createIndex('exchanges_reply_to_come').on('exchanges').columns(['requester_session', 'reply_state']).execute(),
};

/** Each migration for one engine: its shared part, then the dialect's step of the same name. */
function migrations(dialect: SqlDialect): Record<string, Migration> {
  return Object.fromEntries(
    Object.entries(SHARED).map(([name, shared]): [string, Migration] => [
      name,
      {
        up: async (db: Kysely<unknown>) => {
          await shared(db, dialect);
          await dialect.migrationStep(name, db);
        },
      },
    ]),
  );
}

/**
 * The console's needs: a session can be archived; today's usage is read by run start time; the collaboration map
 * reads the sub-agents and board tasks of a time window.
 */
async function consoleColumns(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('archived_at', 'bigint').execute();
  await db.schema.createIndex('runs_started').on('runs').column('started_at').execute();
  await db.schema.createIndex('subagents_created').on('subagents').column('created_at').execute();
  await db.schema.createIndex('board_tasks_created').on('board_tasks').column('created_at').execute();
}

/** Durable steps (ports/steps.ts): a run's model answers and tool results as they commit, and the run's attempt. */
async function runSteps(db: Kysely<unknown>): Promise<void> {
  const counts = ['input_tokens', 'output_tokens', 'cached_input_tokens', 'request_bytes', 'request_system_bytes', 'request_tool_bytes'];
  let table = db.schema
    .createTable('run_steps')
    .addColumn('run_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('step', 'integer', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('session_key', 'varchar(512)', (col) => col.notNull())
    .addColumn('model', 'varchar(200)', (col) => col.notNull())
    .addColumn('response', 'text', (col) => col.notNull())
    .addColumn('tool_names', 'text', (col) => col.notNull())
    .addColumn('input_ids', 'text', (col) => col.notNull())
    .addColumn('results', 'text');
  for (const column of counts) table = table.addColumn(column, 'bigint', (col) => col.notNull());
  await table
    .addColumn('started_at', 'bigint', (col) => col.notNull())
    .addColumn('answered_at', 'bigint', (col) => col.notNull())
    .addColumn('settled_at', 'bigint')
    .addPrimaryKeyConstraint('run_steps_pk', ['run_id', 'step'])
    .execute();
  await db.schema
    .alterTable('runs')
    .addColumn('attempt', 'integer', (col) => col.notNull().defaultTo(1))
    .execute();
  // A run suspended in a wait: until when, and the journal keys whose events may end it (its wake-up).
  await db.schema.alterTable('runs').addColumn('wake_at', 'bigint').execute();
  await db.schema.alterTable('runs').addColumn('wake_keys', 'text').execute();
  await db.schema.alterTable('runs').addColumn('wait_deadlines', 'text').execute();
  await db.schema.createIndex('runs_wake').on('runs').column('wake_at').execute();
}

class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: SqlDialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations(this.dialect);
  }
}

/** The newest migration this build knows: the store's schema version. */
export function latestMigration(): string {
  return Object.keys(SHARED).sort().at(-1)!;
}

/**
 * `schema`: where the migration bookkeeping lives, for adapters that keep each store in a schema. A database that a
 * newer Switchboard migrated further than this build knows is refused, naming both versions, before anything is
 * written: this build would misread its rows.
 */
export async function migrateToLatest(db: Kysely<Database>, dialect: SqlDialect, schema?: string): Promise<{ version: string }> {
  const known = new Set(Object.keys(SHARED));
  // Kysely's own bookkeeping table: one row per migration applied.
  const withBookkeeping = db.withTables<{ kysely_migration: { name: string } }>();
  const table = schema ? withBookkeeping.withSchema(schema) : withBookkeeping;
  const applied = await table
    .selectFrom('kysely_migration')
    .select('name')
    .execute()
    .catch(() => [] as { name: string }[]);
  const unknown = applied
    .map((row) => row.name)
    .filter((name) => !known.has(name))
    .sort();
  if (unknown.length > 0) {
    throw new StoreSchemaTooNew(
      `the database's schema is at migration ${unknown.at(-1)}, newer than this Switchboard knows (its latest is ${latestMigration()}): run the newer Switchboard, or point the store at another database`,
    );
  }
  const migrator = new Migrator({
    db,
    provider: new StaticMigrationProvider(dialect),
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`store migration ${failed?.migrationName ?? '(unknown)'} failed: ${reason}`);
  }
  return { version: latestMigration() };
}

export class StoreSchemaTooNew extends Error {
  override readonly name = 'StoreSchemaTooNew';
}
