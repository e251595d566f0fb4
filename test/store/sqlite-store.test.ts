import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/schema/database.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { WalSync } from '../../src/store/sqlite/wal-sync.js';
import { describeStoreContract } from './store-contract.js';
import { describeBoardContract } from './board-contract.js';
import { describeMemoryContract } from './memory-contract.js';
import { describeMailboxContract } from './mailbox-contract.js';
import { describeChannelsContract } from './channels-contract.js';
import { describeStepsContract } from './steps-contract.js';
import { describeGatesContract } from './gates-contract.js';
import { describeSchedulesContract } from './schedules-contract.js';

describeStoreContract('sqlite (file, WAL)', () => SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-store-')), 'test.db') }));
describeStoreContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeMemoryContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeMailboxContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeChannelsContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeStepsContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeGatesContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeSchedulesContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
describeBoardContract('sqlite (file, WAL)', () => SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-board-')), 'test.db') }));

describe('sqlite: the fast accept path', () => {
  it("an input accepted while another task's transaction is open is not rolled back with it", async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    try {
      await store.sessions.ensure({ key: 'agent:a:main', agentId: 'a' }, 1000);
      // A transaction of another task that is open across an await and then fails.
      const db = (store as unknown as { db: Kysely<Database> }).db;
      let release!: () => void;
      let begun!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const open = new Promise<void>((resolve) => (begun = resolve));
      const failing = db.transaction().execute(async (trx) => {
        await trx.selectFrom('sessions').selectAll().execute();
        begun();
        await held;
        throw new Error('this transaction rolls back');
      });
      await open;
      const accepted = store.inputs.enqueue(
        { id: 'in-1', sessionKey: 'agent:a:main', idempotencyKey: 'k-1', mode: 'followup', text: 'hi', provenance: { kind: 'user' } },
        1000,
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      release();
      await expect(failing).rejects.toThrow('this transaction rolls back');
      expect(await accepted).toMatchObject({ created: true });
      expect(await store.inputs.get('in-1')).toMatchObject({ id: 'in-1', status: 'queued' });
    } finally {
      await store.close();
    }
  });
});

describe('sqlite: synchronous FULL, with the WAL synced off the event loop', () => {
  const input = (i: number) => ({
    id: `in-${i}`,
    sessionKey: 'agent:a:main',
    idempotencyKey: `k-${i}`,
    mode: 'followup' as const,
    text: 'hi',
    provenance: { kind: 'user' as const },
  });
  /** A store on a new file with session agent:a:main, closed afterwards. */
  async function withStore(test: (store: SqliteStore, wal: WalSync) => Promise<void>): Promise<void> {
    const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-wal-')), 'test.db') });
    try {
      await store.sessions.ensure({ key: 'agent:a:main', agentId: 'a' }, 1000);
      await test(store, store.wal!);
    } finally {
      await store.close();
    }
  }

  it('concurrent accepts share syncs, and none is answered before a sync that covers it has finished', () =>
    withStore(async (store, wal) => {
      let finished = 0;
      const durable = wal.durable.bind(wal);
      wal.durable = () => durable().then(() => void (finished += 1));
      const before = wal.syncs;
      const answered = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.inputs.enqueue(input(i), 1000).then((result) => ({ result, finishedSyncs: finished }))),
      );
      expect(answered.every(({ result }) => result.created)).toBe(true);
      expect(answered.every(({ finishedSyncs }) => finishedSyncs >= 1)).toBe(true);
      expect(wal.syncs - before).toBeGreaterThanOrEqual(1);
      expect(wal.syncs - before).toBeLessThanOrEqual(2);
    }));

  it('a sync queued behind a running one also covers what the end of the running one released', () =>
    withStore(async (store, wal) => {
      const before = wal.syncs;
      const first = store.inputs.enqueue(input(1), 1000); // starts a sync
      const second = store.inputs.enqueue(input(2), 1000); // waits for the next one
      // Written as soon as the first sync is done, straight on the connection (a store call could wait for a turn).
      const third = first.then(() => {
        store.raw.prepare('UPDATE sessions SET updated_at = 2000 WHERE key = ?').run('agent:a:main');
        return store.durable();
      });
      await Promise.all([first, second, third]);
      // The next sync starts a turn after the first ends, so the third write shares it with the second.
      expect(wal.syncs - before).toBe(2);
    }));

  it('a write that changed nothing, and an internal write (a lease, a session, a notify stored, a run start), start no sync', () =>
    withStore(async (store, wal) => {
      await store.inputs.enqueue(input(1), 1000);
      await store.inputs.enqueue({ ...input(4), mode: 'notify' }, 1000);
      const before = wal.syncs;
      expect(await store.inputs.enqueue(input(1), 1000)).toMatchObject({ created: false });
      await store.sessions.ensure({ key: 'agent:a:other', agentId: 'a' }, 1000);
      await store.leases.acquire('agent:a:other', 'me', 60_000);
      // The notify input is durable already; a power loss that took its storing back leaves it queued, stored again at start.
      expect(await store.inputs.absorbNotify('in-4', 1000)).toBe(true);
      expect(
        await store.runs.start(
          { id: 'run-1', sessionKey: 'agent:a:main', agentId: 'a', owner: 'me', leaseTtlMs: 60_000, model: 'm', inputIds: ['in-1'] },
          1000,
        ),
      ).toMatchObject({ epoch: 1 });
      // A waited send's input: its reply comes after a commit whose sync covers it.
      expect(await store.inputs.enqueueUnsynced(input(3), 1000)).toMatchObject({ created: true });
      expect(wal.syncs).toBe(before);
      // A waited send that answers before its reply (a timeout) makes it durable first.
      await store.durable();
      expect(wal.syncs).toBe(before + 1);
      // The next durable write's sync covers them.
      await store.inputs.enqueue(input(2), 1000);
      expect(wal.syncs).toBe(before + 2);
    }));

  it('internal writes are answered before their COMMIT; durable() commits them, in every synchronous mode', async () => {
    for (const synchronous of ['FULL', 'NORMAL'] as const) {
      const path = join(mkdtempSync(join(tmpdir(), 'sb-wal-')), 'test.db');
      const store = await SqliteStore.open({ path, synchronous });
      const observer = new BetterSqlite3(path, { readonly: true });
      const committed = () => observer.prepare('SELECT key FROM sessions').all();
      try {
        await store.sessions.ensure({ key: 'agent:a:main', agentId: 'a' }, 1000);
        expect(await store.inputs.enqueueUnsynced(input(1), 1000)).toMatchObject({ created: true });
        // Seen by the store's own connection, not committed yet.
        expect(await store.inputs.get('in-1')).toMatchObject({ status: 'queued' });
        expect(committed()).toEqual([]);
        await store.durable();
        expect(committed()).toEqual([{ key: 'agent:a:main' }]);
        expect(observer.prepare('SELECT id FROM inputs').all()).toEqual([{ id: 'in-1' }]);
      } finally {
        observer.close();
        await store.close();
      }
    }
  });

  it('the WAL is checkpointed every 10,000 pages (docs/delivery.md): hot pages are copied back once per many commits', async () => {
    const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-wal-')), 'test.db') });
    try {
      expect(store.raw.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
    } finally {
      await store.close();
    }
  });

  it("mmapBytes maps that much of the file (the gateway's default, store.sqlite.mmapMb 2047, just under the build's cap of 2,147,418,112 bytes), and reads stay right across checkpoints", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sb-mmap-')), 'test.db');
    const mapped = await SqliteStore.open({ path, mmapBytes: 2047 * 1024 * 1024 });
    try {
      expect(mapped.raw.pragma('mmap_size', { simple: true })).toBe(2047 * 1024 * 1024);
      const key = (n: number) => `agent:a:s${n}`;
      for (let n = 0; n < 300; n += 1) await mapped.sessions.ensure({ key: key(n), agentId: 'a' }, 1000 + n);
      // A checkpoint writes the WAL's pages into the file under the map; the next reads see them.
      await mapped.durable();
      expect(mapped.raw.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
      for (let n = 300; n < 600; n += 1) await mapped.sessions.ensure({ key: key(n), agentId: 'a' }, 1000 + n);
      expect((await mapped.sessions.get(key(0)))?.key).toBe(key(0));
      expect((await mapped.sessions.get(key(599)))?.key).toBe(key(599));
    } finally {
      await mapped.close();
    }
    const unmapped = await SqliteStore.open({ path, mmapBytes: 0 });
    try {
      expect(unmapped.raw.pragma('mmap_size', { simple: true })).toBe(0);
      expect((await unmapped.sessions.list({})).length).toBe(600);
    } finally {
      await unmapped.close();
    }
  });

  it('NORMAL, EXTRA and a database in memory are left to SQLite', async () => {
    for (const synchronous of ['NORMAL', 'EXTRA'] as const) {
      const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-wal-')), 'test.db'), synchronous });
      expect(store.wal).toBeUndefined();
      expect(store.raw.pragma('synchronous', { simple: true })).toBe(synchronous === 'NORMAL' ? 1 : 3);
      await store.close();
    }
    const memory = await SqliteStore.open({ path: ':memory:' });
    expect(memory.wal).toBeUndefined();
    await memory.close();
  });
});

describe('sqlite: what an A2A request reads does not grow with the stored tasks', () => {
  it("the context-owner check reads the context's rows (a2a_tasks_context), not every task of the agent", async () => {
    const store = await SqliteStore.open({ path: ':memory:' });
    try {
      const statements: string[] = [];
      const prepare = store.raw.prepare.bind(store.raw);
      (store.raw as unknown as { prepare: (sql: string) => unknown }).prepare = (sql: string) => {
        statements.push(sql);
        return prepare(sql);
      };
      expect(await store.a2aTasks.otherContextOwner('support', 'c1', 'peer-a')).toBeUndefined();
      const sql = statements.find((statement) => statement.includes('"context_id" = ?'))!;
      const plan = store.raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('support', 'c1', 'peer-a', 1) as { detail: string }[];
      expect(plan.map((row) => row.detail)).toEqual(['SEARCH a2a_tasks USING INDEX a2a_tasks_context (agent_id=? AND context_id=?)']);
    } finally {
      await store.close();
    }
  });
});
