/** Ids by prefix, for people who type a short one (`runs show bd29b5f4`). */
import { sql } from 'kysely';
import type { IdKind } from '../../ports/index.js';
import type { Db } from '../sql/rows.js';
import type { Database } from '../schema/database.js';

const ID_TABLES = {
  run: 'runs',
  subagent: 'subagents',
  outbox: 'outbox',
  exchange: 'exchanges',
  a2a_task: 'a2a_tasks',
  input: 'inputs',
  board_task: 'board_tasks',
  approval: 'approvals',
} as const satisfies Record<IdKind, keyof Database>;

/**
 * Ids of `kind` that start with `prefix`, in id order; an id equal to `prefix` is returned alone, by its
 * index (fronts pass full ids on every request). Otherwise substr, not LIKE: exact and case-sensitive in
 * both dialects, with no wildcard to escape; a scan, which is fine for ids a person typed.
 */
export async function matchIds(db: Db, kind: IdKind, prefix: string, limit: number): Promise<string[]> {
  const exact = await db.selectFrom(ID_TABLES[kind]).select('id').where('id', '=', prefix).executeTakeFirst();
  if (exact) return [exact.id];
  const rows = await db
    .selectFrom(ID_TABLES[kind])
    .select('id')
    .where(sql<string>`substr(id, 1, ${prefix.length})`, '=', prefix)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
