import { Kysely, SqliteDialect, sql } from 'kysely';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { prepared, preparedPerCount } from '../../src/store/sql/prepared.js';
import type { Db } from '../../src/store/sql/rows.js';
import type { Database } from '../../src/store/schema/database.js';

const open: Kysely<Database>[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.destroy();
});

function memoryDb(): Db {
  const raw = new BetterSqlite3(':memory:');
  raw.exec(
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT, session_key TEXT, run_id TEXT, payload TEXT, created_at INTEGER); INSERT INTO events (type, session_key, run_id, payload, created_at) VALUES ('a', 's1', 'r1', '{}', 1), ('b', 's1', 'r2', '{}', 2), ('a', 's2', 'r1', '{}', 3)",
  );
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  open.push(db);
  return db;
}

describe('prepared queries', () => {
  const byTypeAndSession = prepared<'type' | 'session', { seq: number }>((db, param) =>
    db
      .selectFrom('events')
      .select('seq')
      .where('type', '=', param('type'))
      .where('session_key', '=', param('session'))
      .where('created_at', '>', 0)
      .orderBy('seq'),
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
      db
        .selectFrom('events')
        .select('seq')
        .where((eb) => eb.or([eb('run_id', '=', param('run')), eb('session_key', '=', param('run'))]))
        .orderBy('seq'),
    );
    expect(await db.transaction().execute((trx) => either(trx, { run: 'r1' }))).toEqual([{ seq: 1 }, { seq: 3 }]);
  });

  it('a query shaped by a count binds its lists item by item, for each count, above the cached ones too', async () => {
    const db = memoryDb();
    const insert = preparedPerCount<'now', 'type' | 'session', never>(
      (db, count, param, item) =>
        db.insertInto('events').values(
          Array.from({ length: count }, (_, i) => ({
            type: item('type', i),
            session_key: item('session', i),
            run_id: null,
            payload: '{}',
            created_at: param('now'),
          })),
        ),
      2,
    );
    const ofTypes = preparedPerCount<'after', 'types', { seq: number; session_key: string | null }>(
      (db, count, param, item) =>
        db
          .selectFrom('events')
          .select(['seq', 'session_key'])
          .where(
            'type',
            'in',
            Array.from({ length: count }, (_, i) => item('types', i)),
          )
          .where('created_at', '>', param('after'))
          .orderBy('seq'),
      2,
    );
    await insert(db, 2, { now: 10, type: ['c', 'd'], session: ['s3', 's4'] });
    await insert(db, 3, { now: 20, type: ['e', 'f', 'c'], session: ['s5', 's6', 's7'] });
    await insert(db, 3, { now: 30, type: ['g', 'h', 'i'], session: ['s8', 's9', 's10'] });
    expect(await ofTypes(db, 1, { after: 0, types: ['c'] })).toEqual([
      { seq: 4, session_key: 's3' },
      { seq: 8, session_key: 's7' },
    ]);
    expect(await ofTypes(db, 2, { after: 15, types: ['c', 'e'] })).toEqual([
      { seq: 6, session_key: 's5' },
      { seq: 8, session_key: 's7' },
    ]);
    expect((await ofTypes(db, 3, { after: 0, types: ['d', 'g', 'i'] })).map((row) => row.session_key)).toEqual(['s4', 's8', 's10']);
  });

  it('refuses a query that puts a parameter into its SQL text', async () => {
    const db = memoryDb();
    const inlined = prepared<'type', { seq: number }>((db, param) =>
      db
        .selectFrom('events')
        .select('seq')
        .where('type', '=', sql.lit(param('type'))),
    );
    await expect(inlined(db, { type: 'a' })).rejects.toThrow('a prepared query must not inline its parameters');
  });
});
