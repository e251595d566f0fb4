/**
 * The board's transactions: each one checks the dispatcher's fence first (when the store is the dispatcher's view),
 * and is run again (a few times) when a compare-and-set found its row changed (StaleRow) or PostgreSQL chose it as a
 * deadlock's victim: the rerun reads what the winner wrote and answers from that.
 */
import type { Kysely } from 'kysely';
import { SwitchboardError } from '../../core/errors.js';
import type { DispatcherFence } from '../../ports/index.js';
import type { Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Db } from '../sql/rows.js';
import { StaleRow } from './board-rows.js';

const MAX_TX_ATTEMPTS = 8;
export const DISPATCHER_LEASE = 'dispatcher';

/**
 * The dispatcher's fence: its lease still held under this epoch, its row held (FOR SHARE on PostgreSQL) until the
 * transaction ends, so another gateway's takeover of the lease waits for this write, and every write after it fails.
 */
async function holdFence(trx: Db, dialect: SqlDialect, fence: DispatcherFence): Promise<void> {
  const read = trx
    .selectFrom('board_leases')
    .select('epoch')
    .where('name', '=', DISPATCHER_LEASE)
    .where('owner', '=', fence.owner)
    .where('epoch', '=', fence.epoch);
  if (await dialect.shareRows(read).executeTakeFirst()) return;
  throw new SwitchboardError(
    'DISPATCHER_LEASE_LOST',
    `the board dispatcher lease moved on from ${fence.owner} (epoch ${fence.epoch}): another gateway dispatches now; nothing was written`,
  );
}
const isDeadlock = (error: unknown) => (error as { code?: unknown } | null)?.code === '40P01';

export class BoardTransactions {
  constructor(
    readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
    /** Set on the dispatcher's view (BoardStore.fenced): every transaction checks it first. */
    readonly fence?: DispatcherFence,
  ) {}

  async run<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          if (this.fence) await holdFence(trx, this.dialect, this.fence);
          return work(trx);
        });
      } catch (error) {
        if (attempt >= MAX_TX_ATTEMPTS || !(error instanceof StaleRow || isDeadlock(error))) throw error;
      }
    }
  }
}
