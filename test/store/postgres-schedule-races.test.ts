/**
 * Schedule slots on PostgreSQL, where several gateways claim the same slot at the same moment: two stores on one
 * schema (each with a pool of its own) race for each slot in a loop. Exactly one claim wins each round; a claim that
 * read first and inserted after (no compare-and-set) lets both win.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/index.js';
import { postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const ROUNDS = 60;

if (process.env.CI || (await postgresReachable())) {
  describe('postgres schedule races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_schedrace', (first, second) => {
      a = first;
      b = second;
    });

    it('a slot claimed by two gateways at once, four claims a round: one of them wins', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const slot = 60_000 * (round + 1);
        const claims = await Promise.all([
          a.schedules.claim('race', slot, 'gw-a', 1),
          b.schedules.claim('race', slot, 'gw-b', 1),
          a.schedules.claim('race', slot, 'gw-a', 1),
          b.schedules.claim('race', slot, 'gw-b', 1),
        ]);
        expect(claims.filter(Boolean)).toHaveLength(1);
      }
      const [state] = await a.schedules.states(['race']);
      expect(state).toMatchObject({ lastSlotAt: 60_000 * ROUNDS, unfired: Array.from({ length: ROUNDS }, (_, i) => 60_000 * (i + 1)) });
    });

    it('a schedule anchored by both at once keeps one time, the same for both', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [first, second] = await Promise.all([a.schedules.anchor(`s${round}`, 1000), b.schedules.anchor(`s${round}`, 2000)]);
        expect(first).toBe(second);
      }
    });
  });
}
