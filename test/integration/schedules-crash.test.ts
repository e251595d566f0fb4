/**
 * A schedule firing every second while its gateway is SIGKILLed again and again at random moments (docs/schedules.md):
 * a kill may land between a slot's claim and its input, or between the input and the slot's fired mark. The restarts
 * are quick (each slot missed is within the minute's grace), so afterwards every slot from the first to the last is
 * fired, each as exactly one input recorded on its row, and no claimed slot is left without its input.
 */
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const KILLS = 4;
const { dir, configPath } = tempConfig(`{
  agents: { list: [{ id: "ops", model: "scripted/ops" }] },
  models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "tock" }] } } } } },
  schedules: [{ id: "tick", every: "1s", agent: "ops", message: "tick" }],
}`);
const KEY = 'client:agent:ops:main:schedule:tick:';

function read<T>(sql: string): T[] {
  const db = new BetterSqlite3(join(dir, '.switchboard', 'switchboard.db'), { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

describe('schedules crash', () => {
  it('SIGKILL at random moments while a schedule fires every second: each slot one input, none left out', async () => {
    for (let kill = 0; kill < KILLS; kill++) {
      const gateway = await startGatewayProcess(configPath);
      const started = Date.now();
      // Killed at a random moment of its first one to three seconds: some kills land mid-slot.
      await waitUntil('the kill moment', () => Date.now() - started > 1000 + Math.random() * 2000, 5000, 20);
      await stopGatewayProcess(gateway, 'SIGKILL');
    }
    const last = await startGatewayProcess(configPath);
    const restarted = Date.now();
    // Two slots after the last start fired, and no claimed slot waits for its input.
    await waitUntil(
      'two more slots fired',
      async () => {
        const { body } = await last.request<{ schedules: { lastFiredSlotAt: string | null; unfired: number }[] }>('GET', '/v1/schedules');
        const [tick] = body.schedules;
        return tick.lastFiredSlotAt !== null && Date.parse(tick.lastFiredSlotAt) >= restarted + 1000 && tick.unfired === 0;
      },
      20_000,
      100,
    );
    expect(await stopGatewayProcess(last)).toBe(0);

    const slots = read<{ slot_at: number; input_id: string | null; fired_at: number | null }>(
      "SELECT slot_at, input_id, fired_at FROM schedule_slots WHERE schedule_id = 'tick' ORDER BY slot_at",
    );
    const first = slots[0].slot_at;
    const newest = slots.at(-1)!.slot_at;
    expect(slots.map((slot) => slot.slot_at)).toEqual(Array.from({ length: (newest - first) / 1000 + 1 }, (_, i) => first + i * 1000));
    expect(slots.filter((slot) => slot.input_id === null)).toEqual([]);
    const inputs = read<{ id: string; idempotency_key: string }>(
      `SELECT id, idempotency_key FROM inputs WHERE idempotency_key LIKE '${KEY}%'`,
    );
    expect(inputs).toHaveLength(slots.length);
    const bySlot = new Map(inputs.map((input) => [Date.parse(input.idempotency_key.slice(KEY.length)), input.id]));
    for (const slot of slots) expect(bySlot.get(slot.slot_at)).toBe(slot.input_id);
  }, 120_000);
});
