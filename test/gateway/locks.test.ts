/** One gateway per database and per data directory, without stale locks after a crash or a reused pid. */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataDir } from '../../src/kit/data-dir.js';
import { processStartTime } from '../../src/processes.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const temp = () => mkdtempSync(join(tmpdir(), 'sb-lock-'));

describe('locks', () => {
  it('the database file: a second exclusive store on the same file is refused at once; closing the first frees it', async () => {
    const path = join(temp(), 'switchboard.db');
    const first = await SqliteStore.open({ path, exclusive: true });
    const started = Date.now();
    await expect(SqliteStore.open({ path, exclusive: true })).rejects.toMatchObject({
      code: 'GATEWAY_LOCKED',
      message: `another gateway is already using the database ${path}; stop it, or give this one its own gateway.dataDir (or store.sqlite.path)`,
    });
    expect(Date.now() - started).toBeLessThan(2000);
    await first.close();
    const second = await SqliteStore.open({ path, exclusive: true });
    await second.close();
  });

  it('the data directory: a live holder refuses; a dead pid or a pid reused by another program is taken over', async () => {
    const dir = new DataDir(temp()).ensure();
    const other = spawn('sleep', ['30']);
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      const pid = other.pid!;
      writeFileSync(join(dir.path, 'gateway.lock'), `${pid} ${processStartTime(pid)}\n`);
      expect(() => dir.lock()).toThrow(
        `another gateway (pid ${pid}) is already using the data directory ${dir.path}; stop it, or give this one its own gateway.dataDir`,
      );
      // The same pid, but started at another time: the OS gave the pid to another program since.
      writeFileSync(join(dir.path, 'gateway.lock'), `${pid} 1\n`);
      const release = dir.lock();
      release();
    } finally {
      other.kill();
    }
    writeFileSync(join(dir.path, 'gateway.lock'), '999999999 5\n');
    dir.lock()();
  });
});
