/** Who may talk (docs/channels.md, "Who may talk"): ids and platform handles let in, display names never; one code per sender. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { judge, listed } from '../../src/channels/access.js';
import { sessionKeyOf } from '../../src/channels/front.js';
import { parseConfigText } from '../../src/config/load.js';
import type { ChannelConfig } from '../../src/config/schema-channels.js';
import type { ChatMessage, ChatSender, Store } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let store: Store;
beforeEach(async () => {
  store = await SqliteStore.open({ path: ':memory:' });
});
afterEach(async () => {
  await store.close();
});

function channel(access: string): ChannelConfig {
  const { config } = parseConfigText(
    `{ agents: { list: [{ id: "a", model: "scripted/a" }] }, models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "x" }] } } } } }, channels: { telegram: { access: ${access}, accounts: { main: { token: "1:x" } } } } }`,
    '/test/sb.json5',
    {},
  );
  const { accounts: _accounts, ...rest } = config.channels.telegram!;
  return rest;
}

const direct = (sender: ChatSender): ChatMessage => ({
  id: '1',
  place: { conversation: sender.id, kind: 'direct' },
  sender,
  text: 'hi',
  attachments: [],
  addressed: true,
});

describe('who may talk', () => {
  it('lets in by id or by the platform handle, never by a display name', () => {
    const users = ['1001', '@alice'];
    expect(listed(users, { id: '1001' })).toBe(true);
    expect(listed(users, { id: '7', handle: '@alice' })).toBe(true);
    expect(listed(users, { id: '7', name: '1001' })).toBe(false);
    expect(listed(users, { id: '7', name: '@alice' })).toBe(false);
  });

  it('under allowlist, refuses a paired sender and anyone named like a listed one', async () => {
    const config = channel('{ direct: "allowlist", users: ["1001"] }');
    await store.channels.addSender({ channel: 'telegram', account: 'main', senderId: '7', name: null, status: 'allowed', code: null }, 1);
    expect(await judge(store.channels, config, 'main', 'telegram', direct({ id: '7' }), 2)).toEqual({
      let: false,
      why: 'sender 7 is not in channels.telegram.access.users',
      tell: 'Sorry, this assistant only talks to people its operator has let in.',
    });
    expect((await judge(store.channels, config, 'main', 'telegram', direct({ id: '8', name: '1001' }), 2)).let).toBe(false);
    expect((await judge(store.channels, config, 'main', 'telegram', direct({ id: '1001' }), 2)).let).toBe(true);
  });

  it('under pairing, tells the code on record, the same to every message and every gateway', async () => {
    const config = channel('{ direct: "pairing" }');
    // Another gateway added the sender first, with its code.
    await store.channels.addSender(
      { channel: 'telegram', account: 'main', senderId: '9', name: null, status: 'pending', code: 'FIRSTCDE' },
      1,
    );
    const verdict = await judge(store.channels, config, 'main', 'telegram', direct({ id: '9' }), 2);
    expect(verdict).toEqual({
      let: false,
      why: 'sender 9 is not paired (pairing code FIRSTCDE)',
      tell: 'Sorry, this assistant only talks to people its operator has let in. To be let in, ask the operator to run: switchboard channels pair telegram FIRSTCDE',
    });
    expect(await judge(store.channels, config, 'main', 'telegram', direct({ id: '9' }), 3)).toEqual(verdict);
    await store.channels.approvePairing('telegram', 'FIRSTCDE', 4);
    expect((await judge(store.channels, config, 'main', 'telegram', direct({ id: '9' }), 5)).let).toBe(true);
  });

  it("an operator's revoke shuts out a listed sender, one under direct: open, and a listed group", async () => {
    const revoke = (senderId: string) =>
      store.channels.addSender({ channel: 'telegram', account: 'main', senderId, name: null, status: 'revoked', code: null }, 1);
    await revoke('1001');
    await revoke('42');
    await revoke('group:-500');
    const listedUser = channel('{ users: ["1001"], groups: ["-500"] }');
    expect(await judge(store.channels, listedUser, 'main', 'telegram', direct({ id: '1001' }), 2)).toEqual({
      let: false,
      why: 'sender 1001 was shut out by an operator',
      tell: 'Sorry, this assistant only talks to people its operator has let in.',
    });
    expect((await judge(store.channels, channel('{ direct: "open" }'), 'main', 'telegram', direct({ id: '42' }), 2)).let).toBe(false);
    const inGroup: ChatMessage = { ...direct({ id: '7' }), place: { conversation: '-500', kind: 'group' } };
    expect(await judge(store.channels, listedUser, 'main', 'telegram', inGroup, 2)).toEqual({
      let: false,
      why: 'group -500 was shut out by an operator (switchboard channels revoke)',
    });
  });
});

describe('channel session keys', () => {
  const message = (place: ChatMessage['place'], sender = 'u1'): ChatMessage => ({ ...direct({ id: sender }), place });

  it("keep each webhook account's sessions apart, and a platform's by its ids", () => {
    const place = { conversation: 'c1', kind: 'direct' as const };
    expect(sessionKeyOf('a', 'webhook', 'ops', message(place))).toBe('agent:a:webhook-ops:direct:u1');
    expect(sessionKeyOf('a', 'webhook', 'sales', message(place))).toBe('agent:a:webhook-sales:direct:u1');
    expect(sessionKeyOf('a', 'slack', 'work', message({ conversation: 'C1', kind: 'group', thread: '17.5' }))).toBe(
      'agent:a:slack:group:C1/17.5',
    );
  });

  it('keep an id with a colon one segment, and hash a long one, so the key stays a key', () => {
    expect(sessionKeyOf('a', 'webhook', 'ops', message({ conversation: 'c', kind: 'direct' }, 'x:y'))).toBe(
      'agent:a:webhook-ops:direct:x%3ay',
    );
    const long = sessionKeyOf('a', 'webhook', 'ops', message({ conversation: 'é'.repeat(128), kind: 'group' }));
    expect(long).toMatch(/^agent:a:webhook-ops:group:h-[0-9a-f]{40}$/);
  });
});
