import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/schema.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { describeStoreContract } from './store-contract.js';

describeStoreContract('sqlite (file, WAL)', () => SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-store-')), 'test.db') }));
describeStoreContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));

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
      const accepted = store.inputs.enqueue({ id: 'in-1', sessionKey: 'agent:a:main', idempotencyKey: 'k-1', mode: 'followup', text: 'hi', provenance: { kind: 'user' } }, 1000);
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
