/**
 * What the PostgreSQL race tests set up alike: a takeover recovery, a run of gw-1 on a new session (its lease lasting
 * `leaseTtlMs`, already run out when negative), and the first step such a run commits.
 */
import type { NewStep, OrphanRecovery, Store } from '../../src/ports/index.js';
import { newInput, newRunId } from './inputs.js';

export interface RacedRun {
  sessionKey: string;
  runId: string;
  epoch: number;
  inputId: string;
}

export const takeover = (recoverer: string): OrphanRecovery => ({
  recoverer,
  scope: 'expired',
  diagnostic: (owner) => `taken over from ${owner}`,
  maxRetries: 5,
});

let counter = 0;

/** A run of gw-1 on a new session `agent:w:<prefix>-<round>-<n>`. */
export async function startedRun(store: Store, prefix: string, round: number, leaseTtlMs: number): Promise<RacedRun> {
  const sessionKey = `agent:w:${prefix}-${round}-${++counter}`;
  await store.sessions.ensure({ key: sessionKey, agentId: 'w' }, 1000);
  const { input: queued } = await store.inputs.enqueue(newInput(sessionKey), 1000);
  const runId = newRunId();
  const started = await store.runs.start(
    { id: runId, sessionKey, agentId: 'w', owner: 'gw-1', leaseTtlMs, model: 'm', inputIds: [queued.id] },
    1000,
  );
  if (typeof started === 'string') throw new Error(`the run did not start: ${started}`);
  return { sessionKey, runId, epoch: started.epoch, inputId: queued.id };
}

/** Step 0 of `run`: one call of `tool`. */
export const firstStep = (run: RacedRun, tool: string, startedAt: number): NewStep => ({
  runId: run.runId,
  sessionKey: run.sessionKey,
  epoch: run.epoch,
  step: 0,
  attempt: 1,
  model: 'm',
  response: { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: tool, input: {} }], finishReason: 'tool-calls' },
  toolNames: [tool],
  inputIds: [run.inputId],
  usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 0 },
  request: { bytes: 100, systemBytes: 40, toolBytes: 20 },
  startedAt,
});
