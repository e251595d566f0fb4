/** What a call ended with: its value, or its error's code (races assert on one or the other). */
export async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, code: (error as { code?: string }).code ?? String(error) };
  }
}
