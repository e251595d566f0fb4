/**
 * Limits counted inside the transaction of the write they guard. SQLite has one writer, so its
 * transactions are already serial; PostgreSQL needs a lock on the counted key for the rest of the
 * transaction, or two concurrent transactions could each count n-1 and both insert.
 */
import { limitReached, type LimitReached, type RateLimit } from '../../core/rate-limit.js';
import { num, type Db } from './rows.js';
import type { SqlDialect } from './dialect.js';

/** Serialises the transactions that count under `key` until the current one ends. */
export function lockCounted(db: Db, dialect: SqlDialect, key: string): Promise<void> {
  return dialect.lockName(db, key);
}

/**
 * Counts the bucket's writes in the window and, below `max`, records this one as `ref`. Marks that have
 * left the window are deleted on the way, so a bucket holds at most `max` rows.
 */
export async function takeRate(db: Db, dialect: SqlDialect, rate: RateLimit, ref: string, now: number): Promise<LimitReached | undefined> {
  await lockCounted(db, dialect, `rate:${rate.bucket}`);
  const since = now - rate.windowMs;
  await db.deleteFrom('rate_marks').where('bucket', '=', rate.bucket).where('at', '<=', since).execute();
  const row = await db
    .selectFrom('rate_marks')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('at').as('oldest')])
    .where('bucket', '=', rate.bucket)
    .executeTakeFirstOrThrow();
  const reached = limitReached(rate, num(row.count), num(row.oldest as number));
  if (reached) return reached;
  await db
    .insertInto('rate_marks')
    .values({ bucket: rate.bucket, at: now, ref })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return undefined;
}
