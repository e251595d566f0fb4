/**
 * Several real gateway processes on one PostgreSQL schema, each with its own data directory (so its own id), for the
 * cluster tests: start them, kill and restart one, and send to whichever is up, as a client behind a load balancer
 * would (every gateway of the store answers to one token).
 */
import pg from 'pg';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { dropSchemas, POSTGRES_URL } from './postgres.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from './process.js';

export interface Kill {
  gateway: number;
  at: number;
  /** Restarted only after its leases expired: the other gateways took over first. */
  long: boolean;
}

export class Cluster {
  readonly members: (GatewayProcess | undefined)[];
  /** Each member's gateway id (its data directory keeps it across restarts). */
  readonly ids: string[] = [];
  readonly kills: Kill[] = [];
  private readonly configs: string[];
  private token = '';

  constructor(configText: string, size: number) {
    this.configs = Array.from({ length: size }, () => tempConfig(configText).configPath);
    this.members = Array.from({ length: size }, () => undefined);
  }

  async start(): Promise<void> {
    // The first creates the schema and the shared token; the others start beside it.
    for (let i = 0; i < this.configs.length; i += 1) await this.restart(i);
  }

  async restart(index: number): Promise<void> {
    const gateway = await startGatewayProcess(this.configs[index]!);
    this.token = gateway.token;
    this.ids[index] = (await gateway.request<{ gatewayId: string }>('GET', '/v1/status')).body.gatewayId;
    this.members[index] = gateway;
  }

  async kill(index: number, long: boolean): Promise<void> {
    const gateway = this.members[index];
    if (!gateway) return;
    this.members[index] = undefined;
    this.kills.push({ gateway: index, at: Date.now(), long });
    await stopGatewayProcess(gateway, 'SIGKILL');
  }

  alive(): GatewayProcess[] {
    return this.members.filter((member): member is GatewayProcess => member !== undefined);
  }

  /**
   * A request to a gateway that is up, tried again on another (after a pause) while none answers: a gateway killed
   * mid-request is a failed fetch. Answers the status and body of the first one that answered, and which it was.
   */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    /** `token`: another bearer than the control token (an A2A peer's). */
    options: { deadlineMs?: number; token?: string } = {},
  ): Promise<{ status: number; body: T; gateway: GatewayProcess }> {
    const deadline = Date.now() + (options.deadlineMs ?? 60_000);
    for (;;) {
      const up = this.alive();
      const gateway = up[Math.floor(Math.random() * up.length)];
      if (gateway) {
        try {
          const response = await fetch(`${gateway.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${options.token ?? this.token}`, 'content-type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          return { status: response.status, body: (await response.json()) as T, gateway };
        } catch (error) {
          if (Date.now() > deadline) throw error;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stop(): Promise<void> {
    for (const gateway of this.alive()) await stopGatewayProcess(gateway);
    this.members.fill(undefined);
  }
}

/**
 * Two gateway processes on one config (one PostgreSQL schema) for a suite, with a client on that schema: started
 * before its tests, stopped after them (a paused gateway resumed first), the schema dropped; a failed test shows what
 * both gateways logged.
 */
export function twoGatewaysForSuite(
  configText: string,
  schema: string,
): { readonly a: GatewayProcess; readonly b: GatewayProcess; db: pg.Client } {
  const gateways: (GatewayProcess | undefined)[] = [];
  const db = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
  beforeAll(async () => {
    gateways.push(await startGatewayProcess(tempConfig(configText).configPath));
    gateways.push(await startGatewayProcess(tempConfig(configText).configPath));
    await db.connect();
  });
  beforeEach(({ onTestFailed }) =>
    onTestFailed(() =>
      console.error(gateways.map((gateway, index) => `gateway ${'AB'[index]} stderr:\n${gateway?.stderr() || '(nothing)'}`).join('\n')),
    ),
  );
  afterAll(async () => {
    for (const gateway of gateways) {
      gateway?.child.kill('SIGCONT');
      if (gateway) await stopGatewayProcess(gateway);
    }
    await db.end().catch(() => {});
    await dropSchemas(schema);
  });
  const member = (index: number) => {
    const gateway = gateways[index];
    if (!gateway) throw new Error('the suite gateways are not running (used outside a test?)');
    return gateway;
  };
  return {
    get a() {
      return member(0);
    },
    get b() {
      return member(1);
    },
    db,
  };
}
