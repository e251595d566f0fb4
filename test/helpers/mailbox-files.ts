/** What the mailbox tests do to the shared folder as pi-messenger, or a hostile writer, would. */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitUntil } from './wait.js';

/** A peer that registered (as pi-messenger does) and has an inbox folder. */
export function registerPeer(dir: string, name: string): void {
  mkdirSync(join(dir, 'registry'), { recursive: true });
  mkdirSync(join(dir, 'inbox', name), { recursive: true });
  const now = new Date().toISOString();
  writeFileSync(
    join(dir, 'registry', `${name}.json`),
    JSON.stringify({
      name,
      pid: process.pid,
      sessionId: 's1',
      cwd: '/tmp',
      model: 'pi',
      startedAt: now,
      isHuman: false,
      session: { toolCalls: 0, tokens: 0, filesModified: [] },
      activity: { lastActivityAt: now },
    }),
  );
}

/**
 * `path` replaced by a symlink to `target`, while the gateway runs: a pass may make the folder again between the
 * removal and the link, so this is tried until the link is in place.
 */
export function linkInPlaceOf(path: string, target: string): Promise<unknown> {
  return waitUntil(`${path} is a link`, () => {
    rmSync(path, { recursive: true, force: true });
    try {
      symlinkSync(target, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  });
}
