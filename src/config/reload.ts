/**
 * A running gateway takes a new config (SIGHUP, `switchboard config reload`): the sections that are read at each
 * use are replaced in place, so every part of the gateway sees them at once; the others are named, since they
 * take effect only at the next start (the listener, the store, the lanes, the A2A server, the board, ...).
 */
import type { SwitchboardConfig } from './schema.js';

/** The sections a running gateway takes as they are: agents, bindings, policy, models, sessions, queues, schedules, channels' access. */
export const RELOADABLE = [
  'agents',
  'bindings',
  'tools',
  'models',
  'session',
  'messages',
  'approvals',
  'budgets',
  'mcpServer',
  'schedules',
  'channels',
] as const;

/**
 * Keys inside reloadable sections that are still read once, at start: the subagent lane's cap, whether /mcp is served,
 * the chat channels' accounts (each a connection).
 */
const READ_AT_START = [
  ['agents', 'defaults', 'subagents', 'maxConcurrent'],
  ['mcpServer', 'enabled'],
  ['channels', 'telegram', 'accounts'],
  ['channels', 'slack', 'accounts'],
  ['channels', 'discord', 'accounts'],
  ['channels', 'webhook', 'accounts'],
] as const;

const at = (root: unknown, path: readonly string[]) =>
  path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], root);

export interface ConfigReload {
  /** Sections replaced, as top-level keys. */
  applied: string[];
  /** Keys that changed in the file but take effect only after a restart, each as its full path. */
  restartRequired: string[];
}

/** The paths under which `a` and `b` differ, at most `limit`, as the config's keys print them. */
function differences(a: unknown, b: unknown, path: string, found: string[], limit: number): void {
  if (found.length >= limit || JSON.stringify(a) === JSON.stringify(b)) return;
  const objects = a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b);
  if (!objects) {
    found.push(path);
    return;
  }
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
  for (const key of keys)
    differences((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`, found, limit);
}

/** What a reload to `next` would change, section by section. */
export function planReload(running: SwitchboardConfig, next: SwitchboardConfig): ConfigReload {
  const applied: string[] = [];
  const restartRequired: string[] = [];
  for (const key of Object.keys(next) as (keyof SwitchboardConfig)[]) {
    if (JSON.stringify(running[key]) === JSON.stringify(next[key])) continue;
    if ((RELOADABLE as readonly string[]).includes(key)) applied.push(key);
    else differences(running[key], next[key], key, restartRequired, 20);
  }
  for (const path of READ_AT_START) {
    if (applied.includes(path[0]) && JSON.stringify(at(running, path)) !== JSON.stringify(at(next, path)))
      restartRequired.push(path.join('.'));
  }
  return { applied, restartRequired };
}

/** Replaces the reloadable sections of the running config in place with `next`'s. */
export function applyReload(running: SwitchboardConfig, next: SwitchboardConfig, plan: ConfigReload): void {
  for (const key of plan.applied) (running as Record<string, unknown>)[key] = next[key as keyof SwitchboardConfig];
}

/** One line for a person: what changed, and what waits for a restart. */
export function describeReload(plan: ConfigReload): string {
  const applied = plan.applied.length ? `applied ${plan.applied.join(', ')}` : 'nothing to apply';
  const restart = plan.restartRequired.length ? `; restart the gateway for ${plan.restartRequired.join(', ')}` : '';
  return `config reloaded: ${applied}${restart}`;
}
