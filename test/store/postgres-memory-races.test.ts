/**
 * The memory index on PostgreSQL, where two gateways (or one gateway's pool) index the same file at once: two stores
 * on one schema each index the same document in a loop. The document's chunks are written once, never twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';

const ROUNDS = 40;

if (process.env.CI || (await postgresReachable())) {
  describe('postgres memory races (two stores, one schema)', () => {
    const schema = `sb_memrace_${process.pid}`;
    let a: Store;
    let b: Store;
    beforeAll(async () => {
      a = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
      b = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await dropSchemas(schema);
    });

    it('the same file indexed by both at once: one of them writes it, and its chunks are there once', async () => {
      const chunks = [
        { startLine: 1, endLine: 2, text: 'deploy on fridays' },
        { startLine: 4, endLine: 5, text: 'rollback with the tag' },
      ];
      for (let round = 0; round < ROUNDS; round++) {
        const path = `notes-${round}.md`;
        const document = { agentId: 'ops', path, source: 'file' as const, hash: `h${round}`, bytes: 40, modifiedAt: round };
        const written = await Promise.all([a.memory.index(document, chunks, 1000), b.memory.index(document, chunks, 1000)]);
        expect(written.filter(Boolean)).toHaveLength(1);
        expect((await a.memory.read('ops', path))!.chunks).toEqual(chunks);
      }
    });
  });
}
