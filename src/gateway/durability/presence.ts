/**
 * This gateway in the registry every gateway on the database shares: registered at start, a heartbeat every second
 * with what it runs, marked stopped at a clean stop. `switchboard status` on any gateway lists them all; a gateway
 * whose heartbeat is older than a lease's lifetime is gone (its runs are taken over, recovery.ts).
 */
import { hostname } from 'node:os';
import { errorMessage } from '../../core/errors.js';
import type { Clock, GatewayRecord, GatewayReport, GatewayRegistry } from '../../ports/index.js';
import type { GatewayView } from '../../ports/gateway.js';

const HEARTBEAT_MS = 1000;

export class GatewayPresence {
  private timer?: NodeJS.Timeout;
  /** The others as the last heartbeat found them: unknown (so assumed alive) until then. */
  private others: { alive: string[]; gone: string[] } | undefined;

  constructor(
    private readonly deps: {
      registry: GatewayRegistry;
      clock: Clock;
      gatewayId: string;
      version: string;
      leaseTtlMs: number;
      report: () => GatewayReport;
      log: (message: string) => void;
    },
  ) {}

  async start(): Promise<void> {
    const { registry, clock, gatewayId, version } = this.deps;
    await registry.register({ id: gatewayId, pid: process.pid, host: hostname(), version }, clock.now());
    // Whether others are alive is known from the start (a gateway alone skips what only others need).
    await this.beat();
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Where its control API listens, for the others' `status`. */
  async listening(url: string): Promise<void> {
    await this.deps.registry.setUrl(this.deps.gatewayId, url);
  }

  private async beat(): Promise<void> {
    try {
      await this.deps.registry.heartbeat(this.deps.gatewayId, this.deps.report(), this.deps.clock.now());
      const now = this.deps.clock.now();
      const others = (await this.deps.registry.list()).filter(
        (gateway) => gateway.id !== this.deps.gatewayId && gateway.stoppedAt === null,
      );
      const alive = (gateway: GatewayRecord) => now - gateway.heartbeatAt <= this.deps.leaseTtlMs;
      this.others = {
        alive: others.filter(alive).map((gateway) => gateway.id),
        gone: others.filter((gateway) => !alive(gateway)).map((gateway) => gateway.id),
      };
    } catch (error) {
      this.deps.log(`heartbeat: ${errorMessage(error)}`);
    }
  }

  /** Whether another gateway may be alive on the database (true until the first heartbeat has looked). */
  get othersMayBeAlive(): boolean {
    return this.others === undefined || this.others.alive.length > 0;
  }

  /** The gateways whose heartbeats stopped without a clean stop, as the last heartbeat found them. */
  get gone(): readonly string[] {
    return this.others?.gone ?? [];
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.deps.registry.stopped(this.deps.gatewayId, this.deps.clock.now());
  }

  /** Every registered gateway, judged now: alive or not, how old its heartbeat is, how far its journal lags. */
  async list(latestSeq: number): Promise<GatewayView[]> {
    const now = this.deps.clock.now();
    return (await this.deps.registry.list()).map((gateway) => {
      const heartbeatAgeMs = Math.max(0, now - gateway.heartbeatAt);
      return {
        ...gateway,
        alive: gateway.stoppedAt === null && heartbeatAgeMs <= this.deps.leaseTtlMs,
        heartbeatAgeMs,
        journalLag: Math.max(0, latestSeq - gateway.report.publishedSeq),
      };
    });
  }
}
