import { describe, expect, it } from 'vitest';
import { judged, OPENCLAW_BYTES } from '../../bench/judged.js';

describe('benchmark verdicts', () => {
  it('are taken on the unrounded value, printed with the digits that show which side of the target it is on', () => {
    expect(judged(OPENCLAW_BYTES / 23_336, '>=', 25, 'times less')).toBe('24.99 times less (target >= 25 times less: not met)');
    expect(judged(OPENCLAW_BYTES / 23_094, '>=', 25, 'times less')).toBe('25.25 times less (target >= 25 times less: met)');
    expect(judged(24.9999, '>=', 25)).toBe('24.9999 (target >= 25: not met)');
    expect(judged(25, '>=', 25)).toBe('25 (target >= 25: met)');
    expect(judged(2.004, '<=', 2, 'ms')).toBe('2.004 ms (target <= 2 ms: not met)');
    expect(judged(1.996, '<=', 2, 'ms')).toBe('1.996 ms (target <= 2 ms: met)');
    expect(judged(999.6, '>=', 1000, 'messages/s')).toBe('999.6 messages/s (target >= 1000 messages/s: not met)');
    expect(judged(2050, '<=', 1500, 'characters')).toBe('2050 characters (target <= 1500 characters: not met)');
    expect(judged(999.6, '<', 1000, 'ms')).toBe('999.6 ms (target < 1000 ms: met)');
  });
});
