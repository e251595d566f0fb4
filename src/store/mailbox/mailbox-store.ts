/**
 * The file mailbox's reservations over Kysely (docs/mailbox.md). A reservation is taken one at a time across the
 * database (PostgreSQL: a transaction-scoped advisory lock; SQLite has one writer), so two holders racing for
 * overlapping patterns cannot both win: overlap is a question about two rows, which no unique key can answer.
 */
import type { Kysely, Selectable } from 'kysely';
import { reservationsOverlap } from '../../core/reservations.js';
import type { MailboxReservationRecord, MailboxStore, ReserveOutcome, TeamState, TeamStateRecord } from '../../ports/index.js';
import { num } from '../sql/rows.js';
import type { Database, MailboxReservationsTable } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

function toReservation(row: Selectable<MailboxReservationsTable>): MailboxReservationRecord {
  return {
    holder: row.holder,
    pattern: row.pattern,
    absolute: row.absolute,
    reason: row.reason,
    since: num(row.since),
    expiresAt: num(row.expires_at),
  };
}

export class KyselyMailboxStore implements MailboxStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {}

  reserve(
    request: { holder: string; pattern: string; absolute: string; reason: string | null; ttlMs: number },
    now: number,
  ): Promise<ReserveOutcome> {
    return this.db.transaction().execute(async (trx) => {
      await this.dialect.lockName(trx, 'switchboard.mailbox_reservations');
      const live = await trx.selectFrom('mailbox_reservations').selectAll().where('expires_at', '>', now).execute();
      const conflict = live.find((row) => row.holder !== request.holder && reservationsOverlap(row.absolute, request.absolute));
      if (conflict) return { ok: false, conflict: toReservation(conflict) };
      const own = live.find((row) => row.holder === request.holder && row.pattern === request.pattern);
      const row = {
        holder: request.holder,
        pattern: request.pattern,
        absolute: request.absolute,
        reason: request.reason,
        since: own ? num(own.since) : now,
        expires_at: now + request.ttlMs,
      };
      await trx
        .insertInto('mailbox_reservations')
        .values(row)
        .onConflict((conflict) =>
          conflict.columns(['holder', 'pattern']).doUpdateSet({
            absolute: row.absolute,
            reason: row.reason,
            since: row.since,
            expires_at: row.expires_at,
          }),
        )
        .execute();
      return { ok: true, reservation: toReservation(row) };
    });
  }

  async release(holder: string, patterns: readonly string[] | undefined, now: number): Promise<string[]> {
    if (patterns?.length === 0) return [];
    let query = this.db.deleteFrom('mailbox_reservations').where('holder', '=', holder);
    if (patterns) query = query.where('pattern', 'in', [...patterns]);
    const released = await query.returning(['pattern', 'expires_at']).execute();
    return released.filter((row) => num(row.expires_at) > now).map((row) => row.pattern);
  }

  async reservations(now: number, holder?: string): Promise<MailboxReservationRecord[]> {
    let query = this.db.selectFrom('mailbox_reservations').selectAll().where('expires_at', '>', now);
    if (holder !== undefined) query = query.where('holder', '=', holder);
    return (await query.orderBy('since').orderBy('holder').orderBy('pattern').execute()).map(toReservation);
  }

  async teamState(teamId: string): Promise<TeamStateRecord> {
    const row = await this.db.selectFrom('team_states').selectAll().where('team_id', '=', teamId).executeTakeFirst();
    if (!row) return { teamId, state: 'active', release: false, changedAt: 0 };
    return { teamId, state: row.state as TeamState, release: num(row.release) === 1, changedAt: num(row.changed_at) };
  }

  async setTeamState(
    teamId: string,
    from: readonly TeamState[],
    to: { state: TeamState; release: boolean },
    now: number,
  ): Promise<TeamStateRecord | undefined> {
    const values = { state: to.state, release: to.release ? 1 : 0, changed_at: now };
    // A team never shut down has no row: it is `active`, and its first change inserts one.
    if (from.includes('active')) {
      const inserted = await this.db
        .insertInto('team_states')
        .values({ team_id: teamId, ...values })
        .onConflict((conflict) => conflict.column('team_id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { teamId, ...to, changedAt: now };
    }
    const updated = await this.db
      .updateTable('team_states')
      .set(values)
      .where('team_id', '=', teamId)
      .where('state', 'in', [...from])
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1 ? { teamId, ...to, changedAt: now } : undefined;
  }
}
