/**
 * The memory index on PostgreSQL, where two gateways (or one gateway's pool) index the same file at once: two stores
 * on one schema each index the same document in a loop. The document's chunks are written once, never twice.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/index.js';
import { postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const ROUNDS = 40;

if (process.env.CI || (await postgresReachable())) {
  describe('postgres memory races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_memrace', (first, second) => {
      a = first;
      b = second;
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
