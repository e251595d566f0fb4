/**
 * `switchboard migrate` (the store's schema brought to this build's version, without starting a gateway) and
 * `switchboard store backup` and `store copy` (docs/deploy.md): a consistent copy of a SQLite store while its gateway
 * runs, and an installation moved from SQLite to PostgreSQL, its row counts compared table by table.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { loadConfigFile } from '../config/load.js';
import { DataDir } from '../kit/data-dir.js';
import type { KyselyStore } from '../store/kysely/kysely-store.js';
import { configPath, print, program, requestIfRunning } from './shared.js';

/** The store the config names (`--store` over $SWITCHBOARD_STORE_URL over store.url), without opening it. */
async function selection(storeUrl?: string) {
  const { storeSelection } = await import('../app.js');
  const { config, dataDir } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
  return storeSelection(config, new DataDir(dataDir).databasePath, storeUrl);
}

program
  .command('migrate')
  .description("bring the store's schema to this version of Switchboard (a gateway also does it as it starts)")
  .option('--store <url>', "a postgres:// URL (default: $SWITCHBOARD_STORE_URL, else the config's store)")
  .action(async (options: { store?: string }) => {
    const { openStore, safeUrl } = await import('../store/open/open-store.js');
    const { latestMigration } = await import('../store/migrations/migrate.js');
    const chosen = await selection(options.store);
    // Exclusive like a gateway: while one runs on this SQLite file, its lock refuses the migration.
    const { store, driver } = await openStore(chosen);
    await store.close();
    const where = driver === 'postgres' ? `${safeUrl(chosen.url!)} (schema ${chosen.schema})` : chosen.sqlite.path;
    print({ driver, version: latestMigration(), store: where }, () => `store ${where} (${driver}) is at schema ${latestMigration()}`);
  });

const store = program.command('store').description('the store: a backup of a SQLite one, and moving one to PostgreSQL');

store
  .command('backup <file>')
  .description("a consistent copy of the gateway's SQLite store in a new file, made while it runs (from the file when it does not)")
  .action(async (file: string) => {
    const path = resolve(file);
    // No gateway runs for this config (or it never ran): the file is copied here, under the same lock a gateway takes.
    const made =
      (await requestIfRunning<{ path: string; bytes: number }>('POST', '/v1/store/backup', { path })) ?? (await offlineBackup(path));
    print(made, () => `backed up the store to ${made.path} (${made.bytes} bytes), checked whole`);
  });

async function offlineBackup(path: string): Promise<{ path: string; bytes: number }> {
  const chosen = await selection();
  if (chosen.driver === 'postgres' || chosen.url)
    throw new SwitchboardError('INVALID_REQUEST', "the store is PostgreSQL: back it up with the server's own tools (pg_dump)");
  if (!existsSync(chosen.sqlite.path)) throw new SwitchboardError('NOT_FOUND', `no store at ${chosen.sqlite.path} yet: nothing to back up`);
  const { SqliteStore } = await import('../store/sqlite/sqlite-store.js');
  const opened = await SqliteStore.open({ ...chosen.sqlite, exclusive: true });
  try {
    return await opened.backup(path);
  } finally {
    await opened.close();
  }
}

store
  .command('copy')
  .description('copy a SQLite store into an empty PostgreSQL database (or schema) and compare the row counts of every table')
  .requiredOption('--to <url>', 'the PostgreSQL store: postgres://user:password@host:5432/database')
  .option('--from <file>', "the SQLite database file (default: this config's store; stop its gateway first)")
  .option('--schema <name>', 'the schema to copy into', 'public')
  .action(async (options: { from?: string; to: string; schema: string }) => {
    const { openStore, safeUrl } = await import('../store/open/open-store.js');
    const { SqliteStore } = await import('../store/sqlite/sqlite-store.js');
    const chosen = await selection();
    const from = options.from ? resolve(options.from) : chosen.sqlite.path;
    if (!existsSync(from)) throw new SwitchboardError('NOT_FOUND', `no SQLite store at ${from} (--from)`);
    // Exclusive: a gateway still running on the file refuses the copy (stop it, or copy a backup of it).
    const source = await SqliteStore.open({ path: from, exclusive: true });
    try {
      const opened = await openStore({
        ...chosen,
        driver: 'postgres',
        url: options.to,
        urlSource: '--to',
        schema: options.schema,
        maxConnections: 4,
      });
      try {
        // openStore's PostgreSQL store is the Kysely one copyInto writes to.
        const tables = await source.copyInto(opened.store as KyselyStore);
        const differ = tables.filter((table) => table.source !== table.target);
        const where = `${safeUrl(options.to)} (schema ${options.schema})`;
        print({ from, to: where, tables, verified: differ.length === 0 }, () =>
          [
            `copied ${from} into ${where}:`,
            ...tables.map((table) => `  ${table.table.padEnd(18)} ${String(table.source).padStart(8)} -> ${table.target}`),
            differ.length === 0
              ? 'every table holds the same number of rows in both'
              : `row counts differ in ${differ.map((table) => table.table).join(', ')}`,
          ].join('\n'),
        );
        if (differ.length > 0) process.exitCode = 1;
      } finally {
        await opened.store.close();
      }
    } finally {
      await source.close();
    }
  });
