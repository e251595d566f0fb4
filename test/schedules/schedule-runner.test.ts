/**
 * The schedule runner (src/schedules/schedule-runner.ts) on a real SQLite store, a clock the test moves and a
 * hand-written intake: a schedule changed or switched on again while a gateway runs starts over (no burst of slots
 * that were never due), a slot a stopped gateway left claimed is given up under `skip` once past the grace, a refusal
 * for good gives a slot up instead of holding the schedule back, and a slot beyond a timer's range sets no timer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SwitchboardConfig } from '../../src/config/schema.js';
import type { ScheduleConfig } from '../../src/config/schema-schedules.js';
import { SwitchboardError } from '../../src/core/errors.js';
import type { SendRequest, SendResult } from '../../src/ports/answers.js';
import type { Store } from '../../src/ports/index.js';
import { ScheduleRunner } from '../../src/schedules/schedule-runner.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** 2026-01-01T00:00:00Z. */
const T0 = Date.UTC(2026, 0, 1);
const iso = (at: number) => new Date(at).toISOString();

class TestClock {
  constructor(public at: number) {}
  now = () => this.at;
}

/** The door's intake as the runner sees it: each send recorded; `refuse` answers a slot's send with an error instead. */
class FakeIntake {
  readonly sent: string[] = [];
  stopping = false;
  refuse?: (request: SendRequest) => Error | undefined;

  send = async (request: SendRequest): Promise<SendResult> => {
    const refusal = this.refuse?.(request);
    if (refusal) throw refusal;
    this.sent.push(request.idempotencyKey!.replace(/^schedule:[^:]+:/, ''));
    return { input: { id: `in-${this.sent.length}` }, sessionKey: request.target!, created: true } as SendResult;
  };
}

const entry = (fields: Partial<ScheduleConfig>): ScheduleConfig => ({
  id: 's',
  agent: 'ops',
  message: 'report',
  missed: 'catchup',
  maxCatchUp: 100,
  enabled: true,
  ...fields,
});

interface Rig {
  runner: ScheduleRunner;
  config: { schedules: ScheduleConfig[] };
  intake: FakeIntake;
  store: Store;
  logs: string[];
}

const opened: Rig[] = [];
afterEach(async () => {
  for (const rig of opened.splice(0)) {
    await rig.runner.stop();
    await rig.store.close();
  }
});

async function rig(clock: TestClock, schedules: ScheduleConfig[], store?: Store, rereadMs?: number): Promise<Rig> {
  const config = { schedules };
  const intake = new FakeIntake();
  const logs: string[] = [];
  const made: Rig = { runner: undefined!, config, intake, store: store ?? (await SqliteStore.open({ path: ':memory:' })), logs };
  // No start(): the test runs each pass with settle(), on its clock.
  made.runner = new ScheduleRunner({
    config: config as unknown as SwitchboardConfig,
    store: made.store.schedules,
    intake,
    clock,
    gatewayId: 'gw-test',
    log: (line) => logs.push(line),
    rereadMs,
  });
  opened.push(made);
  await made.runner.settle();
  return made;
}

describe('schedule runner', () => {
  it('a catchup schedule changed from daily to every 1h at 15:00:05 fires no slot before the change: the next is 16:00', async () => {
    const clock = new TestClock(T0 - 60_000);
    const { runner, config, intake } = await rig(clock, [entry({ cron: '0 0 * * *' })]);
    clock.at = T0 + 1000;
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0)]);
    clock.at = T0 + 15 * HOUR + 5000;
    config.schedules = [entry({ every: '1h' })];
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0)]);
    clock.at = T0 + 16 * HOUR;
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0), iso(T0 + 16 * HOUR)]);
  });

  it('a changed message is no new definition: the schedule goes on, a missed slot still caught up', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { runner, config, intake } = await rig(clock, [entry({ every: '1h' })]);
    clock.at = T0 + 3 * HOUR + 1000;
    config.schedules = [entry({ every: '1h', message: 'another report' })];
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0 + HOUR), iso(T0 + 2 * HOUR), iso(T0 + 3 * HOUR)]);
  });

  it('a catchup schedule switched off for three days and on again fires nothing for its time off, then its next slot', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { runner, config, intake } = await rig(clock, [entry({ every: '1h' })]);
    clock.at = T0 + HOUR;
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0 + HOUR)]);
    clock.at = T0 + HOUR + 10_000;
    config.schedules = [entry({ every: '1h', enabled: false })];
    await runner.settle();
    clock.at = T0 + 3 * DAY + HOUR / 2;
    config.schedules = [entry({ every: '1h' })];
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0 + HOUR)]);
    clock.at = T0 + 3 * DAY + HOUR;
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0 + HOUR), iso(T0 + 3 * DAY + HOUR)]);
  });

  it('the change is kept in the store: a gateway started after it does not catch up the slots before it either', async () => {
    const clock = new TestClock(T0 - 60_000);
    const first = await rig(clock, [entry({ cron: '0 0 * * *' })]);
    clock.at = T0 + 1000;
    await first.runner.settle();
    clock.at = T0 + 15 * HOUR + 5000;
    first.config.schedules = [entry({ every: '1h' })];
    await first.runner.settle();
    expect(first.intake.sent).toEqual([iso(T0)]);
    await first.runner.stop();
    // Another gateway on the store, with the new config, at 15:30: 05:00 to 15:00 passed while a gateway ran.
    clock.at = T0 + 15.5 * HOUR;
    const second = await rig(clock, [entry({ every: '1h' })], first.store);
    expect(second.intake.sent).toEqual([]);
    opened.splice(opened.indexOf(first), 1);
  });

  for (const [missed, sent] of [
    ['skip', []],
    ['catchup', [iso(T0 + HOUR)]],
  ] as const) {
    it(`a slot a stopped gateway left claimed, four hours old at the start, with missed: "${missed}": ${sent.length ? 'sent' : 'given up, not sent'}`, async () => {
      const store = await SqliteStore.open({ path: ':memory:' });
      await store.schedules.anchor('s', T0);
      expect(await store.schedules.claim('s', T0 + HOUR, 'gw-gone', T0 + HOUR)).toBe(true);
      const clock = new TestClock(T0 + 5 * HOUR + 30 * 60_000);
      const { intake, logs } = await rig(clock, [entry({ every: '1h', missed, maxCatchUp: 1 })], store);
      expect(intake.sent.filter((slot) => slot === iso(T0 + HOUR))).toEqual(sent);
      expect((await store.schedules.states(['s']))[0].unfired).toEqual([]);
      if (missed === 'skip')
        expect(logs).toEqual([
          `schedules: schedule:s:${iso(T0 + HOUR)} was given up, not sent: claimed by a gateway that stopped before sending it, and past the grace (missed: "skip")`,
        ]);
    });
  }

  it('a send refused for good (a 4xx) is logged once and given up, and the next slot fires; a full lane is tried again', async () => {
    const clock = new TestClock(T0 + HOUR / 2);
    const { runner, intake, logs, store } = await rig(clock, [entry({ every: '1h' })]);
    intake.refuse = (request) =>
      request.idempotencyKey!.endsWith(iso(T0 + HOUR))
        ? new SwitchboardError('SESSION_NOT_FOUND', 'no session "agent:ops:main"')
        : undefined;
    clock.at = T0 + HOUR;
    await runner.settle();
    clock.at = T0 + HOUR + 1000;
    await runner.settle();
    expect(logs).toEqual([
      `schedules: schedule:s:${iso(T0 + HOUR)} was given up, not sent: the intake refused it (SESSION_NOT_FOUND): no session "agent:ops:main"`,
    ]);
    expect((await store.schedules.states(['s']))[0]).toMatchObject({ lastSlotAt: T0 + HOUR, lastFired: null, unfired: [] });
    intake.refuse = () => new SwitchboardError('LANE_QUEUE_FULL', 'the lane is full', { retryAfterMs: 1000 });
    clock.at = T0 + 2 * HOUR;
    await runner.settle();
    await runner.settle();
    expect((await store.schedules.states(['s']))[0].unfired).toEqual([T0 + 2 * HOUR]);
    intake.refuse = undefined;
    await runner.settle();
    expect(intake.sent).toEqual([iso(T0 + 2 * HOUR)]);
    expect(logs).toHaveLength(2);
  });

  it("a monthly slot 31 days off sets no timer beyond a timer's range (no TimeoutOverflowWarning, no pass at once)", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const clock = new TestClock(Date.UTC(2026, 0, 1, 9, 0, 1));
      const store = await SqliteStore.open({ path: ':memory:' });
      let reads = 0;
      const states = store.schedules.states.bind(store.schedules);
      store.schedules.states = (ids) => {
        reads += 1;
        return states(ids);
      };
      // Every pass reads the store (rereadMs 0), so a pass the timer would run at once is counted.
      const { runner } = await rig(clock, [entry({ cron: '0 9 1 * *' })], store, 0);
      expect((await runner.list())[0].nextSlotAt).toBe('2026-02-01T09:00:00.000Z');
      const before = reads;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(reads).toBe(before);
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
