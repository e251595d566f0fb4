/**
 * Schedules in a real gateway (docs/schedules.md), on a clock the test moves: an interval schedule fires one input per
 * slot, with its own provenance, and a run answers it; across a restart the slots missed while no gateway ran are
 * skipped or caught up (at most maxCatchUp, the newest), counted exactly; a reload adds a schedule at once.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { InputRecord } from '../../src/ports/index.js';
import type { ScheduleRunner } from '../../src/schedules/schedule-runner.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const HOUR = 3_600_000;
/** 2026-01-01T00:00:00Z: slots of an hourly schedule are on the hour. */
const T0 = Date.UTC(2026, 0, 1);

const config = (schedule: string) => `{
  agents: { list: [{ id: "ops", model: "scripted/ops" }] },
  models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "report sent" }] } } } } },
  schedules: [${schedule}],
}`;

class TestClock {
  constructor(public at: number) {}
  now = () => this.at;
}

interface Running {
  gateway: Gateway;
  runner: ScheduleRunner;
}

const dbs: string[] = [];
const running: Gateway[] = [];
afterEach(async () => {
  for (const gateway of running.splice(0)) {
    await gateway.stop();
    await gateway.store.close();
  }
});

async function start(text: string, clock: TestClock, db?: string): Promise<Running> {
  const path = db ?? join(mkdtempSync(join(tmpdir(), 'sb-sched-')), 'store.db');
  dbs.push(path);
  const { config: parsed } = parseConfigText(text, '/test/switchboard.json5', {});
  let runner!: ScheduleRunner;
  const gateway = await startGateway(
    { config: parsed, store: await SqliteStore.open({ path }), gatewayId: 'gw-test', clock },
    { onSchedules: (made) => (runner = made) },
  );
  running.push(gateway);
  // The first pass runs as the gateway starts: wait for it, so the schedule is anchored at the clock's time.
  await runner.settle();
  return { gateway, runner };
}

async function stop(gateway: Gateway): Promise<void> {
  running.splice(running.indexOf(gateway), 1);
  await gateway.stop();
  await gateway.store.close();
}

const scheduled = async (gateway: Gateway): Promise<InputRecord[]> =>
  (await gateway.store.inputs.list({ sessionKey: 'agent:ops:main', limit: 1000 }))
    .filter((input) => input.idempotencyKey.includes(':schedule:'))
    .sort((a, b) => (a.idempotencyKey < b.idempotencyKey ? -1 : 1));
const slotsOf = (inputs: InputRecord[]) => inputs.map((input) => input.idempotencyKey.replace(/^.*:schedule:[^:]+:/, ''));
const iso = (at: number) => new Date(at).toISOString();

describe('schedules in a gateway', () => {
  it('an interval schedule fires one input per slot, with the schedule provenance, and a run answers it', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { gateway, runner } = await start(config('{ id: "hourly", every: "1h", agent: "ops", message: "send the report" }'), clock);
    expect(await scheduled(gateway)).toEqual([]);
    clock.at = T0 + HOUR + 5_000;
    await runner.settle();
    await runner.settle();
    const [first, ...more] = await scheduled(gateway);
    expect(more).toEqual([]);
    expect(first).toMatchObject({
      sessionKey: 'agent:ops:main',
      idempotencyKey: `client:agent:ops:main:schedule:hourly:${iso(T0 + HOUR)}`,
      text: 'send the report',
      provenance: { kind: 'system', channel: 'schedule', peer: 'hourly' },
    });
    expect(await gateway.waitForInput(first.id, 10_000)).toMatchObject({
      status: 'completed',
      reply: 'report sent',
      run: { status: 'succeeded' },
    });
    clock.at = T0 + 2 * HOUR;
    await runner.settle();
    expect(slotsOf(await scheduled(gateway))).toEqual([iso(T0 + HOUR), iso(T0 + 2 * HOUR)]);
    const [view] = await runner.list();
    expect(view).toMatchObject({
      id: 'hourly',
      sessionKey: 'agent:ops:main',
      nextSlotAt: iso(T0 + 3 * HOUR),
      lastFiredSlotAt: iso(T0 + 2 * HOUR),
      lastInputId: (await scheduled(gateway))[1].id,
      unfired: 0,
    });
  });

  for (const [missed, extra, expected] of [
    ['skip', '', []],
    ['catchup', '', [2, 3, 4, 5]],
    ['catchup', ', maxCatchUp: 2', [4, 5]],
  ] as const) {
    it(`a restart after four missed slots with missed: "${missed}"${extra}: fires ${expected.length} of them, then the next slot`, async () => {
      const clock = new TestClock(T0 + HOUR / 2);
      const text = config(`{ id: "hourly", every: "1h", agent: "ops", message: "report", missed: "${missed}"${extra} }`);
      const first = await start(text, clock);
      clock.at = T0 + HOUR;
      await first.runner.settle();
      expect(slotsOf(await scheduled(first.gateway))).toEqual([iso(T0 + HOUR)]);
      const db = dbs.at(-1)!;
      await stop(first.gateway);
      // Down from 01:00 to 05:30: the slots of 02:00, 03:00, 04:00 and 05:00 pass with no gateway.
      clock.at = T0 + 5.5 * HOUR;
      const second = await start(text, clock, db);
      await second.runner.settle();
      expect(slotsOf(await scheduled(second.gateway))).toEqual([1, ...expected].map((hour) => iso(T0 + hour * HOUR)));
      clock.at = T0 + 6 * HOUR;
      await second.runner.settle();
      expect(slotsOf(await scheduled(second.gateway))).toEqual([1, ...expected, 6].map((hour) => iso(T0 + hour * HOUR)));
    });
  }

  it('a slot claimed but not fired (a crash between the claim and the input) is fired at the next pass, once', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { gateway, runner } = await start(config('{ id: "hourly", every: "1h", agent: "ops", message: "report" }'), clock);
    // What a gateway killed after its claim leaves: the slot's row, no input.
    expect(await gateway.store.schedules.claim('hourly', T0 + HOUR, 'gw-gone', T0 + HOUR)).toBe(true);
    clock.at = T0 + HOUR + 1000;
    await runner.settle();
    await runner.settle();
    const inputs = await scheduled(gateway);
    expect(slotsOf(inputs)).toEqual([iso(T0 + HOUR)]);
    expect((await gateway.store.schedules.states(['hourly']))[0]).toMatchObject({
      lastFired: { slotAt: T0 + HOUR, inputId: inputs[0].id },
      unfired: [],
    });
  });

  it('a reload that adds a schedule takes effect at the next pass; one disabled fires nothing', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { gateway, runner } = await start(config(''), clock);
    const next = parseConfigText(
      config(
        '{ id: "hourly", every: "1h", agent: "ops", message: "report" }, { id: "off", every: "1h", agent: "ops", message: "no", enabled: false }',
      ),
      '/test/switchboard.json5',
      {},
    ).config;
    expect(gateway.reloadConfig(next)).toEqual({ applied: ['schedules'], restartRequired: [] });
    await runner.settle();
    clock.at = T0 + HOUR;
    await runner.settle();
    expect(slotsOf(await scheduled(gateway))).toEqual([iso(T0 + HOUR)]);
    expect((await runner.list()).map((view) => [view.id, view.nextSlotAt])).toEqual([
      ['hourly', iso(T0 + 2 * HOUR)],
      ['off', null],
    ]);
  });
});
