import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { TranscriptTails } from '../../src/store/sqlite/transcript-tails.js';

const S = 'agent:a:main';
let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const entry = (text: string) => ({ role: 'user' as const, content: text, provenance: null, inputId: null, runId: null });
const texts = (entries: { content: unknown }[]) => entries.map((e) => e.content);

describe("the SQLite store keeps sessions' recent transcript", () => {
  it('answers what the database holds, whoever wrote it, at any limit', async () => {
    store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-tails-')), 'test.db'), synchronous: 'NORMAL' });
    await store.sessions.ensure({ key: S, agentId: 'a' }, 1000);
    expect(await store.transcript.list(S, { limit: 10 })).toEqual([]);
    for (let i = 0; i < 5; i += 1) await store.transcript.append(S, [entry(`m${i}`)], 1000 + i);
    expect(texts(await store.transcript.list(S, { limit: 3 }))).toEqual(['m2', 'm3', 'm4']);
    // Written behind the store's back, straight into the file: still seen by the next read.
    store.raw
      .prepare(
        `INSERT INTO transcript (session_key, role, content, provenance, input_id, run_id, created_at) VALUES (?, 'user', ?, 'null', NULL, NULL, 2000)`,
      )
      .run(S, JSON.stringify('raw'));
    expect(texts(await store.transcript.list(S, { limit: 3 }))).toEqual(['m3', 'm4', 'raw']);
    expect(texts(await store.transcript.list(S, { limit: 100 }))).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'raw']);
    expect(await store.transcript.list(S, { limit: 0 })).toEqual([]);
    // Past what is kept per session (200), and with no limit: from the database.
    for (let i = 0; i < 250; i += 1) await store.transcript.append(S, [entry(`n${i}`)], 3000 + i);
    const last200 = await store.transcript.list(S, { limit: 200 });
    expect(last200).toHaveLength(200);
    expect(last200[0].content).toBe('n50');
    expect(last200.at(-1)!.content).toBe('n249');
    expect(await store.transcript.list(S, { limit: 300 })).toHaveLength(256);
    expect(await store.transcript.list(S)).toHaveLength(256);
    // A session read first with a small limit answers a larger one in full.
    const other = 'agent:a:other';
    await store.sessions.ensure({ key: other, agentId: 'a' }, 1000);
    for (let i = 0; i < 300; i += 1) await store.transcript.append(other, [entry(`o${i}`)], 1000 + i);
    expect(texts(await store.transcript.list(other, { limit: 2 }))).toEqual(['o298', 'o299']);
    expect(await store.transcript.list(other, { limit: 200 })).toEqual((await store.transcript.list(other)).slice(-200));
  });

  it("hands out entries that cannot be changed, so no reader changes the next run's history", async () => {
    store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-tails-')), 'test.db'), synchronous: 'NORMAL' });
    await store.sessions.ensure({ key: S, agentId: 'a' }, 1000);
    await store.transcript.append(
      S,
      [{ role: 'assistant', content: [{ type: 'text', text: 'hi' }], provenance: null, inputId: null, runId: null }],
      1000,
    );
    const [first] = await store.transcript.list(S, { limit: 10 });
    expect(() => ((first.content as { text: string }[])[0].text = 'changed')).toThrow(TypeError);
    expect((await store.transcript.list(S, { limit: 10 }))[0].content).toEqual([{ type: 'text', text: 'hi' }]);
  });
});

describe('what the store keeps is bounded', () => {
  const entry = (seq: number, sessionKey: string, text: string) => ({
    seq,
    sessionKey,
    role: 'user' as const,
    content: text,
    provenance: null,
    inputId: null,
    runId: null,
    createdAt: 0,
  });

  it('by size in all: the least recently used session is read in full again', async () => {
    const rows: Record<string, ReturnType<typeof entry>[]> = { a: [entry(1, 'a', 'x'.repeat(60))], b: [entry(2, 'b', 'y'.repeat(60))] };
    const calls: string[] = [];
    const plain = {
      list: async (key: string) => (calls.push(`list ${key}`), rows[key]),
      listAfter: async (key: string, seq: number) => (calls.push(`after ${key}`), rows[key].filter((row) => row.seq > seq)),
      append: async () => {},
    };
    const tails = new TranscriptTails(plain as never, 10, 200, 100);
    await tails.list('a', { limit: 10 });
    await tails.list('a', { limit: 10 });
    expect(calls).toEqual(['list a', 'after a']);
    // b's 60 characters and a's together pass the 100 allowed: a, used least recently, goes.
    await tails.list('b', { limit: 10 });
    await tails.list('a', { limit: 10 });
    expect(calls).toEqual(['list a', 'after a', 'list b', 'list a']);
  });
});
