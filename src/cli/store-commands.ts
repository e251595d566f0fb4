/** `switchboard migrate`: the store's schema brought to this build's version, without starting a gateway. */
import { loadConfigFile } from '../config/load.js';
import { DataDir } from '../gateway/data-dir.js';
import { configPath, print, program } from './shared.js';

program
  .command('migrate')
  .description("bring the store's schema to this version of Switchboard (a gateway also does it as it starts)")
  .option('--store <url>', "a postgres:// URL (default: $SWITCHBOARD_STORE_URL, else the config's store)")
  .action(async (options: { store?: string }) => {
    const { storeSelection } = await import('../app.js');
    const { openStore, safeUrl } = await import('../store/open-store.js');
    const { latestMigration } = await import('../store/migrations.js');
    const { config, dataDir } = loadConfigFile(configPath());
    const selection = storeSelection(config, new DataDir(dataDir).databasePath, options.store);
    // Exclusive like a gateway: while one runs on this SQLite file, its lock refuses the migration.
    const { store, driver } = await openStore(selection);
    await store.close();
    const where = driver === 'postgres' ? `${safeUrl(selection.url!)} (schema ${selection.schema})` : selection.sqlite.path;
    print({ driver, version: latestMigration(), store: where }, () => `store ${where} (${driver}) is at schema ${latestMigration()}`);
  });
