/**
 * `switchboard store backup` and `store copy` against real gateway processes: a backup of a running SQLite gateway's
 * store (which holds its file exclusively) and of a stopped one's, and an installation moved from SQLite to
 * PostgreSQL, whose gateway then goes on where the other stopped.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { STORE_TABLES } from '../../src/store/kysely/store-copy.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { cliWith, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

const config = `{
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`;
const schema = `sb_copy_${process.pid}`;
const pgReachable = Boolean(process.env.CI) || (await postgresReachable());

describe('store backup and store copy', () => {
  const { dir, configPath } = tempConfig(config);
  const cli = cliWith(configPath);
  afterAll(async () => {
    if (pgReachable) await dropSchemas(schema);
  });

  it('every table of the store is copied (the list knows each one the migrations make)', async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    // memory_fts and its shadow tables are the full-text index, derived from memory_chunks (kept by triggers here, a
    // generated column on PostgreSQL): a copy of the chunks rebuilds it.
    const tables = store.raw
      .prepare(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'kysely_%' AND name NOT LIKE 'memory_fts%'`,
      )
      .all()
      .map((row) => (row as { name: string }).name);
    await store.close();
    expect([...STORE_TABLES].sort()).toEqual(tables.sort());
  });

  it("backs up a running gateway's SQLite store, and a stopped one's; a path that exists is refused", async () => {
    const gw = await startGatewayProcess(configPath);
    const sent = await gw.request<{ reply: string }>('POST', '/v1/send', { target: 'echo', message: 'before the backup', wait: true });
    expect(sent.body.reply).toBe('echo: before the backup');
    const running = join(dir, 'running.db');
    const made = await cli('store', 'backup', running);
    expect(made.stderr).toBe('');
    expect(made.stdout).toMatch(new RegExp(`^backed up the store to ${running} \\(\\d+ bytes\\), checked whole\\n$`));
    const copy = new BetterSqlite3(running, { readonly: true });
    expect(copy.prepare(`SELECT count(*) AS n FROM transcript WHERE content LIKE '%before the backup%'`).get()).toEqual({ n: 2 });
    copy.close();
    const again = await cli('store', 'backup', running);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${running} exists already: give the backup the path of a new file`);
    expect(await stopGatewayProcess(gw)).toBe(0);
    const stopped = join(dir, 'stopped.db');
    expect((await cli('store', 'backup', stopped)).code).toBe(0);
    expect(existsSync(stopped)).toBe(true);
  });

  it.skipIf(!pgReachable)('copies the store into PostgreSQL with every row count checked; a gateway there goes on from it', async () => {
    const gw = await startGatewayProcess(configPath);
    await gw.request('POST', '/v1/send', { target: 'echo', message: 'said on sqlite', wait: true });
    // Its gateway holds the file: the copy is refused until it stops.
    const locked = await cli('store', 'copy', '--to', POSTGRES_URL, '--schema', schema);
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain('another gateway is already using the database');
    expect(await stopGatewayProcess(gw)).toBe(0);
    const copied = await cli('--json', 'store', 'copy', '--to', POSTGRES_URL, '--schema', schema);
    expect(copied.stderr).toBe('');
    const report = JSON.parse(copied.stdout) as { verified: boolean; tables: { table: string; source: number; target: number }[] };
    expect(report.verified).toBe(true);
    // Two exchanges: the one before the backup and this one.
    expect(report.tables.find((table) => table.table === 'transcript')).toMatchObject({ source: 4, target: 4 });
    // Into a store that holds data already: refused, naming what it holds.
    const twice = await cli('store', 'copy', '--to', POSTGRES_URL, '--schema', schema);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/the target store is not empty \(its sessions table holds 1 row\(s\)\)/);
    // The same session, on PostgreSQL: its history is there and it takes more.
    const moved = tempConfig(config.replace('{', `{ store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },`));
    const pg = await startGatewayProcess(moved.configPath);
    try {
      const more = await pg.request<{ reply: string; sessionKey: string }>('POST', '/v1/send', {
        target: 'echo',
        message: 'said on postgres',
        wait: true,
      });
      expect(more.body.reply).toBe('echo: said on postgres');
      const history = await pg.request<{ entries: { content: unknown }[] }>(
        'GET',
        `/v1/sessions/${encodeURIComponent(more.body.sessionKey)}/history`,
      );
      expect(history.body.entries.map((entry) => JSON.stringify(entry.content))).toEqual([
        '"before the backup"',
        expect.stringContaining('echo: before the backup'),
        '"said on sqlite"',
        expect.stringContaining('echo: said on sqlite'),
        '"said on postgres"',
        expect.stringContaining('echo: said on postgres'),
      ]);
    } finally {
      expect(await stopGatewayProcess(pg)).toBe(0);
    }
  });
});
