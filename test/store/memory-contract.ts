/**
 * The memory store's contract (src/ports/memory.ts), run unchanged on SQLite (FTS5) and PostgreSQL (tsvector):
 * indexing by hash, ranking, scopes with path prefixes, entries written once per key, and hostile queries.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryStore, Store } from '../../src/ports/index.js';

const doc = (agentId: string, path: string, hash: string, modifiedAt = 1000) => ({
  agentId,
  path,
  source: 'file' as const,
  hash,
  bytes: 10,
  modifiedAt,
});

export function describeMemoryContract(name: string, open: () => Promise<Store>): void {
  describe(`memory store contract: ${name}`, () => {
    let store: Store;
    let memory: MemoryStore;
    beforeEach(async () => {
      store = await open();
      memory = store.memory;
    });
    afterEach(async () => {
      await store.close();
    });

    it('indexes a document once per hash, replaces its chunks when it changes, and removes it', async () => {
      expect(await memory.index(doc('a', 'notes.md', 'h1'), [{ startLine: 1, endLine: 2, text: 'the deploy runbook' }], 5)).toBe(true);
      expect(await memory.index(doc('a', 'notes.md', 'h1'), [{ startLine: 1, endLine: 2, text: 'the deploy runbook' }], 6)).toBe(false);
      expect(await memory.index(doc('a', 'notes.md', 'h2'), [{ startLine: 1, endLine: 1, text: 'rollback steps' }], 7)).toBe(true);
      expect(await memory.search('deploy', [{ agentId: 'a' }], 10)).toEqual([]);
      expect(await memory.search('rollback', [{ agentId: 'a' }], 10)).toMatchObject([
        { agentId: 'a', path: 'notes.md', source: 'file', startLine: 1, endLine: 1 },
      ]);
      expect(await memory.documents('a')).toMatchObject([{ path: 'notes.md', hash: 'h2', indexedAt: 7 }]);
      await memory.remove('a', 'notes.md');
      expect(await memory.search('rollback', [{ agentId: 'a' }], 10)).toEqual([]);
      expect(await memory.documents('a')).toEqual([]);
    });

    it('ranks the chunk with more of the words first, finds stemmed forms, and reads a document back in line order', async () => {
      await memory.index(
        doc('a', 'db.md', 'h1'),
        [
          { startLine: 1, endLine: 3, text: 'PostgreSQL backups run nightly with pg_dump' },
          { startLine: 4, endLine: 6, text: 'the cache is warmed at start' },
        ],
        5,
      );
      await memory.index(doc('a', 'other.md', 'h2'), [{ startLine: 1, endLine: 1, text: 'backups of the laptop' }], 5);
      const hits = await memory.search('nightly backups', [{ agentId: 'a' }], 10);
      expect(hits.map((hit) => `${hit.path}:${hit.startLine}`)).toEqual(['db.md:1', 'other.md:1']);
      expect(hits[0].score).toBeGreaterThan(hits[1].score);
      expect((await memory.search('running backup', [{ agentId: 'a' }], 10)).map((hit) => hit.path)).toContain('db.md');
      expect((await memory.read('a', 'db.md'))!.chunks.map((chunk) => chunk.startLine)).toEqual([1, 4]);
      expect(await memory.read('a', 'nope.md')).toBeUndefined();
    });

    it('searches only the scopes given: other agents are invisible, and paths narrow a scope by prefix', async () => {
      await memory.index(doc('a', 'team/plan.md', 'h1'), [{ startLine: 1, endLine: 1, text: 'launch plan' }], 5);
      await memory.index(doc('a', 'private/diary.md', 'h2'), [{ startLine: 1, endLine: 1, text: 'launch worries' }], 5);
      await memory.index(doc('b', 'plan.md', 'h3'), [{ startLine: 1, endLine: 1, text: 'launch of b' }], 5);
      expect((await memory.search('launch', [{ agentId: 'b' }], 10)).map((hit) => `${hit.agentId}:${hit.path}`)).toEqual(['b:plan.md']);
      const granted = await memory.search('launch', [{ agentId: 'b' }, { agentId: 'a', paths: ['team/'] }], 10);
      expect(granted.map((hit) => `${hit.agentId}:${hit.path}`).sort()).toEqual(['a:team/plan.md', 'b:plan.md']);
      // A prefix is literal: % and _ match themselves.
      expect(await memory.search('launch', [{ agentId: 'a', paths: ['%'] }], 10)).toEqual([]);
      expect(await memory.search('launch', [], 10)).toEqual([]);
    });

    it('an entry is written once per key; any query text is safe', async () => {
      expect(await memory.write({ agentId: 'a', path: 'entries/1', text: 'the customer prefers email', key: 'k1', modifiedAt: 9 })).toEqual(
        { path: 'entries/1', created: true },
      );
      expect(
        await memory.write({ agentId: 'a', path: 'entries/2', text: 'the customer prefers email', key: 'k1', modifiedAt: 10 }),
      ).toEqual({ path: 'entries/1', created: false });
      expect(await memory.search('email', [{ agentId: 'a' }], 10)).toMatchObject([{ path: 'entries/1', source: 'entry' }]);
      for (const hostile of ['"', "' OR 1=1 --", 'NEAR(', 'a:b*', '!!!', '', '(((', 'email" OR "x']) {
        const hits = await memory.search(hostile, [{ agentId: 'a' }], 10);
        expect(hits.every((hit) => hit.agentId === 'a')).toBe(true);
      }
      expect(await memory.stats()).toEqual([{ agentId: 'a', source: 'entry', documents: 1, chunks: 1 }]);
    });
  });
}
