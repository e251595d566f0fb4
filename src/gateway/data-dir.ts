/** Files the gateway keeps in its data directory, besides the database. */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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

  /** Stable identity of the gateway that owns this directory; leases and runs are recorded under it. */
  gatewayId(): string {
    return this.readOrCreate('gateway-id', () => `gw-${randomUUID()}`);
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
