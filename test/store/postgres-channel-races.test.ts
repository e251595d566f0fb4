/**
 * The channel store on PostgreSQL, where two gateways (or one gateway's pool) take the same platform message at once: two
 * stores on one schema race in a loop. Exactly one `addSender` inserts each sender (so one refusal or pairing code is
 * sent), and one `approvePairing` of a code lets the sender in; the other is told nothing changed.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/index.js';
import { postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const ROUNDS = 40;

if (process.env.CI || (await postgresReachable())) {
  describe('postgres channel races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_chanrace', (first, second) => {
      a = first;
      b = second;
    });

    it('one sender added by both at once: exactly one of them inserted it', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const sender = { channel: 'telegram', account: 'main', senderId: `s${round}`, name: null, status: 'pending' as const };
        const added = await Promise.all([
          a.channels.addSender({ ...sender, code: `A${round}` }, 1000),
          b.channels.addSender({ ...sender, code: `B${round}` }, 1000),
        ]);
        expect(added.filter(Boolean)).toHaveLength(1);
        // The code on record is the winner's, the one its caller sent.
        const code = (await a.channels.sender('telegram', 'main', `s${round}`))?.code;
        expect(code).toBe(added[0] ? `A${round}` : `B${round}`);
      }
    });

    it('one pairing code approved by both at once: exactly one approval', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const code = `P${round}`;
        await a.channels.addSender({ channel: 'slack', account: 'w', senderId: `u${round}`, name: null, status: 'pending', code }, 1000);
        const approved = await Promise.all([
          a.channels.approvePairing('slack', code, 1001),
          b.channels.approvePairing('slack', code, 1001),
        ]);
        expect(approved.filter(Boolean)).toHaveLength(1);
      }
    });
  });
}
