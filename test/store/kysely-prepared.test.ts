import { Kysely, SqliteDialect, sql } from 'kysely';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { prepared } from '../../src/store/kysely-prepared.js';
import type { Db } from '../../src/store/kysely-rows.js';
import type { Database } from '../../src/store/schema.js';

const open: Kysely<Database>[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.destroy();
});

function memoryDb(): Db {
  const raw = new BetterSqlite3(':memory:');
  raw.exec("CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT, session_key TEXT, run_id TEXT, payload TEXT, created_at INTEGER); INSERT INTO events (type, session_key, run_id, payload, created_at) VALUES ('a', 's1', 'r1', '{}', 1), ('b', 's1', 'r2', '{}', 2), ('a', 's2', 'r1', '{}', 3)");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  open.push(db);
  return db;
}

describe('prepared queries', () => {
  const byTypeAndSession = prepared<'type' | 'session', { seq: number }>((db, param) =>
    db.selectFrom('events').select('seq').where('type', '=', param('type')).where('session_key', '=', param('session')).where('created_at', '>', 0).orderBy('seq'),
  );

  it('binds each call its own values by name, and keeps the constants', async () => {
    const db = memoryDb();
    expect(await byTypeAndSession(db, { type: 'a', session: 's1' })).toEqual([{ seq: 1 }]);
    expect(await byTypeAndSession(db, { session: 's2', type: 'a' })).toEqual([{ seq: 3 }]);
    expect(await byTypeAndSession(db, { type: 'b', session: 's2' })).toEqual([]);
  });

  it('binds a value used twice in both places, and works inside a transaction', async () => {
    const db = memoryDb();
    const either = prepared<'run', { seq: number }>((db, param) =>
      db.selectFrom('events').select('seq').where((eb) => eb.or([eb('run_id', '=', param('run')), eb('session_key', '=', param('run'))])).orderBy('seq'),
    );
    expect(await db.transaction().execute((trx) => either(trx, { run: 'r1' }))).toEqual([{ seq: 1 }, { seq: 3 }]);
  });

  it('refuses a query that puts a parameter into its SQL text', async () => {
    const db = memoryDb();
    const inlined = prepared<'type', { seq: number }>((db, param) => db.selectFrom('events').select('seq').where('type', '=', sql.lit(param('type'))));
    await expect(inlined(db, { type: 'a' })).rejects.toThrow('a prepared query must not inline its parameters');
  });
});
