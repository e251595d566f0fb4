/**
 * Polls `check` until it returns something truthy and returns that. Fails loudly with `what` when it
 * has not happened within `timeoutMs`, rather than letting the test go on with a false premise.
 */
type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

export async function waitUntil<T>(what: string, check: () => T | Promise<T>, timeoutMs = 5000, everyMs = 5): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
