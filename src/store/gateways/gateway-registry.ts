/**
 * The gateways' registry over Kysely: a row per gateway with its heartbeat and report, and the secrets every gateway
 * shares. Heartbeats are the gateway's own business (internal writes, see `Relax`): losing the last one to a crash
 * costs nothing, as its age is what tells that the gateway is gone.
 */
import type { Kysely, RawBuilder } from 'kysely';
import type { GatewayRecord, GatewayRegistry, GatewayReport } from '../../ports/index.js';
import { json, num } from '../sql/rows.js';
import { relaxed, type Relax } from '../sql/writes.js';
import type { Database } from '../schema/database.js';

export class KyselyGatewayRegistry implements GatewayRegistry {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dbNowMs: () => RawBuilder<number>,
    private readonly relax?: Relax,
  ) {}

  async register(gateway: { id: string; pid: number; host: string; version: string }, now: number): Promise<void> {
    const row = {
      pid: gateway.pid,
      host: gateway.host,
      version: gateway.version,
      url: null,
      started_at: now,
      heartbeat_at: now,
      stopped_at: null,
    };
    const report: GatewayReport = { activeRuns: 0, lanes: {}, publishedSeq: 0 };
    await this.db
      .insertInto('gateways')
      .values({ id: gateway.id, ...row, info: json(report) })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...row, info: json(report) }))
      .execute();
  }

  async setUrl(id: string, url: string): Promise<void> {
    await this.db.updateTable('gateways').set({ url }).where('id', '=', id).execute();
  }

  async heartbeat(id: string, report: GatewayReport, now: number): Promise<void> {
    await relaxed(this.db, this.relax, (db) =>
      db
        .updateTable('gateways')
        .set({ heartbeat_at: now, info: json(report) })
        .where('id', '=', id)
        .execute(),
    );
  }

  async stopped(id: string, now: number): Promise<void> {
    await this.db.updateTable('gateways').set({ stopped_at: now, heartbeat_at: now }).where('id', '=', id).execute();
  }

  async list(): Promise<GatewayRecord[]> {
    const rows = await this.db
      .selectFrom('gateways')
      .selectAll('gateways')
      .select((eb) =>
        eb
          .selectFrom('session_lease')
          .select((inner) => inner.fn.countAll<number>().as('held'))
          .whereRef('session_lease.owner', '=', 'gateways.id')
          .where('session_lease.expires_at', '>=', this.dbNowMs())
          .as('held'),
      )
      .orderBy('heartbeat_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      pid: num(row.pid),
      host: row.host,
      url: row.url,
      version: row.version,
      startedAt: num(row.started_at),
      heartbeatAt: num(row.heartbeat_at),
      stoppedAt: row.stopped_at === null ? null : num(row.stopped_at),
      report: JSON.parse(row.info) as GatewayReport,
      sessionsHeld: num((row.held as number | null) ?? 0),
    }));
  }

  async sharedSecret(name: string, initial: string): Promise<string> {
    await this.db
      .insertInto('shared_secrets')
      .values({ name, value: initial })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db.selectFrom('shared_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
    return row.value;
  }

  async sharedSecretOf(name: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('shared_secrets').select('value').where('name', '=', name).executeTakeFirst();
    return row?.value;
  }
}
