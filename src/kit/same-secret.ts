/** Comparing a secret someone sent with the one configured, in time that does not tell how much of it matched. */
import { timingSafeEqual } from 'node:crypto';

export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
