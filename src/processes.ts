/**
 * The gateway's child processes (docs/runtimes.md, docs/tools.md): what environment they get, how they are ended, and
 * their record. Children started detached lead a process group of their own: ending the group ends what they started
 * too. While a child runs (an exec command, a runtime child, an ACP terminal), its pid is recorded in
 * `<dataDir>/runtimes/`, so that a gateway that was killed ends what its previous process left running when it starts
 * again (`reapLeftovers`).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './files.js';

/**
 * The gateway's environment variables a child sees when they are set: enough to find programs, a home and a locale,
 * and never a secret. Every child (exec commands, runtime children, ACP agents and their terminals, MCP servers) gets
 * these plus the env configured for it, nothing else: an API key a child needs is given to it in its config.
 */
export const CHILD_ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
];

/** A child's environment: the gateway's variables named in `names` (the allowlist by default), then its own `env`. */
export function childEnvironment(
  own: Readonly<Record<string, string>> = {},
  names: readonly string[] = CHILD_ENV_ALLOWLIST,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...own };
}

/** Signals the process group `pid` leads; false when the group is gone. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The start time of a process in clock ticks since boot (/proc/<pid>/stat), to tell a pid from a reused one. */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Where the gateway records the children it runs: one file per child, removed when the child is gone. */
export class ChildRecords {
  constructor(private readonly dir: string | undefined) {}

  add(name: string, pid: number): void {
    if (!this.dir) return;
    mkdirSync(this.dir, { recursive: true });
    writeFileAtomic(join(this.dir, `${name}.json`), JSON.stringify({ pid, ticks: startTicks(pid) ?? null }));
  }

  remove(name: string): void {
    if (this.dir) rmSync(join(this.dir, `${name}.json`), { force: true });
  }

  /** Ends the process groups of children a previous process of this gateway left (it was killed); returns their pids. */
  reapLeftovers(): number[] {
    if (!this.dir) return [];
    const reaped: number[] = [];
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((name) => name.endsWith('.json'));
    } catch {
      return [];
    }
    for (const name of names) {
      const file = join(this.dir, name);
      try {
        const { pid, ticks } = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; ticks: string | null };
        // A pid the system gave to another process since is left alone. A leader that is gone may have left its group
        // (what it started): the system never gives a live group's id to a new process, so that group is the child's.
        const now = Number.isInteger(pid) && pid > 1 ? startTicks(pid) : 'invalid';
        if ((now === undefined || ticks === null || now === ticks) && killGroup(pid, 'SIGKILL')) reaped.push(pid);
      } catch {
        // A record half-written by a killed gateway names nothing to end.
      }
      rmSync(file, { force: true });
    }
    return reaped;
  }
}

/**
 * The records of the gateway in `dataDir` (none without one), after ending what a previous process of it left running:
 * called while the gateway is being built, before recovery wakes a lane that could start a child of its own.
 */
export function openChildRecords(dataDir: string | undefined, log: (message: string) => void): ChildRecords {
  const records = new ChildRecords(dataDir ? join(dataDir, 'runtimes') : undefined);
  const reaped = records.reapLeftovers();
  if (reaped.length > 0)
    log(
      `ended ${reaped.length} children (commands, runtimes, terminals) a previous process of this gateway left running (pids ${reaped.join(', ')})`,
    );
  return records;
}
