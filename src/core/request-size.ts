/** Request sizes added up over a run's model calls (what each call sent is measured by the model port). */
/** What a run's model calls sent, summed over its calls, in UTF-8 bytes: all of it, its system text, its tool definitions. */
export interface RunRequestSize {
  bytes: number;
  systemBytes: number;
  toolBytes: number;
}

export const NO_REQUEST: RunRequestSize = { bytes: 0, systemBytes: 0, toolBytes: 0 };

export function addRequest(total: RunRequestSize, one: RunRequestSize): RunRequestSize {
  return { bytes: total.bytes + one.bytes, systemBytes: total.systemBytes + one.systemBytes, toolBytes: total.toolBytes + one.toolBytes };
}
