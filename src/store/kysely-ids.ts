/** Ids by prefix, for people who type a short one (`runs show bd29b5f4`). */
import { sql } from 'kysely';
import type { IdKind } from '../ports.js';
import type { Db } from './kysely-rows.js';
import type { Database } from './schema.js';

const ID_TABLES = { run: 'runs', subagent: 'subagents', outbox: 'outbox', exchange: 'exchanges', a2a_task: 'a2a_tasks', input: 'inputs' } as const satisfies Record<IdKind, keyof Database>;

/** Ids of `kind` that start with `prefix`, in id order. substr, not LIKE: exact and case-sensitive in both dialects, with no wildcard to escape. */
export async function matchIds(db: Db, kind: IdKind, prefix: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom(ID_TABLES[kind])
    .select('id')
    .where(sql<string>`substr(id, 1, ${prefix.length})`, '=', prefix)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
