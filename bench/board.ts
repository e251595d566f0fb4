/**
 * Board claims per second: the board store's fenced claim (a transaction that picks the task, sets its claim and
 * token, writes the attempt row and the task's event and journal line) against a raw one-statement claim on the
 * same schema and settings. SQLite: `UPDATE ... RETURNING` with better-sqlite3 on a copy of the same file, both
 * with WAL and synchronous=FULL. PostgreSQL: `FOR UPDATE SKIP LOCKED` at 1, 4 and 16 connections.
 */
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { BoardStore } from '../src/ports/index.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-board-'));
const TTL = 60_000;

/** Ready tasks written straight into the board's table (the setup is not what is measured). */
const seedSql = (count: number, dialect: 'sqlite' | 'postgres') =>
  dialect === 'postgres'
    ? `INSERT INTO board_tasks (id, board, title, body, assignee, priority, labels, creator, idempotency_key, state, max_attempts, attempts, failures, token, created_at, updated_at)
       SELECT 'task-' || g, 'default', 'task ' || g, '', NULL, 0, '[]', 'bench', NULL, 'ready', 2, 0, 0, 0, g, g FROM generate_series(1, ${count}) g`
    : `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${count})
       INSERT INTO board_tasks (id, board, title, body, assignee, priority, labels, creator, idempotency_key, state, max_attempts, attempts, failures, token, created_at, updated_at)
       SELECT 'task-' || n, 'default', 'task ' || n, '', NULL, 0, '[]', 'bench', NULL, 'ready', 2, 0, 0, 0, n, n FROM g`;

/** The raw claim: one statement, the same choice of task (priority, then age) and the same claim columns. */
const rawClaim = (
  param: (n: number) => string,
  lock: string,
) => `UPDATE board_tasks SET state = 'running', attempts = attempts + 1, token = token + 1,
  claim_worker = ${param(1)}, claimed_at = ${param(2)}, claim_expires_at = ${param(3)}, updated_at = ${param(2)}
  WHERE id = (SELECT id FROM board_tasks WHERE board = 'default' AND state = 'ready' AND (assignee IS NULL OR assignee = ${param(1)})
              ORDER BY priority DESC, created_at, id LIMIT 1 ${lock}) RETURNING id, token`;

/** `workers` loops claim until none is left; claims per second over all of them. */
async function drain(workers: number, claim: (worker: string) => Promise<boolean>): Promise<number> {
  let claims = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, index) => {
      while (await claim(`w${index}`)) claims += 1;
    }),
  );
  return claims / ((performance.now() - start) / 1000);
}

const boardClaim = (board: BoardStore) => async (worker: string) => (await board.claim({ worker, ttlMs: TTL }, Date.now())) !== undefined;

export async function sqliteClaims(count: number): Promise<{ raw: number; board1: number; board16: number }> {
  // One file, migrated and seeded once, copied: both claimers start from the same bytes.
  const dir = tmp();
  const seeded = join(dir, 'seed.db');
  await (await SqliteStore.open({ path: seeded })).close();
  const setup = new BetterSqlite3(seeded);
  setup.exec(seedSql(count, 'sqlite'));
  setup.pragma('wal_checkpoint(TRUNCATE)');
  setup.close();
  const copy = (name: string) => {
    copyFileSync(seeded, join(dir, name));
    return join(dir, name);
  };

  const rawDb = new BetterSqlite3(copy('raw.db'));
  rawDb.pragma('journal_mode = WAL');
  rawDb.pragma('synchronous = FULL');
  const statement = rawDb.prepare(rawClaim((n) => `@p${n}`, ''));
  // better-sqlite3 is synchronous: one claimer is all it can be, whatever the callers.
  const raw = await drain(1, async (worker) => {
    const now = Date.now();
    return statement.get({ p1: worker, p2: now, p3: now + TTL }) !== undefined;
  });
  rawDb.close();

  const results: number[] = [];
  for (const [name, workers] of [
    ['board1.db', 1],
    ['board16.db', 16],
  ] as const) {
    const store = await SqliteStore.open({ path: copy(name), synchronous: 'FULL' });
    results.push(await drain(workers, boardClaim(store.board)));
    await store.close();
  }
  return { raw, board1: results[0], board16: results[1] };
}

export async function postgresClaims(url: string, count: number, connections: number): Promise<{ raw: number; board: number }> {
  const suffix = `${process.pid}_${connections}`;
  const schemas = [`sb_bench_raw_${suffix}`, `sb_bench_board_${suffix}`];
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const rawStore = await PostgresStore.open({ connectionString: url, schema: schemas[0], maxConnections: 1 });
    await rawStore.close();
    const store = await PostgresStore.open({ connectionString: url, schema: schemas[1], maxConnections: connections });
    for (const schema of schemas) await admin.query(`SET search_path = ${schema}; ${seedSql(count, 'postgres')}`);

    const pool = new pg.Pool({ connectionString: url, max: connections, options: `-c search_path=${schemas[0]}` });
    const text = rawClaim((n) => `$${n}`, 'FOR UPDATE SKIP LOCKED');
    const raw = await drain(connections, async (worker) => {
      const now = Date.now();
      return (await pool.query(text, [worker, now, now + TTL])).rowCount === 1;
    });
    await pool.end();
    const board = await drain(connections, boardClaim(store.board));
    await store.close();
    return { raw, board };
  } finally {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}
