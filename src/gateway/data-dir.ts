/** Files the gateway keeps in its data directory, besides the database. */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
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
   * active runs for its own crashed ones. A lock left by a process that no longer exists is taken over.
   * Returns the release function.
   */
  lock(): () => void {
    const path = join(this.path, 'gateway.lock');
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return () => {
          if (this.read('gateway.lock') === String(process.pid)) rmSync(path, { force: true });
        };
      } catch {
        const holder = Number(this.read('gateway.lock'));
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
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
    writeFileSync(join(this.path, 'gateway.json'), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
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
    const value = create();
    // 'wx' fails if another process created it first; then theirs wins.
    try {
      writeFileSync(join(this.path, name), `${value}\n`, { mode: 0o600, flag: 'wx' });
      return value;
    } catch {
      return this.read(name)!;
    }
  }
}
