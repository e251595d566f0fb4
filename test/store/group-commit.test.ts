import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type Driver } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { GroupCommitDriver } from '../../src/store/sqlite/group-commit.js';
import { UnitWrites, trackWrites } from '../../src/store/sqlite/wal-sync.js';

interface Tables {
  parents: { id: number };
  children: { id: number; parent: number };
}

/** A Kysely over a new file whose driver groups commits, and a second connection to see what is committed. */
function open() {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-group-')), 'test.db');
  const raw = new BetterSqlite3(path);
  raw.pragma('journal_mode = WAL');
  raw.pragma('foreign_keys = ON');
  raw.exec(
    'CREATE TABLE parents (id INTEGER PRIMARY KEY); CREATE TABLE children (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)',
  );
  let driver!: GroupCommitDriver;
  // As the store's statements do, they tell the driver which units wrote.
  const writes = new UnitWrites();
  const database = { prepare: (text: string) => trackWrites(raw.prepare(text), writes), close: () => raw.close() };
  const db = new Kysely<Tables>({
    dialect: new (class extends SqliteDialect {
      override createDriver(): Driver {
        driver = new GroupCommitDriver(super.createDriver(), raw, writes, undefined);
        return driver;
      }
    })({ database }),
  });
  const observer = new BetterSqlite3(path, { readonly: true });
  const committed = (table: keyof Tables) =>
    (observer.prepare(`SELECT id FROM ${table} ORDER BY id`).all() as { id: number }[]).map((row) => row.id);
  opened.push(async () => {
    observer.close();
    await db.destroy();
  });
  return { db, driver: () => driver, committed };
}

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

describe('sqlite: group commit', () => {
  it('units that queue for the connection share a COMMIT, and each is answered only after it', async () => {
    const { db, driver, committed } = open();
    const seenAtAnswer: boolean[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await db.insertInto('parents').values({ id: i }).execute();
        seenAtAnswer.push(committed('parents').includes(i));
      }),
    );
    expect(seenAtAnswer).toEqual(Array(20).fill(true));
    expect(committed('parents')).toHaveLength(20);
    expect(driver().commits).toBeGreaterThanOrEqual(1);
    expect(driver().commits).toBeLessThan(20);
  });

  it('alone, a unit commits at once: a single statement by itself, a transaction with a COMMIT of its own', async () => {
    const { db, driver, committed } = open();
    for (let i = 0; i < 3; i += 1) {
      await db.insertInto('parents').values({ id: i }).execute();
      expect(committed('parents')).toContain(i);
    }
    expect(driver().commits).toBe(0);
    for (let i = 3; i < 6; i += 1) {
      await db.transaction().execute((trx) => trx.insertInto('parents').values({ id: i }).execute());
      expect(committed('parents')).toContain(i);
    }
    expect(driver().commits).toBe(3);
  });

  it('a transaction that fails rolls back its own writes and none of the others in its batch', async () => {
    const { db, driver, committed } = open();
    const results = await Promise.allSettled([
      db.insertInto('parents').values({ id: 1 }).execute(),
      db.transaction().execute(async (trx) => {
        await trx.insertInto('parents').values({ id: 2 }).execute();
        throw new Error('this transaction fails');
      }),
      db.insertInto('parents').values({ id: 3 }).execute(),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('this transaction fails');
    expect(driver().commits).toBe(1);
    expect(committed('parents')).toEqual([1, 3]);
  });

  it('a COMMIT that fails fails every unit of its batch and keeps none of their writes; the next unit goes on', async () => {
    const { db, driver, committed } = open();
    // The orphan's foreign key is checked at COMMIT, so the COMMIT of the batch holding it fails.
    const results = await Promise.allSettled([
      db.insertInto('parents').values({ id: 1 }).execute(),
      db.insertInto('children').values({ id: 1, parent: 99 }).execute(),
      db.insertInto('parents').values({ id: 2 }).execute(),
    ]);
    expect(driver().commits).toBe(1);
    expect(results.map((result) => (result.status === 'rejected' ? result.reason.message : 'kept'))).toEqual(
      Array(3).fill('FOREIGN KEY constraint failed'),
    );
    expect(committed('parents')).toEqual([]);
    expect(committed('children')).toEqual([]);

    await db.insertInto('parents').values({ id: 3 }).execute();
    expect(committed('parents')).toEqual([3]);
  });

  it("an internal write is answered before any COMMIT; the next durable unit's COMMIT covers it, and a read does not commit it", async () => {
    const { db, driver, committed } = open();
    const internal = (id: number) =>
      db.connection().execute(async (connection) => {
        driver().relax();
        await connection.insertInto('parents').values({ id }).execute();
      });
    await internal(1);
    expect(committed('parents')).toEqual([]);
    // The same connection reads it at once.
    expect(await db.selectFrom('parents').select('id').execute()).toEqual([{ id: 1 }]);
    expect(committed('parents')).toEqual([]);
    await db.insertInto('parents').values({ id: 2 }).execute();
    expect(committed('parents')).toEqual([1, 2]);
    expect(driver().commits).toBe(1);
  });

  it('a read last in a batch that holds a durable write commits it at once, not on a later turn', async () => {
    const { db, driver, committed } = open();
    let turned = false;
    setImmediate(() => (turned = true));
    await Promise.all([db.insertInto('parents').values({ id: 5 }).execute(), db.selectFrom('parents').select('id').execute()]);
    expect(turned).toBe(false);
    expect(committed('parents')).toEqual([5]);
    expect(driver().commits).toBe(1);
  });

  it('an internal write that no durable unit follows is committed on a later turn of the event loop', async () => {
    const { db, driver, committed } = open();
    await db.connection().execute(async (connection) => {
      driver().relax();
      await connection.insertInto('parents').values({ id: 7 }).execute();
    });
    expect(committed('parents')).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(committed('parents')).toEqual([7]);
    expect(driver().commits).toBe(1);
  });
});
