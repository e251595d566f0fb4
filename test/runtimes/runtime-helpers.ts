/** What the runtime tests share: the sub-agent's end, its journaled updates, and the pids a fake child recorded. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gateway } from '../../src/gateway/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const SETTLED = ['succeeded', 'failed', 'cancelled', 'timed_out', 'interrupted'];

export async function settledSubagent(gateway: Gateway, subagentId: string) {
  return waitUntil(
    `sub-agent ${subagentId} settled`,
    async () => {
      const { view, record } = await gateway.getSubagent(subagentId);
      return SETTLED.includes(view.state) ? { view, record } : undefined;
    },
    15_000,
  );
}

/** Every `runtime.update` the child's session journaled, in order. */
export async function runtimeUpdates(gateway: Gateway, sessionKey: string): Promise<Record<string, unknown>[]> {
  const events = await gateway.store.events.list({ sessionKey });
  return events
    .filter((event) => event.type === 'runtime.update')
    .flatMap((event) => (event.payload as { updates: Record<string, unknown>[] }).updates);
}

/** The pids a fake child wrote to `<dir>/pids` (`agent`, `grandchild`). */
export function pidsIn(dir: string): Record<string, number> {
  const file = join(dir, 'pids');
  if (!existsSync(file)) return {};
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  return Object.fromEntries(lines.map((line) => [line.split(' ')[0], Number(line.split(' ')[1])]));
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
