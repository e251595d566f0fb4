/** When a schedule is due (src/schedules/slots.ts): slots from croner or an interval, and which of them a pass fires. */
import { describe, expect, it } from 'vitest';
import { dueSlots, slotClock } from '../../src/schedules/slots.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const MINUTE = 60_000;

describe('schedule slots', () => {
  it('an interval: slots on its multiples since the epoch, a slot exactly now included', () => {
    const clock = slotClock({ every: '15m' });
    expect(iso(clock.next(at('2026-01-01T10:07:00Z'))!)).toBe('2026-01-01T10:15:00.000Z');
    expect(iso(clock.next(at('2026-01-01T10:15:00Z'))!)).toBe('2026-01-01T10:30:00.000Z');
    expect(clock.latest(at('2026-01-01T10:15:00Z'), 2).map(iso)).toEqual(['2026-01-01T10:15:00.000Z', '2026-01-01T10:00:00.000Z']);
  });

  it('a cron expression in a timezone, read by croner; a slot exactly now included', () => {
    const clock = slotClock({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' });
    // 2026-01-02 is a Friday: 09:00 in Berlin is 08:00 UTC; the next is Monday the 5th.
    expect(iso(clock.next(at('2026-01-02T08:00:00Z'))!)).toBe('2026-01-05T08:00:00.000Z');
    expect(clock.latest(at('2026-01-02T08:00:00Z'), 2).map(iso)).toEqual(['2026-01-02T08:00:00.000Z', '2026-01-01T08:00:00.000Z']);
  });

  it('a late pass fires every slot still within the grace, whatever missed says', () => {
    const clock = slotClock({ every: '10s' });
    const now = at('2026-01-01T10:00:35Z');
    const after = at('2026-01-01T10:00:00Z');
    for (const missed of ['skip', 'catchup'] as const)
      expect(dueSlots(clock, { missed, maxCatchUp: 1 }, after, now, MINUTE).map(iso)).toEqual([
        '2026-01-01T10:00:10.000Z',
        '2026-01-01T10:00:20.000Z',
        '2026-01-01T10:00:30.000Z',
      ]);
  });

  it('slots older than the grace: skip fires none, catchup the newest maxCatchUp, then the ones on time', () => {
    const clock = slotClock({ every: '1m' });
    const after = at('2026-01-01T10:00:00Z');
    const now = at('2026-01-01T10:10:30Z');
    expect(dueSlots(clock, { missed: 'skip', maxCatchUp: 3 }, after, now, MINUTE).map(iso)).toEqual(['2026-01-01T10:10:00.000Z']);
    expect(dueSlots(clock, { missed: 'catchup', maxCatchUp: 3 }, after, now, MINUTE).map(iso)).toEqual([
      '2026-01-01T10:07:00.000Z',
      '2026-01-01T10:08:00.000Z',
      '2026-01-01T10:09:00.000Z',
      '2026-01-01T10:10:00.000Z',
    ]);
    expect(dueSlots(clock, { missed: 'catchup', maxCatchUp: 30 }, after, now, MINUTE)).toHaveLength(10);
    expect(dueSlots(clock, { missed: 'catchup', maxCatchUp: 3 }, now, now, MINUTE)).toEqual([]);
  });
});
