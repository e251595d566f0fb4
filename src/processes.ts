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
function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** What /proc/<pid>/stat says of a process: its parent, group, session and start time (clock ticks since boot). */
interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  ticks: string;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(fields[1]), pgrp: Number(fields[2]), session: Number(fields[3]), ticks: fields[19] };
  } catch {
    return undefined;
  }
}

/** When a process started, in the kernel's clock ticks (Linux /proc); undefined where that is unknown. */
export function processStartTime(pid: number): string | undefined {
  return readStat(pid)?.ticks;
}

/** Every process the system shows (none where there is no /proc). */
function allProcesses(): Map<number, ProcStat> {
  const all = new Map<number, ProcStat>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return all;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) all.set(stat.pid, stat);
  }
  return all;
}

/** A pid with the start time it had when it was seen (null: unknown), so that a reused pid is never signalled. */
export type KnownProcess = [pid: number, ticks: string | null];

/**
 * A child and what it started. The child's process group holds most of it, but a descendant that calls `setsid`
 * (a daemonizing tool does) leaves the group; it is found by ancestry (/proc's parent links), as long as the processes
 * between it and the child live, or was seen by an earlier `scan` (ChildRecords scans every child's tree every few
 * seconds). A descendant orphaned before any scan saw it (a double fork whose middle process exited at once) is
 * reparented to init and cannot be found. Without /proc (not Linux), the tree is the process group alone.
 */
export class ProcessTree {
  private readonly known = new Map<number, string | null>();

  constructor(
    readonly leader: number,
    known: Iterable<KnownProcess> = [[leader, readStat(leader)?.ticks ?? null]],
  ) {
    for (const [pid, ticks] of known) if (Number.isInteger(pid) && pid > 1 && pid !== process.pid) this.known.set(pid, ticks);
  }

  /** What is known of the tree, for the record. */
  entries(): KnownProcess[] {
    return [...this.known];
  }

  /**
   * Adds every living process that descends from a known one (its parent, process group or session is one of them)
   * and forgets those that are gone (all but the leader, whose group may outlive it); true when it found new ones.
   */
  scan(all: Map<number, ProcStat> = allProcesses()): boolean {
    if (all.size === 0) return false;
    // A known pid still naming the process seen, or gone: its children, group and session are the tree's. (The system
    // gives no new process the id of a live group or session, so a gone pid's group is what remains of ours.)
    const ours = new Set([...this.known].filter(([pid, ticks]) => this.stateOf(pid, ticks, all) !== 'reused').map(([pid]) => pid));
    let grew = false;
    for (let changed = true; changed; ) {
      changed = false;
      for (const stat of all.values()) {
        if (ours.has(stat.pid) || stat.pid <= 1 || stat.pid === process.pid) continue;
        if (ours.has(stat.ppid) || ours.has(stat.pgrp) || ours.has(stat.session)) {
          this.known.set(stat.pid, stat.ticks);
          ours.add(stat.pid);
          changed = grew = true;
        }
      }
    }
    for (const [pid, ticks] of this.known) if (pid !== this.leader && this.stateOf(pid, ticks, all) !== 'same') this.known.delete(pid);
    return grew;
  }

  /** Signals every known process that is still itself, and the group of each known pid not reused; the count reached. */
  signal(signal: NodeJS.Signals): number {
    let reached = 0;
    for (const [pid, ticks] of this.known) {
      const state = this.stateOf(pid, ticks);
      if (state === 'reused') continue;
      if (killGroup(pid, signal)) reached += 1;
      if (state === 'same') {
        try {
          process.kill(pid, signal);
          reached += 1;
        } catch {
          // Gone meanwhile.
        }
      }
    }
    return reached;
  }

  /**
   * Ends the whole tree: stops what it finds (SIGSTOP: a stopped process neither forks nor exits, so nothing is
   * orphaned out of sight), looks again until nothing new turns up, then kills it all (SIGKILL); true when it reached
   * any process.
   */
  kill(): boolean {
    for (let round = 0; round < 50; round += 1) {
      const grew = this.scan();
      this.signal('SIGSTOP');
      if (!grew && round > 0) break;
    }
    return this.signal('SIGKILL') > 0;
  }

  private stateOf(pid: number, ticks: string | null, all?: Map<number, ProcStat>): 'same' | 'gone' | 'reused' {
    const now = all ? all.get(pid) : readStat(pid);
    if (!now) return 'gone';
    return ticks === null || now.ticks === ticks ? 'same' : 'reused';
  }
}

const SCAN_MS = 2000;

/**
 * Where the gateway records the children it runs: one file per child, with the pids of its tree as last scanned,
 * removed when the child is gone. Every child's tree is scanned every SCAN_MS while it runs, so that a descendant that
 * left the child's group is known before its parent exits (and in the record, for a restart after a kill).
 */
export class ChildRecords {
  private readonly trees = new Map<string, ProcessTree>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly dir: string | undefined) {}

  /** Records the child `pid` under `name`; its tree, for ending it (`ProcessTree.kill`). */
  add(name: string, pid: number): ProcessTree {
    const tree = new ProcessTree(pid);
    this.trees.set(name, tree);
    this.write(name, tree);
    this.timer ??= setInterval(() => this.refresh(), SCAN_MS).unref();
    return tree;
  }

  remove(name: string): void {
    this.trees.delete(name);
    if (this.dir) rmSync(join(this.dir, `${name}.json`), { force: true });
    if (this.trees.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Scans every child's tree once, and records the trees that grew. */
  refresh(): void {
    if (this.trees.size === 0) return;
    const all = allProcesses();
    for (const [name, tree] of this.trees) if (tree.scan(all)) this.write(name, tree);
  }

  private write(name: string, tree: ProcessTree): void {
    if (!this.dir) return;
    const [[pid, ticks], ...rest] = tree.entries();
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileAtomic(join(this.dir, `${name}.json`), JSON.stringify({ pid, ticks, tree: rest }));
    } catch {
      // A record that cannot be written costs the end of this child after a crash, not the child.
    }
  }

  /** Ends the trees of children a previous process of this gateway left (it was killed); returns their pids. */
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
        const record = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; ticks: string | null; tree?: KnownProcess[] };
        // A pid the system gave to another process since is left alone (ProcessTree checks each start time).
        if (Number.isInteger(record.pid) && record.pid > 1) {
          const tree = new ProcessTree(record.pid, [[record.pid, record.ticks ?? null], ...(record.tree ?? [])]);
          if (tree.kill()) reaped.push(record.pid);
        }
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
