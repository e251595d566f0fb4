/**
 * The schedule store's contract (src/ports/schedules.ts), run unchanged on SQLite and PostgreSQL: a schedule's anchor
 * is set once and only moved later, a slot is claimed once, its first record (fired or given up) stands, and the state
 * names the newest claimed slot, the newest fired one and the claimed slots neither fired nor given up.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ScheduleStore, Store } from '../../src/ports/index.js';

export function describeSchedulesContract(name: string, open: () => Promise<Store>): void {
  describe(`schedule store contract: ${name}`, () => {
    let store: Store;
    let schedules: ScheduleStore;
    beforeEach(async () => {
      store = await open();
      schedules = store.schedules;
    });
    afterEach(async () => {
      await store.close();
    });

    it('anchors a schedule at its first sighting and keeps that time', async () => {
      expect(await schedules.anchor('daily', 1000)).toBe(1000);
      expect(await schedules.anchor('daily', 5000)).toBe(1000);
      expect(await schedules.anchor('hourly', 7000)).toBe(7000);
    });

    it('reanchors a schedule at a later time only, inserting it when it has none', async () => {
      await schedules.anchor('daily', 1000);
      expect(await schedules.reanchor('daily', 5000)).toBe(5000);
      expect(await schedules.reanchor('daily', 3000)).toBe(5000);
      expect(await schedules.anchor('daily', 9000)).toBe(5000);
      expect(await schedules.reanchor('new', 7000)).toBe(7000);
      expect((await schedules.states(['daily', 'new'])).map((state) => state.since)).toEqual([5000, 7000]);
    });

    it('gives a slot up: no longer unfired nor the last fired, a fired slot left as it is, and pruned as a fired one', async () => {
      for (const slot of [100, 200, 300]) await schedules.claim('a', slot, 'gw-a', slot);
      await schedules.markFired('a', 100, 'in-100', 150);
      await schedules.giveUp('a', 200, 250);
      await schedules.giveUp('a', 300, 350);
      await schedules.giveUp('a', 100, 360);
      await schedules.markFired('a', 300, 'in-300', 370);
      expect((await schedules.states(['a']))[0]).toEqual({
        scheduleId: 'a',
        since: null,
        lastSlotAt: 300,
        lastFired: { slotAt: 100, inputId: 'in-100', firedAt: 150 },
        unfired: [],
      });
      expect(await schedules.prune('a', 300, 1000)).toBe(2);
      expect((await schedules.states(['a']))[0]).toMatchObject({ lastSlotAt: 300, lastFired: null, unfired: [] });
    });

    it('claims a slot once: the second claim, by any gateway, is refused', async () => {
      expect(await schedules.claim('daily', 60_000, 'gw-a', 60_001)).toBe(true);
      expect(await schedules.claim('daily', 60_000, 'gw-b', 60_002)).toBe(false);
      expect(await schedules.claim('daily', 60_000, 'gw-a', 60_003)).toBe(false);
      expect(await schedules.claim('daily', 120_000, 'gw-b', 120_001)).toBe(true);
      expect(await schedules.claim('other', 60_000, 'gw-b', 60_001)).toBe(true);
    });

    it('states: the newest claimed slot, the newest fired one with its input, and the unfired ones oldest first', async () => {
      await schedules.anchor('a', 10);
      for (const slot of [100, 200, 300, 400]) await schedules.claim('a', slot, 'gw-a', slot);
      await schedules.markFired('a', 100, 'in-100', 150);
      await schedules.markFired('a', 300, 'in-300', 350);
      await schedules.claim('b', 100, 'gw-b', 100);
      expect(await schedules.states(['a', 'b', 'c'])).toEqual([
        { scheduleId: 'a', since: 10, lastSlotAt: 400, lastFired: { slotAt: 300, inputId: 'in-300', firedAt: 350 }, unfired: [200, 400] },
        { scheduleId: 'b', since: null, lastSlotAt: 100, lastFired: null, unfired: [100] },
        { scheduleId: 'c', since: null, lastSlotAt: null, lastFired: null, unfired: [] },
      ]);
      expect((await schedules.states()).map((state) => state.scheduleId)).toEqual(['a', 'b']);
      expect(await schedules.states([])).toEqual([]);
    });

    it('keeps the first fired record of a slot: firing it again after a crash changes nothing', async () => {
      await schedules.claim('a', 100, 'gw-a', 100);
      await schedules.markFired('a', 100, 'in-first', 150);
      await schedules.markFired('a', 100, 'in-second', 160);
      const [state] = await schedules.states(['a']);
      expect(state.lastFired).toEqual({ slotAt: 100, inputId: 'in-first', firedAt: 150 });
      expect(state.unfired).toEqual([]);
    });

    it('prunes fired slots before the given one fired before the given time, never unfired ones or other schedules', async () => {
      for (const slot of [100, 200, 300, 400]) await schedules.claim('a', slot, 'gw-a', slot);
      await schedules.claim('b', 100, 'gw-a', 100);
      await schedules.markFired('b', 100, 'in-b', 110);
      await schedules.markFired('a', 100, 'in-100', 110);
      await schedules.markFired('a', 300, 'in-300', 310);
      await schedules.markFired('a', 400, 'in-400', 410);
      // 200 is unfired; 400 is the newest; 300 fired too recently.
      expect(await schedules.prune('a', 400, 300)).toBe(1);
      const [a, b] = await schedules.states(['a', 'b']);
      expect(a).toMatchObject({ lastSlotAt: 400, lastFired: { slotAt: 400 }, unfired: [200] });
      expect(b.lastFired).toMatchObject({ slotAt: 100 });
      expect(await schedules.claim('a', 100, 'gw-a', 500)).toBe(true);
      expect(await schedules.claim('a', 300, 'gw-a', 500)).toBe(false);
      // Later, 300 is old enough; 100 (claimed again above, unfired) and 200 stay.
      expect(await schedules.prune('a', 400, 1000)).toBe(1);
      expect((await schedules.states(['a']))[0].unfired).toEqual([100, 200]);
    });
  });
}
