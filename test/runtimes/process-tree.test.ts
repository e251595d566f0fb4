/**
 * The end of a child's whole tree (src/processes.ts, docs/runtimes.md "Kills, timeouts and crashes"): a descendant
 * that called setsid left the child's process group, and is still found and ended, at a kill while the gateway runs,
 * and at the next start after the gateway was killed, even once its parent has exited (it was seen by a scan).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChildRecords } from '../../src/processes.js';
import { waitUntil } from '../helpers/wait.js';
import { alive } from './runtime-helpers.js';

/** A child (its own group, as the gateway starts them) whose grandchild calls setsid; it exits when its stdin closes. */
function childWithDaemon(dir: string) {
  const script = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 & read line`;
  const child = spawn('sh', ['-c', script], { cwd: dir, detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  const file = join(dir, 'daemon.pid');
  const daemon = () => waitUntil('the grandchild runs', () => existsSync(file) && Number(readFileSync(file, 'utf8')));
  return { child, daemon };
}

describe('a child process tree', () => {
  it('kill ends a grandchild that left the process group', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-tree-')));
    const { child, daemon } = childWithDaemon(dir);
    const records = new ChildRecords(undefined);
    const tree = records.add('c', child.pid!);
    const pid = await daemon();
    expect(tree.kill()).toBe(true);
    await waitUntil('the tree is gone', () => !alive(pid) && !alive(child.pid!));
    records.remove('c');
  });

  it('a restart after the gateway was killed ends a grandchild that left the group, after its parent exited', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-tree-')));
    const recordDir = join(dir, 'runtimes');
    const { child, daemon } = childWithDaemon(dir);
    const records = new ChildRecords(recordDir);
    records.add('c', child.pid!);
    const pid = await daemon();
    // A scan (every few seconds while the gateway runs) sees it and records it.
    records.refresh();
    expect(JSON.parse(readFileSync(join(recordDir, 'c.json'), 'utf8')).tree).toContainEqual([pid, expect.any(String)]);
    // The gateway is killed (the record stays); the child exits, and the grandchild is an orphan of init.
    child.stdin!.end();
    await waitUntil('the child exited', () => !alive(child.pid!));
    expect(alive(pid)).toBe(true);
    expect(new ChildRecords(recordDir).reapLeftovers()).toEqual([child.pid]);
    await waitUntil('the grandchild is gone', () => !alive(pid));
  });
});
