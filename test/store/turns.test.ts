import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Turns } from '../../src/store/sqlite/turns.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Turns', () => {
  it('lets units go on within the slice, and parks them past it until a later turn, oldest first, a bounded number per turn', async () => {
    const turns = new Turns(1_000, 2);
    // A fresh Turns has no slice yet: the first unit waits for a turn, which starts one.
    const first = turns.pass();
    expect(first).toBeInstanceOf(Promise);
    await first;
    expect(turns.pass()).toBeUndefined();

    const spent = new Turns(0, 2);
    const order: number[] = [];
    const parked = [1, 2, 3, 4, 5].map((n) => spent.pass()!.then(() => order.push(n)));
    await nextTurn();
    expect(order).toEqual([1, 2]);
    await nextTurn();
    expect(order).toEqual([1, 2, 3, 4]);
    await Promise.all(parked);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('a unit that arrives while others wait waits behind them, even within the slice', async () => {
    const turns = new Turns(1_000, 1);
    const order: string[] = [];
    const a = turns.pass()!.then(() => order.push('a'));
    const b = turns.pass()!.then(() => order.push('b'));
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
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
