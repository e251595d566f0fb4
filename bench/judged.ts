/** How the benchmarks judge a measurement against its target. */

/** OpenClaw's bytes for the nine model calls of one send with five turns and an announce, as measured. */
export const OPENCLAW_BYTES = 583_196;

/**
 * A measured value against its target. The verdict is taken on the unrounded value, and the value is printed with
 * as many digits as it takes for the printed number to fall on the same side of the target (24.99, not 25.0).
 */
export function judged(value: number, op: '>=' | '<=' | '<', target: number, unit = ''): string {
  const meets = (v: number) => (op === '>=' ? v >= target : op === '<=' ? v <= target : v < target);
  // A printed value misleads when it falls on the other side of the target, or on the target itself.
  const misleads = (digits: number) => {
    const shown = Number(value.toFixed(digits));
    return meets(shown) !== meets(value) || (shown === target && value !== target);
  };
  let digits = Number.isInteger(value) || Math.abs(value) >= 100 ? 0 : 2;
  while (digits < 6 && misleads(digits)) digits += 1;
  const suffix = unit ? ` ${unit}` : '';
  return `${value.toFixed(digits)}${suffix} (target ${op} ${target}${suffix}: ${meets(value) ? 'met' : 'not met'})`;
}

/** The value at percentile `p` (0-100) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export const fmt = (n: number, digits = 2) => n.toFixed(digits);
