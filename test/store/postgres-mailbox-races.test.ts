/**
 * Reservations and team states on PostgreSQL, where two gateways (or one gateway's pool) change them at once: two
 * stores on one schema race in a loop. Exactly one wins each round; without the lock both reservations read "no
 * conflict" and both insert, and without the state in the UPDATE's WHERE both shutdowns would succeed.
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

    it('a team shut down and resumed by both at once: each change wins once, from the state it left', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const team = `t${round}`;
        const shut = await Promise.all([
          a.mailbox.setTeamState(team, ['active'], { state: 'stopping', release: false }, 1000),
          b.mailbox.setTeamState(team, ['active'], { state: 'stopping', release: true }, 1000),
        ]);
        expect(shut.filter(Boolean)).toHaveLength(1);
        const stopped = await Promise.all([
          a.mailbox.setTeamState(team, ['stopping'], { state: 'stopped', release: false }, 1001),
          b.mailbox.setTeamState(team, ['stopping'], { state: 'stopped', release: false }, 1001),
        ]);
        expect(stopped.filter(Boolean)).toHaveLength(1);
        expect((await a.mailbox.teamState(team)).state).toBe('stopped');
      }
    });
  });
}
