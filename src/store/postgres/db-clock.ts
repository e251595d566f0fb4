/**
 * The database's clock, read on the gateway without a round trip: the offset between the two clocks is measured at
 * open and every `refreshMs` after (the midpoint of the query's round trip, so at most half of it off). With several
 * gateways on one database, every expiry they compute (board claims, the dispatcher's lease, rate windows, outbox
 * backoff) is then on one clock, whatever their machines' clocks say.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema/database.js';
import type { Clock } from '../../ports/index.js';

export class DatabaseClock implements Clock {
  private offsetMs = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly refreshMs = 30_000,
  ) {}

  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Measures the offset now, then keeps measuring it in the background (a failed measure keeps the last offset). */
  async start(): Promise<void> {
    await this.measure();
    this.timer = setInterval(() => void this.measure().catch(() => {}), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async measure(): Promise<void> {
    const sent = Date.now();
    const { rows } = await sql<{ ms: string }>`SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms`.execute(this.db);
    const received = Date.now();
    this.offsetMs = Number(rows[0]!.ms) - Math.round((sent + received) / 2);
  }
}
