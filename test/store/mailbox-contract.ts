/**
 * The mailbox store's contract (src/ports/mailbox.ts), run unchanged on SQLite and PostgreSQL: a reservation is a
 * compare-and-set against every live overlapping one of another holder, renewed in place by its own holder, gone once
 * expired or released.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MailboxStore, Store } from '../../src/ports/index.js';

const request = (holder: string, absolute: string, ttlMs = 1000, reason: string | null = null) => ({
  holder,
  pattern: absolute.replace('/w/', ''),
  absolute,
  reason,
  ttlMs,
});

export function describeMailboxContract(name: string, open: () => Promise<Store>): void {
  describe(`mailbox store contract: ${name}`, () => {
    let store: Store;
    let mailbox: MailboxStore;
    beforeEach(async () => {
      store = await open();
      mailbox = store.mailbox;
    });
    afterEach(async () => {
      await store.close();
    });

    it('refuses an overlapping reservation of another holder with the holder, both ways, and allows disjoint ones', async () => {
      expect(await mailbox.reserve(request('Ops', '/w/src/', 1000, 'refactor'), 100)).toEqual({
        ok: true,
        reservation: { holder: 'Ops', pattern: 'src/', absolute: '/w/src/', reason: 'refactor', since: 100, expiresAt: 1100 },
      });
      expect(await mailbox.reserve(request('Dev', '/w/src/a.ts'), 200)).toMatchObject({
        ok: false,
        conflict: { holder: 'Ops', pattern: 'src/', reason: 'refactor' },
      });
      expect(await mailbox.reserve(request('Dev', '/w/'), 200)).toMatchObject({ ok: false, conflict: { holder: 'Ops' } });
      expect(await mailbox.reserve(request('Dev', '/w/srcx/a.ts'), 200)).toMatchObject({ ok: true });
      expect(await mailbox.reserve(request('Dev', '/w/src'), 200)).toMatchObject({ ok: false, conflict: { holder: 'Ops' } });
      expect((await mailbox.reservations(300)).map((held) => `${held.holder}:${held.pattern}`)).toEqual(['Ops:src/', 'Dev:srcx/a.ts']);
    });

    it('renews the holder its own reservation keeping since, and lets it overlap itself', async () => {
      await mailbox.reserve(request('Ops', '/w/src/', 1000), 100);
      expect(await mailbox.reserve(request('Ops', '/w/src/', 5000, 'longer'), 600)).toMatchObject({
        ok: true,
        reservation: { since: 100, expiresAt: 5600, reason: 'longer' },
      });
      expect(await mailbox.reserve(request('Ops', '/w/src/a.ts'), 700)).toMatchObject({ ok: true });
      expect(await mailbox.reservations(800, 'Ops')).toHaveLength(2);
    });

    it('an expired reservation holds nothing; a released one is gone, and release answers only live patterns', async () => {
      await mailbox.reserve(request('Ops', '/w/a/', 100), 1000);
      expect(await mailbox.reserve(request('Dev', '/w/a/x'), 1100)).toMatchObject({ ok: true });
      expect(await mailbox.reservations(1100)).toMatchObject([{ holder: 'Dev' }]);
      await mailbox.reserve(request('Ops', '/w/b/'), 1100);
      await mailbox.reserve(request('Ops', '/w/c/'), 1100);
      expect(await mailbox.release('Ops', ['b/'], 1200)).toEqual(['b/']);
      expect(await mailbox.release('Ops', [], 1200)).toEqual([]);
      expect(await mailbox.release('Ops', undefined, 1200)).toEqual(['c/']);
      expect(await mailbox.reservations(1200, 'Ops')).toEqual([]);
      expect(await mailbox.release('Nobody', undefined, 1200)).toEqual([]);
    });

    it('team state: active until changed, each change a compare-and-set from the states it may leave', async () => {
      expect(await mailbox.teamState('crew')).toEqual({ teamId: 'crew', state: 'active', release: false, changedAt: 0 });
      expect(await mailbox.setTeamState('crew', ['stopping'], { state: 'stopped', release: false }, 5)).toBeUndefined();
      expect(await mailbox.setTeamState('crew', ['active'], { state: 'stopping', release: true }, 10)).toEqual({
        teamId: 'crew',
        state: 'stopping',
        release: true,
        changedAt: 10,
      });
      expect(await mailbox.setTeamState('crew', ['active'], { state: 'stopping', release: false }, 11)).toBeUndefined();
      expect(await mailbox.setTeamState('crew', ['stopping'], { state: 'stopped', release: false }, 12)).toMatchObject({
        state: 'stopped',
      });
      expect(await mailbox.teamState('crew')).toEqual({ teamId: 'crew', state: 'stopped', release: false, changedAt: 12 });
      expect(await mailbox.setTeamState('crew', ['stopping', 'stopped'], { state: 'active', release: false }, 13)).toMatchObject({
        state: 'active',
      });
      expect((await mailbox.teamState('other')).state).toBe('active');
    });
  });
}
