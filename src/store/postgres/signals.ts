/**
 * LISTEN/NOTIFY between the gateways on one PostgreSQL schema (ports/signals.ts). One connection of its own listens on
 * the schema's channel; notifications go out through the pool, at most one per topic every `NOTIFY_GAP_MS`, carrying
 * this store's instance id so that its own come back ignored. A listening connection that drops is made again with
 * backoff, and every listener is called once it is back: what was signalled meanwhile is lost, so they look anyway.
 */
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { SignalTopic, Signals } from '../../ports/index.js';

const NOTIFY_GAP_MS = 10;
const RECONNECT_MS = [250, 1000, 5000];

/** The schema's channel: a name PostgreSQL takes whole (63 bytes at most). */
export function channelOf(schema: string): string {
  const name = `switchboard_${schema}`;
  return name.length <= 63 ? name : `switchboard_${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}

export class PostgresSignals implements Signals {
  private readonly instance = randomUUID();
  private readonly listeners = new Map<SignalTopic, Set<() => void>>();
  private readonly pending = new Set<SignalTopic>();
  private flushTimer?: NodeJS.Timeout;
  private flushing = false;
  private client?: pg.Client;
  private reconnects = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly pool: Pick<pg.Pool, 'query'>,
    /** A new connection to the same database, for listening. */
    private readonly connect: () => pg.Client,
    private readonly channel: string,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  async start(): Promise<void> {
    const client = this.connect();
    client.on('notification', (message) => {
      const [topic, from] = (message.payload ?? '').split(' ');
      if (from !== this.instance) this.fire(topic as SignalTopic);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${JSON.stringify(this.channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.closed) return void (await client.end().catch(() => {}));
    this.client = client;
  }

  notify(topic: SignalTopic): void {
    if (this.closed) return;
    this.pending.add(topic);
    this.flushTimer ??= setTimeout(() => void this.flush(), 0);
  }

  listen(topic: SignalTopic, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.closed) return;
    this.flushing = true;
    const topics = [...this.pending];
    this.pending.clear();
    try {
      for (const topic of topics) await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, `${topic} ${this.instance}`]);
    } catch (error) {
      this.onError(error);
    } finally {
      this.flushing = false;
      // The next signal waits a moment: under load, one a few milliseconds stands for every commit in them.
      this.flushTimer = this.pending.size > 0 && !this.closed ? setTimeout(() => void this.flush(), NOTIFY_GAP_MS) : undefined;
    }
  }

  private fire(topic: SignalTopic): void {
    for (const listener of this.listeners.get(topic) ?? []) listener();
  }

  private lost(client: pg.Client, error?: unknown): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    if (error) this.onError(error);
    void client.end().catch(() => {});
    this.reconnect();
  }

  private reconnect(): void {
    const delay = RECONNECT_MS[Math.min(this.reconnects, RECONNECT_MS.length - 1)]!;
    this.reconnects += 1;
    this.reconnectTimer = setTimeout(() => {
      if (this.closed) return;
      this.start().then(
        () => {
          this.reconnects = 0;
          for (const topic of this.listeners.keys()) this.fire(topic);
        },
        (failed) => {
          this.onError(failed);
          this.reconnect();
        },
      );
    }, delay);
  }
}
