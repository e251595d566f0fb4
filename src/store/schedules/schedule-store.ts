/**
 * Schedules' slots over Kysely (ports/schedules.ts, docs/schedules.md), in SQL both engines take. A claim is an
 * insert that does nothing on the slot's primary key: of two gateways claiming one slot at once, the database lets
 * one insert and the other see the conflict, so no read comes before the write and nothing needs a lock.
 */
import type { Kysely } from 'kysely';
import type { ScheduleStateRecord, ScheduleStore } from '../../ports/index.js';
import type { Database } from '../schema/database.js';
import { num } from '../sql/rows.js';

export class KyselyScheduleStore implements ScheduleStore {
  constructor(private readonly db: Kysely<Database>) {}

  async anchor(scheduleId: string, at: number): Promise<number> {
    await this.db
      .insertInto('schedule_anchors')
      .values({ schedule_id: scheduleId, since: at })
      .onConflict((conflict) => conflict.column('schedule_id').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('schedule_anchors')
      .select('since')
      .where('schedule_id', '=', scheduleId)
      .executeTakeFirstOrThrow();
    return num(row.since);
  }

  async reanchor(scheduleId: string, at: number): Promise<number> {
    // An upsert that only moves the anchor later: two gateways taking one change a moment apart leave the later time.
    await this.db
      .insertInto('schedule_anchors')
      .values({ schedule_id: scheduleId, since: at })
      .onConflict((conflict) => conflict.column('schedule_id').doUpdateSet({ since: at }).where('schedule_anchors.since', '<', at))
      .execute();
    return this.anchor(scheduleId, at);
  }

  async claim(scheduleId: string, slotAt: number, gatewayId: string, now: number): Promise<boolean> {
    const inserted = await this.db
      .insertInto('schedule_slots')
      .values({ schedule_id: scheduleId, slot_at: slotAt, claimed_by: gatewayId, claimed_at: now, input_id: null, fired_at: null })
      .onConflict((conflict) => conflict.columns(['schedule_id', 'slot_at']).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async markFired(scheduleId: string, slotAt: number, inputId: string, now: number): Promise<void> {
    await this.db
      .updateTable('schedule_slots')
      .set({ input_id: inputId, fired_at: now })
      .where('schedule_id', '=', scheduleId)
      .where('slot_at', '=', slotAt)
      .where('fired_at', 'is', null)
      .execute();
  }

  async giveUp(scheduleId: string, slotAt: number, now: number): Promise<void> {
    // Fired with no input: out of the unfired slots, and pruned with the fired ones.
    await this.db
      .updateTable('schedule_slots')
      .set({ fired_at: now })
      .where('schedule_id', '=', scheduleId)
      .where('slot_at', '=', slotAt)
      .where('fired_at', 'is', null)
      .execute();
  }

  async states(scheduleIds?: readonly string[]): Promise<ScheduleStateRecord[]> {
    if (scheduleIds?.length === 0) return [];
    const ids = scheduleIds ? [...scheduleIds] : undefined;
    let anchors = this.db.selectFrom('schedule_anchors').select(['schedule_id', 'since']);
    let newest = this.db
      .selectFrom('schedule_slots')
      .select((eb) => ['schedule_id', eb.fn.max('slot_at').as('last_slot_at')])
      .groupBy('schedule_id');
    // The newest fired slot of each schedule: the fired slot no later fired slot of its schedule follows. A slot given
    // up has no input, and is none.
    let fired = this.db
      .selectFrom('schedule_slots as s')
      .select(['s.schedule_id', 's.slot_at', 's.input_id', 's.fired_at'])
      .where('s.input_id', 'is not', null)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('schedule_slots as t')
              .select('t.slot_at')
              .whereRef('t.schedule_id', '=', 's.schedule_id')
              .whereRef('t.slot_at', '>', 's.slot_at')
              .where('t.input_id', 'is not', null),
          ),
        ),
      );
    let unfired = this.db
      .selectFrom('schedule_slots')
      .select(['schedule_id', 'slot_at'])
      .where('fired_at', 'is', null)
      .orderBy('schedule_id')
      .orderBy('slot_at');
    if (ids) {
      anchors = anchors.where('schedule_id', 'in', ids);
      newest = newest.where('schedule_id', 'in', ids);
      fired = fired.where('s.schedule_id', 'in', ids);
      unfired = unfired.where('schedule_id', 'in', ids);
    }
    const states = new Map<string, ScheduleStateRecord>();
    const of = (scheduleId: string) => {
      let state = states.get(scheduleId);
      if (!state) states.set(scheduleId, (state = { scheduleId, since: null, lastSlotAt: null, lastFired: null, unfired: [] }));
      return state;
    };
    for (const id of ids ?? []) of(id);
    for (const row of await anchors.execute()) of(row.schedule_id).since = num(row.since);
    for (const row of await newest.execute()) of(row.schedule_id).lastSlotAt = num(row.last_slot_at);
    for (const row of await fired.execute())
      of(row.schedule_id).lastFired = { slotAt: num(row.slot_at), inputId: row.input_id ?? '', firedAt: num(row.fired_at) };
    for (const row of await unfired.execute()) of(row.schedule_id).unfired.push(num(row.slot_at));
    return [...states.values()].sort((a, b) => (a.scheduleId < b.scheduleId ? -1 : a.scheduleId > b.scheduleId ? 1 : 0));
  }

  async prune(scheduleId: string, slotBefore: number, firedBefore: number): Promise<number> {
    const deleted = await this.db
      .deleteFrom('schedule_slots')
      .where('schedule_id', '=', scheduleId)
      .where('slot_at', '<', slotBefore)
      .where('fired_at', '<', firedBefore)
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }
}
