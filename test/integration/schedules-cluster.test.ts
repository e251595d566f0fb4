/**
 * Schedules on two gateways sharing one PostgreSQL schema (docs/schedules.md): both run the same schedule every second
 * and race for each slot, and one is SIGKILLed half-way; every slot from the first to the last is claimed by exactly one
 * of them and becomes exactly one input, recorded on the slot's row, and a run answers each.
 */
import { describe, expect, it } from 'vitest';
import { twoGatewaysForSuite } from '../helpers/cluster.js';
import { POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { stopGatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const schema = `sb_sched_cluster_${process.pid}`;
const SLOTS = 8;

if (process.env.CI || (await postgresReachable())) {
  describe('schedules on two gateways, one PostgreSQL database', () => {
    const suite = twoGatewaysForSuite(
      `{
        store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },
        agents: { list: [{ id: "ops", model: "scripted/ops" }] },
        models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "tock" }] } } } } },
        schedules: [{ id: "tick", every: "1s", agent: "ops", message: "tick" }],
      }`,
      schema,
    );

    it('each slot is claimed by one gateway and fired as one input, with no slot left out', async () => {
      const fired = async () =>
        (
          await suite.db.query<{ slot_at: string; claimed_by: string; input_id: string | null }>(
            "SELECT slot_at, claimed_by, input_id FROM schedule_slots WHERE schedule_id = 'tick' AND fired_at IS NOT NULL ORDER BY slot_at",
          )
        ).rows;
      await waitUntil('four slots fired', async () => (await fired()).length >= SLOTS / 2, 30_000, 100);
      // A gateway killed in the middle: the other goes on firing every slot, none left out and none twice.
      await stopGatewayProcess(suite.a, 'SIGKILL');
      const atKill = (await fired()).length;
      await waitUntil('four more slots fired', async () => (await fired()).length >= atKill + SLOTS / 2, 30_000, 100);
      // What is fired by now: slots after it may be in flight.
      const rows = await fired();
      const first = Number(rows[0].slot_at);
      const last = Number(rows.at(-1)!.slot_at);
      expect(rows.map((row) => Number(row.slot_at))).toEqual(Array.from({ length: (last - first) / 1000 + 1 }, (_, i) => first + i * 1000));
      const inputs = (
        await suite.db.query<{ id: string; idempotency_key: string; session_key: string; provenance: string }>(
          "SELECT id, idempotency_key, session_key, provenance FROM inputs WHERE idempotency_key LIKE 'client:agent:ops:main:schedule:tick:%'",
        )
      ).rows;
      const bySlot = new Map(
        inputs.map((input) => [Date.parse(input.idempotency_key.replace('client:agent:ops:main:schedule:tick:', '')), input]),
      );
      for (const row of rows) expect(bySlot.get(Number(row.slot_at))?.id).toBe(row.input_id);
      // One input per slot claimed, and none for a slot no row claims.
      const claimed = (await suite.db.query<{ n: string }>("SELECT count(*) AS n FROM schedule_slots WHERE schedule_id = 'tick'")).rows[0];
      const made = (
        await suite.db.query<{ n: string }>(
          "SELECT count(*) AS n FROM inputs WHERE idempotency_key LIKE 'client:agent:ops:main:schedule:tick:%'",
        )
      ).rows[0];
      expect(Number(made.n)).toBeLessThanOrEqual(Number(claimed.n));
      expect(Number(made.n)).toBeGreaterThanOrEqual(rows.length);
      expect(JSON.parse(inputs[0].provenance)).toMatchObject({ kind: 'system', channel: 'schedule', peer: 'tick' });
      // The slots well after the kill were all the other gateway's (the one in flight may keep the killed one's claim).
      expect(new Set(rows.slice(-3).map((row) => row.claimed_by)).size).toBe(1);
      const answered = await waitUntil(
        'the fired inputs consumed',
        async () => {
          const { rows: open } = await suite.db.query<{ n: string }>(
            "SELECT count(*) AS n FROM inputs WHERE idempotency_key = ANY($1) AND status <> 'consumed'",
            [rows.map((row) => `client:agent:ops:main:schedule:tick:${new Date(Number(row.slot_at)).toISOString()}`)],
          );
          return Number(open[0].n) === 0;
        },
        30_000,
        100,
      );
      expect(answered).toBe(true);
    }, 60_000);
  });
}
