import { afterEach, describe, expect, it } from 'vitest';
import { OutboxDispatcher } from '../../src/gateway/durability/outbox.js';
import { RetryLaterError } from '../../src/kit/retry.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { waitUntil } from '../helpers/wait.js';

let now = 1_000_000;
const clock = { now: () => now };
let store: SqliteStore;
let dispatcher: OutboxDispatcher;
afterEach(async () => {
  await dispatcher?.stop();
  await store?.close();
});

const until = (check: () => Promise<boolean>) => waitUntil('the outbox row reaches the expected state', check);

describe('outbox dispatcher', () => {
  it('outbox: retries a failing delivery with backoff, then delivers once', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const settled: string[] = [];
    dispatcher = new OutboxDispatcher(
      store,
      clock,
      { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000, pollMs: 5, random: () => 1 },
      (_row, outcome) => settled.push(outcome),
    );
    let calls = 0;
    dispatcher.register('ping', async () => {
      calls += 1;
      if (calls < 3) throw new Error(`receiver down (${calls})`);
    });
    const row = await store.outbox.add({ id: 'o1', kind: 'ping', target: 't', payload: {}, idempotencyKey: 'ping:1' }, now);
    await dispatcher.start();
    await until(async () => (await store.outbox.get(row.id))!.attempts === 1);
    expect(await store.outbox.get(row.id)).toMatchObject({ status: 'pending', lastError: 'receiver down (1)', nextAttemptAt: now + 100 });
    now += 100;
    await until(async () => (await store.outbox.get(row.id))!.attempts === 2);
    expect(await store.outbox.get(row.id)).toMatchObject({ nextAttemptAt: now + 200 });
    now += 200;
    await until(async () => (await store.outbox.get(row.id))!.status === 'delivered');
    expect(calls).toBe(3);
    expect(settled).toEqual(['retry', 'retry', 'delivered']);
  });

  it('outbox: gives up to the dead-letter state after maxAttempts', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const settled: string[] = [];
    dispatcher = new OutboxDispatcher(
      store,
      clock,
      { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1, pollMs: 5, random: () => 0 },
      (_row, outcome) => settled.push(outcome),
    );
    const row = await store.outbox.add({ id: 'o2', kind: 'nobody-handles-this', target: 't', payload: {}, idempotencyKey: 'x:1' }, now);
    await dispatcher.start();
    await until(async () => (await store.outbox.get(row.id))!.attempts === 1);
    now += 10;
    await until(async () => (await store.outbox.get(row.id))!.status === 'dead');
    expect(await store.outbox.get(row.id)).toMatchObject({
      status: 'dead',
      attempts: 2,
      lastError: 'no outbox handler for kind "nobody-handles-this"',
    });
    expect(settled).toEqual(['retry', 'dead']);
  });
});

describe('outbox dispatcher rate limits', () => {
  it("outbox: waits at least a receiver's retry-after, and rate limits take ten times the attempts to make a dead letter", async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    dispatcher = new OutboxDispatcher(store, clock, { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20, pollMs: 5, random: () => 1 });
    let calls = 0;
    dispatcher.register('chat', async () => {
      calls += 1;
      if (calls <= 3) throw new RetryLaterError(`429 (${calls})`, 5000);
    });
    const row = await store.outbox.add({ id: 'o3', kind: 'chat', target: 't', payload: {}, idempotencyKey: 'chat:1' }, now);
    await dispatcher.start();
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(async () => (await store.outbox.get(row.id))!.attempts === attempt);
      // Past maxAttempts (2), still pending (a rate limit counts a tenth); the next try at the receiver's 5 s, not the
      // outbox's 20 ms at most.
      expect(await store.outbox.get(row.id)).toMatchObject({ status: 'pending', lastError: `429 (${attempt})`, nextAttemptAt: now + 5000 });
      now += 5000;
    }
    await until(async () => (await store.outbox.get(row.id))!.status === 'delivered');
    expect(calls).toBe(4);
  });
});

describe('outbox dispatcher failures', () => {
  it('outbox: a pass that cannot read the store is reported, and the next poll tries again', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    let failures = 0;
    const errors: string[] = [];
    const flaky = {
      ...store,
      outbox: Object.assign(Object.create(store.outbox), {
        listDue: async (at: number, limit: number) => {
          if (failures++ < 2) throw new Error('database is locked');
          return store.outbox.listDue(at, limit);
        },
      }),
    } as typeof store;
    dispatcher = new OutboxDispatcher(
      flaky,
      clock,
      { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1, pollMs: 5 },
      () => {},
      (error) => errors.push(String(error)),
    );
    let delivered = 0;
    dispatcher.register('ping', async () => {
      delivered += 1;
    });
    await store.outbox.add({ id: 'o3', kind: 'ping', target: 't', payload: {}, idempotencyKey: 'ping:3' }, now);
    await dispatcher.start();
    await until(async () => (await store.outbox.get('o3'))!.status === 'delivered');
    expect(errors).toEqual(['Error: database is locked', 'Error: database is locked']);
    expect(delivered).toBe(1);
  });

  it("outbox: a slow target holds back only itself; each target's rows go one at a time, in order", async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    dispatcher = new OutboxDispatcher(store, clock, { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1, pollMs: 5, concurrencyPerKind: 4 });
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    let running = 0;
    let maxRunningSlow = 0;
    dispatcher.register('hook', async (row) => {
      if (row.target === 'slow') {
        running += 1;
        maxRunningSlow = Math.max(maxRunningSlow, running);
        await slow;
        running -= 1;
      }
      order.push(`${row.target}:${(row.payload as { n: number }).n}`);
    });
    for (let n = 1; n <= 3; n += 1)
      await store.outbox.add({ id: `s${n}`, kind: 'hook', target: 'slow', payload: { n }, idempotencyKey: `s:${n}` }, now);
    for (let n = 1; n <= 3; n += 1)
      await store.outbox.add({ id: `f${n}`, kind: 'hook', target: 'fast', payload: { n }, idempotencyKey: `f:${n}` }, now);
    await dispatcher.start();
    await until(async () => order.length === 3);
    expect(order).toEqual(['fast:1', 'fast:2', 'fast:3']);
    release();
    await until(async () => order.length === 6);
    expect(order.slice(3)).toEqual(['slow:1', 'slow:2', 'slow:3']);
    expect(maxRunningSlow).toBe(1);
  });

  it('outbox: an attempt that outlived its claim has its mark refused, and logs that once with the row and the claim it held', async () => {
    store = await SqliteStore.open({ path: ':memory:' });
    const settled: string[] = [];
    const fenced: { message: string; fields: Record<string, unknown> }[] = [];
    dispatcher = new OutboxDispatcher(
      store,
      clock,
      { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1, pollMs: 5, claimMs: 1000, owner: 'gw-paused' },
      (_row, outcome) => settled.push(outcome),
      () => {},
      (message, fields) => void fenced.push({ message, fields }),
    );
    let taken = false;
    dispatcher.register('hook', async (row) => {
      if (taken) return;
      // The attempt is paused past its claim; another gateway claims the row meanwhile.
      now += 1001;
      expect(await store.outbox.claim(row.id, 'gw-other', now, 1000)).toMatchObject({ id: row.id });
      taken = true;
    });
    await store.outbox.add({ id: 'o4', kind: 'hook', target: 'peer', payload: {}, idempotencyKey: 'hook:4' }, now);
    await dispatcher.start();
    await until(async () => fenced.length === 1);
    expect(fenced).toEqual([
      {
        message:
          "outbox row o4 (hook to peer): its delivery was not recorded: this gateway's claim on it (token 1) ended after 1000 ms and another attempt took the row over, which settles it (a receiver that saw both dedupes by idempotency key hook:4)",
        fields: { outboxId: 'o4', kind: 'hook', claimToken: 1 },
      },
    ]);
    expect(settled).toEqual([]);
    expect(await store.outbox.get('o4')).toMatchObject({ status: 'pending' });
  });
});
