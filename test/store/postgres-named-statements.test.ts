/**
 * Server-side prepared statements on PostgreSQL (src/store/postgres/named-statements.ts): which texts get names, that
 * a connection then runs them by name, and that a statement whose table changed under it fails once, not for good.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatementNames, withNamedStatements } from '../../src/store/postgres/named-statements.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';

describe('statement names', () => {
  it('names a text with parameters at its second sighting, and keeps that name', () => {
    const names = new StatementNames();
    expect(names.nameOf('select * from t where id = $1', 1)).toBeUndefined();
    const name = names.nameOf('select * from t where id = $1', 1);
    expect(name).toBe('sb_0_0');
    expect(names.nameOf('select * from t where id = $1', 1)).toBe(name);
    expect(names.nameOf('select * from u where id = $1', 1)).toBeUndefined();
    expect(names.nameOf('select * from u where id = $1', 1)).toBe('sb_0_1');
  });

  it('never names a text without parameters (BEGIN, COMMIT)', () => {
    const names = new StatementNames();
    for (let i = 0; i < 3; i += 1) expect(names.nameOf('begin', 0)).toBeUndefined();
  });

  it('names at most maxNames texts; the rest go unnamed', () => {
    const names = new StatementNames(2);
    for (const text of ['a $1', 'b $1', 'c $1']) {
      names.nameOf(text, 1);
      names.nameOf(text, 1);
    }
    expect(names.size).toBe(2);
    expect(names.nameOf('c $1', 1)).toBeUndefined();
  });

  it('names every text afresh after a stale plan, and only after one', () => {
    const names = new StatementNames();
    names.nameOf('q $1', 1);
    expect(names.nameOf('q $1', 1)).toBe('sb_0_0');
    names.failed(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }));
    expect(names.nameOf('q $1', 1)).toBe('sb_0_0');
    names.failed(Object.assign(new Error('cached plan must not change result type'), { code: '0A000' }));
    expect(names.nameOf('q $1', 1)).toBeUndefined();
    expect(names.nameOf('q $1', 1)).toBe('sb_1_1');
  });
});

if (process.env.CI || (await postgresReachable())) {
  describe('named statements on PostgreSQL', () => {
    const schema = `sb_named_${process.pid}`;
    let pool: pg.Pool;
    let db: Kysely<{ t: { id: number; a: string } }>;
    const prepared = async () =>
      (await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(db)).rows;
    const byId = (id: number) => db.selectFrom('t').selectAll().where('id', '=', id).execute();

    beforeAll(async () => {
      // One connection: pg_prepared_statements shows the statements of the connection that asks.
      pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1, options: `-c search_path=${schema}` });
      db = new Kysely({ dialect: new PostgresDialect({ pool: withNamedStatements(pool, new StatementNames()) }) });
      await sql`CREATE SCHEMA ${sql.id(schema)}`.execute(db);
      await sql`CREATE TABLE t (id integer PRIMARY KEY, a text NOT NULL)`.execute(db);
      await sql`INSERT INTO t VALUES (1, 'one'), (2, 'two')`.execute(db);
    });
    afterAll(async () => {
      await db.destroy();
      await dropSchemas(schema);
    });

    it('parses a repeated query once on a connection and runs it by name after', async () => {
      expect(await byId(1)).toEqual([{ id: 1, a: 'one' }]);
      expect(await prepared()).toEqual([]);
      expect(await byId(2)).toEqual([{ id: 2, a: 'two' }]);
      expect(await byId(1)).toEqual([{ id: 1, a: 'one' }]);
      expect(await prepared()).toEqual([{ name: 'sb_0_0', statement: 'select * from "t" where "id" = $1' }]);
    });

    it('fails a named statement once when a migration changed its table, then names it afresh', async () => {
      await byId(1);
      await byId(1);
      const other = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
      await other.connect();
      await other.query(`ALTER TABLE t ADD COLUMN b text NOT NULL DEFAULT 'new'`);
      await other.end();
      await expect(byId(1)).rejects.toMatchObject({ code: '0A000', message: 'cached plan must not change result type' });
      expect(await byId(1)).toEqual([{ id: 1, a: 'one', b: 'new' }]);
      expect(await byId(1)).toEqual([{ id: 1, a: 'one', b: 'new' }]);
      expect((await prepared()).map((row) => row.name)).toContain('sb_1_1');
    });
  });

  describe('store.preparedStatements on the PostgreSQL store', () => {
    const schemas: string[] = [];
    afterAll(async () => {
      await dropSchemas(...schemas);
    });
    const namedAfterReads = async (preparedStatements: boolean) => {
      const schema = `sb_named_store_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      const store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 1, preparedStatements });
      try {
        for (let i = 0; i < 3; i += 1) await store.sessions.get('agent:a:main');
        // The store's own connection (its pool holds one): the tests reach into it as nothing else may.
        const { db } = store as unknown as { db: Kysely<unknown> };
        return (await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(db)).rows.map(
          (row) => row.statement,
        );
      } finally {
        await store.close();
      }
    };

    it('sends repeated queries as prepared statements by default, and not when turned off', async () => {
      expect(await namedAfterReads(true)).toContain('select * from "sessions" where "key" = $1');
      expect(await namedAfterReads(false)).toEqual([]);
    });
  });
} else {
  describe('named statements on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
