/** Files the gateway keeps in its data directory, besides the database. */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { createFileAtomic, writeFileAtomic } from '../files.js';
import { processStartTime } from '../processes.js';

/** Whether a process with this pid runs (one of another user's counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the lock's holder still runs: its pid is alive and, where known, started when the lock says. */
function holds(lock: string | undefined): number | undefined {
  const [pidText, started] = (lock ?? '').split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return undefined;
  // A pid the OS gave to another program since is not the holder.
  if (started && processStartTime(pid) !== undefined && processStartTime(pid) !== started) return undefined;
  return pid;
}

export interface RuntimeInfo {
  url: string;
  /** The config file the gateway was started with, so the CLI can find it from the same folder. */
  configPath: string;
  pid: number;
  gatewayId: string;
  startedAt: number;
}

export class DataDir {
  constructor(readonly path: string) {}

  ensure(): this {
    mkdirSync(this.path, { recursive: true, mode: 0o700 });
    return this;
  }

  get databasePath(): string {
    return join(this.path, 'switchboard.db');
  }

  /** The control API's bearer token: generated on first start, kept readable by its owner only. */
  token(): string {
    return this.readOrCreate('token', () => randomBytes(32).toString('base64url'));
  }

  readToken(): string | undefined {
    return this.read('token');
  }

  /** Replaces the token (with the one every gateway on the store shares), written whole or not at all. */
  writeToken(token: string): void {
    writeFileAtomic(join(this.path, 'token'), `${token}\n`, 0o600);
  }

  /** The secret that signs sub-agent handles, so a handle stays valid across restarts. */
  capabilitySecret(): string {
    return this.readOrCreate('subagent-secret', () => randomBytes(32).toString('base64url'));
  }

  /** Stable identity of the gateway that owns this directory; leases and runs are recorded under it. */
  gatewayId(): string {
    return this.readOrCreate('gateway-id', () => `gw-${randomUUID()}`);
  }

  /**
   * One gateway per data directory: two would share a gateway id, and each would take the other's
   * active runs for its own crashed ones. The lock file names the holder's pid and start time, so a lock
   * left by a process that is gone, or whose pid another program now has, is taken over. (The database
   * file itself is locked by the store, which also refuses a second gateway from another directory.)
   * Returns the release function.
   */
  lock(): () => void {
    const path = join(this.path, 'gateway.lock');
    const mine = `${process.pid} ${processStartTime(process.pid) ?? ''}`.trim();
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        writeFileSync(path, `${mine}\n`, { flag: 'wx', mode: 0o600 });
        return () => {
          if (this.read('gateway.lock') === mine) rmSync(path, { force: true });
        };
      } catch {
        const holder = holds(this.read('gateway.lock'));
        if (holder !== undefined) {
          throw new SwitchboardError(
            'GATEWAY_LOCKED',
            `another gateway (pid ${holder}) is already using the data directory ${this.path}; stop it, or give this one its own gateway.dataDir`,
          );
        }
        rmSync(path, { force: true });
      }
    }
    throw new SwitchboardError('GATEWAY_LOCKED', `could not take the lock ${path}`);
  }

  writeRuntime(info: RuntimeInfo): void {
    writeFileAtomic(join(this.path, 'gateway.json'), `${JSON.stringify(info, null, 2)}\n`, 0o600);
  }

  readRuntime(): RuntimeInfo | undefined {
    const text = this.read('gateway.json');
    return text ? (JSON.parse(text) as RuntimeInfo) : undefined;
  }

  private read(name: string): string | undefined {
    const path = join(this.path, name);
    return existsSync(path) ? readFileSync(path, 'utf8').trim() : undefined;
  }

  private readOrCreate(name: string, create: () => string): string {
    const existing = this.read(name);
    if (existing) return existing;
    const path = join(this.path, name);
    const value = create();
    // Written whole or not at all. An empty file is what a crash of an older version left between creating the
    // file and writing it: it is replaced. Otherwise, if another process created the file first, theirs wins.
    if (existing === '') writeFileAtomic(path, `${value}\n`, 0o600);
    else if (!createFileAtomic(path, `${value}\n`, 0o600)) return this.read(name)!;
    return value;
  }
}
