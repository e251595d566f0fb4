/**
 * Reservations on PostgreSQL, where two gateways (or one gateway's pool) reserve at once: two stores on one schema
 * race for overlapping patterns in a loop. Exactly one wins each round; without the lock both read "no conflict"
 * and both insert.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/index.js';
import { postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const ROUNDS = 40;

if (process.env.CI || (await postgresReachable())) {
  describe('postgres mailbox races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_mailrace', (first, second) => {
      a = first;
      b = second;
    });

    it('a folder and a file in it, reserved by two holders at once: one of them holds it', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const folder = `/w/r${round}/`;
        const outcomes = await Promise.all([
          a.mailbox.reserve({ holder: 'Ops', pattern: folder, absolute: folder, reason: null, ttlMs: 60_000 }, 1000),
          b.mailbox.reserve({ holder: 'Dev', pattern: `${folder}x`, absolute: `${folder}x`, reason: null, ttlMs: 60_000 }, 1000),
        ]);
        expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1);
        expect(await a.mailbox.reservations(1000)).toHaveLength(round + 1);
      }
    });
  });
}
