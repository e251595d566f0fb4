/**
 * Budgets over Kysely (ports/gates.ts). A reservation takes each of its keys' locks in key order (PostgreSQL: a
 * transaction-scoped advisory lock; SQLite has one writer), then reads what each key spent and holds reserved and
 * writes its holds: two model calls racing for one key's last room take turns, so that neither sees the other's
 * reservation missing. A hold lapses at its expiry on the database's clock (a call that never settled, its gateway
 * killed); a settle deletes its holds and adds what the call spent, once.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { BudgetAmount, BudgetCap, BudgetSpend, BudgetStore, BudgetReservation } from '../../ports/index.js';
import { num, type Db } from '../sql/rows.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { BudgetSpendTable, Database } from '../schema/database.js';

const NONE: BudgetAmount = { tokens: 0, costMicros: 0 };
/** A settled hold's expiry: it counts no more, and is cleared by the next reservation on its key. */
const SETTLED = -1;
/** A hold its call never settled (its gateway killed) is kept this long past its expiry, so that a late settle still counts. */
const LAPSED_KEPT_MS = 86_400_000;

function toSpend(row: Selectable<BudgetSpendTable>, reserved: BudgetAmount = NONE): BudgetSpend {
  const raised: Partial<BudgetAmount> = {};
  if (row.raised_tokens !== null) raised.tokens = num(row.raised_tokens);
  if (row.raised_cost !== null) raised.costMicros = num(row.raised_cost);
  return {
    key: row.key,
    spent: { tokens: num(row.spent_tokens), costMicros: num(row.spent_cost) },
    reserved,
    raised,
    updatedAt: num(row.updated_at),
  };
}

/** A cap's limit: its configured one, or a raised one where an approval raised it higher. */
function limitOf(cap: BudgetCap, spend: BudgetSpend | undefined): BudgetAmount {
  const pick = (configured: number | undefined, raised: number | undefined) =>
    configured === undefined ? Number.POSITIVE_INFINITY : Math.max(configured, raised ?? 0);
  return { tokens: pick(cap.tokens, spend?.raised.tokens), costMicros: pick(cap.costMicros, spend?.raised.costMicros) };
}

/** Raises a cap's limit (never lowers it: of two raises, the higher stands); `db` may be another store's transaction. */
export async function raiseCap(db: Db, key: string, limit: Partial<BudgetAmount>, now: number): Promise<void> {
  await db
    .insertInto('budget_spend')
    .values({
      key,
      spent_tokens: 0,
      spent_cost: 0,
      raised_tokens: limit.tokens ?? null,
      raised_cost: limit.costMicros ?? null,
      updated_at: now,
    })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        raised_tokens:
          limit.tokens === undefined
            ? sql`budget_spend.raised_tokens`
            : sql`CASE WHEN budget_spend.raised_tokens IS NULL OR budget_spend.raised_tokens < ${limit.tokens} THEN ${limit.tokens} ELSE budget_spend.raised_tokens END`,
        raised_cost:
          limit.costMicros === undefined
            ? sql`budget_spend.raised_cost`
            : sql`CASE WHEN budget_spend.raised_cost IS NULL OR budget_spend.raised_cost < ${limit.costMicros} THEN ${limit.costMicros} ELSE budget_spend.raised_cost END`,
        updated_at: now,
      }),
    )
    .execute();
}

export class KyselyBudgetStore implements BudgetStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    private readonly dbNowMs: () => RawBuilder<number>,
  ) {}

  reserve(id: string, runId: string, caps: readonly BudgetCap[], amount: BudgetAmount, ttlMs: number): Promise<BudgetReservation> {
    if (caps.length === 0) return Promise.resolve({ ok: true });
    const ordered = [...caps].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const keys = ordered.map((cap) => cap.key);
    return this.db.transaction().execute(async (trx) => {
      for (const key of keys) await this.dialect.lockName(trx, `switchboard.budget:${key}`);
      await trx
        .deleteFrom('budget_holds')
        .where('key', 'in', keys)
        .where((eb) => eb.or([eb('expires_at', '=', SETTLED), eb('expires_at', '<=', sql<number>`${this.dbNowMs()} - ${LAPSED_KEPT_MS}`)]))
        .execute();
      const spends = await this.read(trx, keys);
      for (const cap of ordered) {
        const spend = spends.get(cap.key);
        const spent = spend?.spent ?? NONE;
        const reserved = spend?.reserved ?? NONE;
        const limit = limitOf(cap, spend);
        // Admitted while the cap has room left: spend ends within one reservation of the limit per call under way.
        if (spent.tokens + reserved.tokens >= limit.tokens || spent.costMicros + reserved.costMicros >= limit.costMicros)
          return { ok: false, cap, spent, reserved, limit };
      }
      await trx
        .insertInto('budget_holds')
        .values(
          keys.map((key) => ({
            id,
            key,
            run_id: runId,
            tokens: amount.tokens,
            cost: amount.costMicros,
            expires_at: sql<number>`${this.dbNowMs()} + ${ttlMs}`,
          })),
        )
        .onConflict((conflict) => conflict.columns(['id', 'key']).doNothing())
        .execute();
      return { ok: true };
    });
  }

  settle(id: string, spent: BudgetAmount, now: number): Promise<void> {
    return this.db.transaction().execute(async (trx) => {
      // Marked settled rather than deleted: a second settle of the same reservation finds nothing left to count.
      const settled = await trx
        .updateTable('budget_holds')
        .set({ expires_at: SETTLED })
        .where('id', '=', id)
        .where('expires_at', '>', SETTLED)
        .returning('key')
        .execute();
      for (const { key } of settled) await this.add(trx, key, spent, now);
    });
  }

  async raise(key: string, limit: Partial<BudgetAmount>, now: number): Promise<void> {
    await raiseCap(this.db, key, limit, now);
  }

  async spend(keys: readonly string[]): Promise<BudgetSpend[]> {
    if (keys.length === 0) return [];
    return [...(await this.read(this.db, [...keys])).values()];
  }

  async spendLike(prefix: string, limit: number): Promise<BudgetSpend[]> {
    const rows = await this.db
      .selectFrom('budget_spend')
      .select('key')
      .where('key', 'like', `${prefix.replace(/[\\%_]/g, '\\$&')}%`)
      .orderBy('updated_at', 'desc')
      .limit(limit)
      .execute();
    return this.spend(rows.map((row) => row.key));
  }

  private async read(db: Kysely<Database>, keys: string[]): Promise<Map<string, BudgetSpend>> {
    const [rows, holds] = await Promise.all([
      db.selectFrom('budget_spend').selectAll().where('key', 'in', keys).execute(),
      db
        .selectFrom('budget_holds')
        .select((eb) => ['key', eb.fn.sum<number>('tokens').as('tokens'), eb.fn.sum<number>('cost').as('cost')])
        .where('key', 'in', keys)
        .where('expires_at', '>', this.dbNowMs())
        .groupBy('key')
        .execute(),
    ]);
    const reserved = new Map(holds.map((hold) => [hold.key, { tokens: num(hold.tokens), costMicros: num(hold.cost) }]));
    const spends = new Map<string, BudgetSpend>();
    for (const row of rows) spends.set(row.key, toSpend(row, reserved.get(row.key)));
    for (const [key, amount] of reserved) {
      if (!spends.has(key)) spends.set(key, { key, spent: NONE, reserved: amount, raised: {}, updatedAt: 0 });
    }
    return spends;
  }

  private async add(db: Kysely<Database>, key: string, spent: BudgetAmount, now: number): Promise<void> {
    await db
      .insertInto('budget_spend')
      .values({ key, spent_tokens: spent.tokens, spent_cost: spent.costMicros, raised_tokens: null, raised_cost: null, updated_at: now })
      .onConflict((conflict) =>
        conflict.column('key').doUpdateSet({
          spent_tokens: sql`budget_spend.spent_tokens + ${spent.tokens}`,
          spent_cost: sql`budget_spend.spent_cost + ${spent.costMicros}`,
          updated_at: now,
        }),
      )
      .execute();
  }
}
