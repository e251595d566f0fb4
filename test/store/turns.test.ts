import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Turns } from '../../src/store/sqlite/turns.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Holds the thread, as a long synchronous store call would. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('Turns', () => {
  it('lets units go on within the slice, and parks them past it until a later turn, oldest first, a bounded number per turn', async () => {
    const turns = new Turns(1_000, 2);
    // The first unit opens a slice and goes on at once; so do the next ones while it has time left.
    expect(turns.pass()).toBeUndefined();
    expect(turns.pass()).toBeUndefined();

    const spent = new Turns(0, 2);
    expect(spent.pass()).toBeUndefined();
    const order: number[] = [];
    const parked = [1, 2, 3, 4, 5].map((n) => spent.pass()!.then(() => order.push(n)));
    await nextTurn();
    expect(order).toEqual([1, 2]);
    await nextTurn();
    expect(order).toEqual([1, 2, 3, 4]);
    await Promise.all(parked);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('starts a new slice with the first unit after the loop has polled, whenever the last one began', async () => {
    const turns = new Turns(5, 16);
    expect(turns.pass()).toBeUndefined();
    busy(6);
    const parked = turns.pass();
    expect(parked).toBeInstanceOf(Promise);
    await parked;
    // A timer fires after the loop has polled: a unit then waits for nothing, though the last slice began
    // more than 5 ms before.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(turns.pass()).toBeUndefined();
  });

  it('a unit that arrives while others wait waits behind them, even within the slice', async () => {
    const turns = new Turns(5, 1);
    expect(turns.pass()).toBeUndefined();
    busy(6);
    const order: string[] = [];
    const a = turns.pass()!.then(() => order.push('a'));
    const b = turns.pass()!.then(() => order.push('b'));
    await a;
    // a's turn began a new slice, and let one unit go on: b still waits, so c waits behind it.
    const c = turns.pass();
    expect(c).toBeInstanceOf(Promise);
    await Promise.all([b, c!.then(() => order.push('c'))]);
    expect(order).toEqual(['a', 'b', 'c']);
  });
});

describe('the SQLite store under a stream of store calls', () => {
  let store: SqliteStore | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await store?.close();
  });

  // better-sqlite3 answers synchronously, so store calls made one after another are promise continuations
  // only: without turns they would hold the event loop until the last, and no socket would be read meanwhile.
  it('lets the event loop turn while calls go on back to back', async () => {
    store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'turns-')), 'sb.db'), synchronous: 'NORMAL' });
    let done = 0;
    let doneWhenTheLoopTurned: number | undefined;
    setImmediate(() => (doneWhenTheLoopTurned = done));
    const start = performance.now();
    while (performance.now() - start < 100) {
      await store.sessions.get('agent:main:main');
      done += 1;
    }
    expect(doneWhenTheLoopTurned).toBeDefined();
    expect(doneWhenTheLoopTurned!).toBeLessThan(done);
  });

  it('is not stopped by fake timers', async () => {
    store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'turns-')), 'sb.db'), synchronous: 'NORMAL' });
    vi.useFakeTimers();
    for (let i = 0; i < 50; i += 1) await store.sessions.get('agent:main:main');
    expect(await store.sessions.get('agent:main:main')).toBeUndefined();
  });
});
