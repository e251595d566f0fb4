/** What store tests make a run of: a queued input with a key of its own, and a run's commit that succeeded. */
import type { NewInput, RunCommit } from '../../src/ports/index.js';

export const usage = { inputTokens: 1, outputTokens: 1, modelCalls: 1, steps: 1 };

let counter = 0;

/** A new input for the session (`followup` unless told), unique in this process (ids and keys carry the pid and a count). */
export function newInput(sessionKey: string, mode: NewInput['mode'] = 'followup'): NewInput {
  const id = `in-${process.pid}-${++counter}`;
  return { id, sessionKey, idempotencyKey: `key-${id}`, mode, text: 'x', provenance: { kind: 'user' } };
}

/** A run id unique in this process. */
export const newRunId = () => `run-${process.pid}-${++counter}`;

/** The commit of a run that succeeded with "ok", consuming `consumedInputIds`; no outbox rows or events. */
export function succeededCommit(
  commit: Pick<RunCommit, 'runId' | 'sessionKey' | 'epoch' | 'consumedInputIds'> & Partial<Pick<RunCommit, 'transcript'>>,
): RunCommit {
  return {
    transcript: [],
    ...commit,
    outcome: { status: 'succeeded', usage, preambleChars: 0, promptChars: 0, finalText: 'ok' },
    outbox: [],
    events: [],
  };
}
