/**
 * A gateway stopped while its memory index is still scanning: the stop waits for the scan, which ends at its next
 * file, so nothing writes to a store that is closed after it, and what was indexed before stays indexed; a scan
 * queued behind it does not start.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { MemoryIndex } from '../../src/memory/memory-index.js';
import type { MemoryStore } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const FILES = 1500;

describe('memory: a stop during a scan', () => {
  it('waits for the scan, which ends part way and removes nothing it did not reach', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-memory-stop-')));
    mkdirSync(join(root, 'ops', 'memory'), { recursive: true });
    for (let n = 0; n < FILES; n += 1) writeFileSync(join(root, 'ops', 'memory', `note-${n}.md`), `Note ${n} about the canary.\n`);
    const { config } = parseConfigText(
      `{ agents: { list: [{ id: "ops", model: "scripted/m", workspace: "${root}/ops", memory: {} }] }, memory: { enabled: true },
         models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    const path = join(root, 'store.db');
    const start = async (logged: string[]) => {
      let memory!: MemoryService;
      const store = await SqliteStore.open({ path });
      const gateway = await startGateway(
        { config, store, gatewayId: 'gw-test', log: (_level, message) => void logged.push(message) },
        { onMemory: (made) => (memory = made) },
      );
      return { store, gateway, memory: () => memory };
    };

    // The first gateway indexes every file.
    const first = await start([]);
    expect((await first.memory().status())[0]).toMatchObject({ files: FILES });
    // Its stop under way: this file, changed, is what the next scan has to index.
    writeFileSync(join(root, 'ops', 'memory', 'note-0.md'), 'Note 0, changed.\n');
    await first.gateway.stop();
    await first.store.close();

    // The second stops at once, while its first scan is under way (not awaited by the start).
    const logged: string[] = [];
    const second = await start(logged);
    await second.gateway.stop();
    await second.store.close();
    // A scan left running would fail on the closed store within this window, and log it.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(logged.filter((line) => line.includes('memory'))).toEqual([]);

    const store = await SqliteStore.open({ path });
    expect((await store.memory.documents('ops', 'file')).length).toBe(FILES);
    await store.close();
  });

  it('a scan queued behind the one under way at the stop does not start: the store is not read after the stop', async () => {
    const { config } = parseConfigText(
      `{ agents: { list: [{ id: "ops", model: "scripted/m", workspace: "/nonexistent/sb-memory-stop", memory: {} }] }, memory: { enabled: true },
         models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    // The first scan waits inside its first read until released; every read is counted.
    let reads = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const memory = {
      documents: async () => {
        reads += 1;
        if (reads === 1) await held;
        return [];
      },
      remove: async () => {},
    } as unknown as MemoryStore;
    const index = new MemoryIndex({
      config,
      memory,
      sessions: {} as never,
      transcript: {} as never,
      clock: { now: () => Date.now() },
      log: () => {},
    });
    const first = index.scan('ops');
    const queued = index.scan('ops');
    const stopped = index.stop();
    release();
    await Promise.all([first, queued, stopped]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reads).toBe(1);
  });
});
