/**
 * A gateway's SQLite store holding `count` finished A2A tasks, each with what a real blocking SendMessage leaves (its
 * session, lease, input, run, transcript, journal events and task events), for measuring cost after many tasks.
 * Copies of the rows one real request wrote, with that request's ids made unique in every text value (JSON included);
 * columns named `seq` are left to the database.
 */
import BetterSqlite3 from 'better-sqlite3';

/** Every table a blocking SendMessage writes rows to for its own task. */
const TABLES = ['a2a_tasks', 'a2a_task_events', 'sessions', 'session_lease', 'inputs', 'runs', 'transcript', 'events'] as const;

/** The rows of the one A2A request a store holds, and how to insert a copy of them all under a new name. */
export interface RequestRows {
  /** How many rows one copy inserts. */
  rows: number;
  /** Inserts copy `n` (its ids suffixed `-p<n>`); the caller holds the transaction. */
  copy(n: number): void;
}

export function requestRows(db: BetterSqlite3.Database): RequestRows {
  const tasks = db.prepare('SELECT * FROM a2a_tasks').all() as Record<string, string>[];
  if (tasks.length !== 1) throw new Error(`copying a request needs a store with exactly one A2A task; it has ${tasks.length}`);
  const task = tasks[0]!;
  const input = db.prepare('SELECT * FROM inputs WHERE id = ?').get(task.input_id) as Record<string, string>;
  // The ids that make the request's rows its own (a session key and an idempotency key are made of them); each
  // occurrence is renamed once, longest first.
  const ids = [task.id, task.context_id, task.input_id, task.first_message_id, input.run_id]
    .filter((id): id is string => typeof id === 'string' && id.length > 0)
    .sort((a, b) => b.length - a.length);
  const occurrence = new RegExp(ids.map((id) => id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  const templates = TABLES.map((table) => {
    const rows = (db.prepare(`SELECT * FROM "${table}"`).all() as Record<string, unknown>[]).filter((row) =>
      Object.values(row).some((value) => typeof value === 'string' && ids.some((id) => value.includes(id))),
    );
    const columns = Object.keys(rows[0] ?? {}).filter((column) => column !== 'seq');
    const insert = db.prepare(
      `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
    );
    return { rows, columns, insert };
  });
  return {
    rows: templates.reduce((sum, { rows }) => sum + rows.length, 0),
    copy(n) {
      const rename = (value: unknown) => (typeof value === 'string' ? value.replace(occurrence, (id) => `${id}-p${n}`) : value);
      for (const { rows, columns, insert } of templates) for (const row of rows) insert.run(columns.map((column) => rename(row[column])));
    },
  };
}

export function prefillTasks(dbPath: string, count: number): void {
  const db = new BetterSqlite3(dbPath);
  try {
    const request = requestRows(db);
    const copy = db.transaction((from: number, to: number) => {
      for (let n = from; n < to; n += 1) request.copy(n);
    });
    for (let from = 0; from < count; from += 10_000) copy(from, Math.min(count, from + 10_000));
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
