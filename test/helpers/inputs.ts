/** What store tests make a run of: a queued input with a key of its own, and the usage a run reports. */
import type { NewInput } from '../../src/ports/index.js';

export const usage = { inputTokens: 1, outputTokens: 1, modelCalls: 1, steps: 1 };

let counter = 0;

/** A new `followup` input for the session, unique in this process (ids and keys carry the pid and a count). */
export function newInput(sessionKey: string): NewInput {
  const id = `in-${process.pid}-${++counter}`;
  return { id, sessionKey, idempotencyKey: `key-${id}`, mode: 'followup', text: 'x', provenance: { kind: 'user' } };
}

/** A run id unique in this process. */
export const newRunId = () => `run-${process.pid}-${++counter}`;
