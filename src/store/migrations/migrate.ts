/**
 * Numbered migrations shared by every adapter, and running them. Only portable DDL: the one dialect difference, an
 * auto-incrementing integer key, goes through `serialKey`; what is PostgreSQL's alone is in migrations/postgres.ts.
 */
import { type Kysely, Migrator, type Migration, type MigrationProvider } from 'kysely';
import { boardKeys, boardTables } from './board.js';
import { coreMigrations } from './core.js';
import { mailboxTables, memoryTables } from './memory.js';
import { eventSeqAfterXid, gatewayRegistry, outboxClaims } from './gateways.js';
import {
  postgresCommitSaysQueued,
  postgresKeysAsText,
  postgresRunFunctions,
  postgresStartWithHistory,
  postgresSessionReads,
  postgresRowsByKey,
} from './postgres.js';
import { postgresGenericPlans, postgresRunsInOneBody } from './postgres-runs.js';
import type { SqlDialectName } from '../sql/dialect.js';

function migrations(dialect: SqlDialectName): Record<string, Migration> {
  return {
    ...coreMigrations(dialect),
    '0008_board': { up: (db: Kysely<any>) => boardTables(db, dialect) },
    '0009_board_keys': { up: (db: Kysely<any>) => boardKeys(db) },
    '0010_outbox_claims': { up: (db: Kysely<any>) => outboxClaims(db) },
    '0011_event_seq_after_xid': { up: (db: Kysely<any>) => eventSeqAfterXid(db, dialect) },
    '0012_gateway_registry': { up: (db: Kysely<any>) => gatewayRegistry(db, dialect) },
    '0013_postgres_run_functions': { up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresRunFunctions(db) : undefined) },
    '0014_postgres_keys_as_text': { up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresKeysAsText(db) : undefined) },
    '0015_memory': { up: (db: Kysely<any>) => memoryTables(db, dialect) },
    '0016_mailbox': { up: (db: Kysely<any>) => mailboxTables(db) },
    // The external runtime (`acp:<name>`, `process:<name>`) a sub-agent runs on, when not a model in the gateway.
    '0017_subagent_runtime': { up: (db: Kysely<any>) => db.schema.alterTable('subagents').addColumn('runtime', 'varchar(200)').execute() },
    '0018_console': { up: (db: Kysely<any>) => consoleColumns(db) },
    '0019_postgres_commit_says_queued': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresCommitSaysQueued(db) : undefined),
    },
    '0020_postgres_start_with_history': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresStartWithHistory(db) : undefined),
    },
    '0021_postgres_session_reads': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresSessionReads(db) : undefined),
    },
    '0022_postgres_rows_by_key': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresRowsByKey(db) : undefined),
    },
    '0023_postgres_generic_plans': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresGenericPlans(db) : undefined),
    },
    '0024_postgres_runs_in_one_body': {
      up: async (db: Kysely<any>) => (dialect === 'postgres' ? postgresRunsInOneBody(db) : undefined),
    },
    // The hop budget (core/hops.ts): the conversation a board task or a remote A2A task was made in, and its hop.
    '0025_hop_budget': {
      up: async (db: Kysely<any>) => {
        for (const table of ['board_tasks', 'a2a_remote_tasks']) {
          await db.schema.alterTable(table).addColumn('conversation_id', 'varchar(200)').execute();
          await db.schema.alterTable(table).addColumn('hop', 'integer').execute();
        }
      },
    },
  };
}

/**
 * The console's needs: a session can be archived; today's usage is read by run start time; the collaboration map
 * reads the sub-agents and board tasks of a time window.
 */
async function consoleColumns(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('archived_at', 'bigint').execute();
  await db.schema.createIndex('runs_started').on('runs').column('started_at').execute();
  await db.schema.createIndex('subagents_created').on('subagents').column('created_at').execute();
  await db.schema.createIndex('board_tasks_created').on('board_tasks').column('created_at').execute();
}

class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: SqlDialectName) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations(this.dialect);
  }
}

/** The newest migration this build knows: the store's schema version. */
export function latestMigration(): string {
  return Object.keys(migrations('sqlite')).sort().at(-1)!;
}

/**
 * `schema`: where the migration bookkeeping lives, for adapters that keep each store in a schema. A database that a
 * newer Switchboard migrated further than this build knows is refused, naming both versions, before anything is
 * written: this build would misread its rows.
 */
export async function migrateToLatest(db: Kysely<any>, dialect: SqlDialectName, schema?: string): Promise<{ version: string }> {
  const known = new Set(Object.keys(migrations(dialect)));
  const table = schema ? db.withSchema(schema) : db;
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
