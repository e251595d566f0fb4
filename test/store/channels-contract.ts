/**
 * The channel store's contract (src/ports/channels.ts), run unchanged on SQLite and PostgreSQL: a sender is added once
 * (the one caller told so sends the one refusal or code), a pairing is approved once and only with its code, and a
 * reply's parts keep their first ids.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChannelStore, Store } from '../../src/ports/index.js';

const pending = { channel: 'telegram', account: 'main', senderId: '42', name: 'ada', status: 'pending' as const, code: 'K7Q2M9XD' };

export function describeChannelsContract(name: string, open: () => Promise<Store>): void {
  describe(`channel store contract: ${name}`, () => {
    let store: Store;
    let channels: ChannelStore;
    beforeEach(async () => {
      store = await open();
      channels = store.channels;
    });
    afterEach(async () => {
      await store.close();
    });

    it('adds a sender once: the second add changes nothing and says so', async () => {
      expect(await channels.addSender(pending, 100)).toBe(true);
      expect(await channels.addSender({ ...pending, status: 'refused', code: null, name: 'other' }, 200)).toBe(false);
      expect(await channels.sender('telegram', 'main', '42')).toEqual({ ...pending, createdAt: 100, updatedAt: 100 });
      expect(await channels.sender('telegram', 'other', '42')).toBeUndefined();
      expect(await channels.sender('slack', 'main', '42')).toBeUndefined();
    });

    it('approves a pairing once, by its code (in any case), only while pending and only on its channel', async () => {
      await channels.addSender(pending, 100);
      expect(await channels.approvePairing('slack', 'K7Q2M9XD', 150)).toBeUndefined();
      expect(await channels.approvePairing('telegram', 'WRONG', 150)).toBeUndefined();
      expect(await channels.approvePairing('telegram', 'k7q2m9xd', 200)).toEqual({
        ...pending,
        status: 'allowed',
        code: null,
        createdAt: 100,
        updatedAt: 200,
      });
      expect(await channels.approvePairing('telegram', 'K7Q2M9XD', 300)).toBeUndefined();
      expect((await channels.sender('telegram', 'main', '42'))?.status).toBe('allowed');
    });

    it("sets a known sender's status and lists senders by channel and status, newest first", async () => {
      await channels.addSender(pending, 100);
      await channels.addSender({ ...pending, senderId: '43', status: 'refused', code: null }, 110);
      await channels.addSender({ ...pending, channel: 'slack', senderId: 'U1', code: 'AAAA0000' }, 120);
      expect(await channels.setSenderStatus('telegram', 'main', 'nobody', 'allowed', 130)).toBeUndefined();
      expect(await channels.setSenderStatus('telegram', 'main', '43', 'allowed', 140)).toMatchObject({ status: 'allowed', updatedAt: 140 });
      expect((await channels.listSenders({ channel: 'telegram' })).map((s) => s.senderId)).toEqual(['43', '42']);
      expect((await channels.listSenders({ status: 'pending' })).map((s) => `${s.channel}/${s.senderId}`)).toEqual([
        'slack/U1',
        'telegram/42',
      ]);
      expect(await channels.listSenders({ limit: 1 })).toHaveLength(1);
    });

    it("records a reply's parts in order, keeping the first id of a part recorded twice", async () => {
      expect(await channels.sentParts('row-1')).toEqual([]);
      await channels.recordPart('row-1', 0, 'm-10', 100);
      await channels.recordPart('row-1', 1, 'm-11', 101);
      await channels.recordPart('row-1', 1, 'm-99', 102);
      await channels.recordPart('row-2', 0, 'm-20', 103);
      expect(await channels.sentParts('row-1')).toEqual(['m-10', 'm-11']);
      expect(await channels.sentParts('row-2')).toEqual(['m-20']);
    });
  });
}
