/** Path reservations as pi-messenger judges them (docs/mailbox.md). Pure. */

/** A pattern ending in `/` reserves everything below it; any other, that one path. */
export function pathMatchesReservation(path: string, pattern: string): boolean {
  if (pattern.endsWith('/')) return path.startsWith(pattern) || `${path}/` === pattern;
  return path === pattern;
}

/** Two patterns that some path matches both. */
export function reservationsOverlap(a: string, b: string): boolean {
  return pathMatchesReservation(a, b) || pathMatchesReservation(b, a);
}
