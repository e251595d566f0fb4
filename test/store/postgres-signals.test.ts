/**
 * LISTEN/NOTIFY between two stores on one schema (two gateways): a signal reaches the other store's listeners and
 * not the sender's own, many signals in a moment are one, another schema hears nothing, and a listening connection
 * that the server drops comes back and says so. And a connection the server ends in the middle of a transaction (a
 * gateway paused past idle_in_transaction_session_timeout) fails that transaction, not the process.
 */
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { channelOf } from '../../src/store/postgres/signals.js';
import { waitUntil } from '../helpers/wait.js';

if (process.env.CI || (await postgresReachable())) {
  describe('postgres signals (two stores, one schema)', () => {
    const schema = `sb_signals_${process.pid}`;
    const elsewhere = `sb_signals_other_${process.pid}`;
    let a: PostgresStore;
    let b: PostgresStore;
    let other: PostgresStore;
    beforeAll(async () => {
      a = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 2 });
      b = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 2 });
      other = await PostgresStore.open({ connectionString: POSTGRES_URL, schema: elsewhere, maxConnections: 2 });
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await other?.close();
      await dropSchemas(schema, elsewhere);
    });

    it("a signal reaches the other store's listener, not the sender's, nor another schema's; a burst is one signal or two", async () => {
      let heardByA = 0;
      let heardByB = 0;
      let heardElsewhere = 0;
      const stops = [
        a.signals.listen('journal', () => (heardByA += 1)),
        b.signals.listen('journal', () => (heardByB += 1)),
        other.signals.listen('journal', () => (heardElsewhere += 1)),
      ];
      for (let i = 0; i < 100; i += 1) b.signals.notify('journal');
      await waitUntil('a heard it', () => heardByA > 0, 2000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(heardByA).toBeLessThanOrEqual(2);
      expect(heardByB).toBe(0);
      expect(heardElsewhere).toBe(0);
      for (const stop of stops) stop();
    });

    it('a transaction whose connection the server ends (it sat idle too long) fails; the store goes on', async () => {
      const quick = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 2, idleTransactionTimeoutMs: 300 });
      try {
        const db = (quick as unknown as { db: Kysely<unknown> }).db;
        await expect(
          db.transaction().execute(async (trx) => {
            await sql`SELECT 1`.execute(trx);
            // The gateway is held up mid-transaction (paused, or its event loop stalled) past the timeout.
            await new Promise((resolve) => setTimeout(resolve, 1200));
            await sql`SELECT 2`.execute(trx);
          }),
        ).rejects.toThrow();
        expect(await quick.sessions.list()).toEqual([]);
      } finally {
        await quick.close();
      }
    });

    it('a listening connection the server drops is made again; its listeners are called once it is back, and hear later signals', async () => {
      let heard = 0;
      const stop = a.signals.listen('journal', () => (heard += 1));
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      // Each store listens on a connection of its own: drop every one listening on this schema's channel.
      const listening = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [
        `LISTEN ${JSON.stringify(channelOf(schema))}`,
      ]);
      expect(listening.rows.length).toBe(2);
      for (const { pid } of listening.rows) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await admin.end();
      await waitUntil('the listener was called on reconnecting', () => heard >= 1, 5000);
      const before = heard;
      b.signals.notify('journal');
      await waitUntil('a later signal was heard', () => heard > before, 5000);
      stop();
    });

    it("a dropped listening connection is reported to the store's onBackgroundError, saying what failed", async () => {
      const own = `${schema}_reported`;
      const errors: string[] = [];
      const store = await PostgresStore.open({
        connectionString: POSTGRES_URL,
        schema: own,
        maxConnections: 1,
        analyze: 'off',
        onBackgroundError: (error) => errors.push((error as Error).message),
      });
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      try {
        const listening = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [
          `LISTEN ${JSON.stringify(channelOf(own))}`,
        ]);
        expect(listening.rows.length).toBe(1);
        await admin.query('SELECT pg_terminate_backend($1)', [listening.rows[0]!.pid]);
        await waitUntil('the drop is reported', () => errors.length >= 1, 5000);
        expect(errors[0]).toMatch(/^signals between gateways \(LISTEN\/NOTIFY\) failed; polling covers until they are back: /);
      } finally {
        await admin.end();
        await store.close();
        await dropSchemas(own);
      }
    });
  });
} else {
  describe('postgres signals', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
