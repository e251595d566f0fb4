import { describe, expect, it } from 'vitest';
import { HeldResults } from '../../src/gateway/runs/held-results.js';
import type { HeldResult, HeldResultSource } from '../../src/ports/runtimes.js';
import type { NewInput, RunRecord, Store } from '../../src/ports/index.js';

/** A source holding the given results, recording how each was settled. */
function source(results: { runId: string | null; text?: string }[], outcomes: string[]): HeldResultSource {
  return {
    held: async (runId) =>
      results
        .filter((result) => runId === undefined || result.runId === runId)
        .map(
          (result): HeldResult => ({
            runId: result.runId,
            redelivery:
              result.text === undefined
                ? undefined
                : {
                    sessionKey: 'agent:a:main',
                    idempotencyKey: `held:${result.text}`,
                    mode: 'followup',
                    text: result.text,
                    provenance: { kind: 'user', channel: 'api' },
                  },
            settle: async (redelivered) => void outcomes.push(`${result.text ?? '(none)'}:${redelivered ? 'redelivered' : 'settled'}`),
          }),
        ),
  };
}

function path(runs: Record<string, RunRecord['status']>, sources: HeldResultSource[]) {
  const accepted: NewInput[] = [];
  const store = {
    runs: { get: async (id: string) => (runs[id] ? ({ id, status: runs[id] } as RunRecord) : undefined) },
  } as unknown as Store;
  let next = 0;
  const held = new HeldResults(
    { store, newId: () => `id-${++next}`, accept: async (input) => (accepted.push(input), {} as never) },
    sources,
  );
  return { held, accepted };
}

describe('held results: the one redelivery path', () => {
  it('a run that commits keeps what it took; one that fails has it delivered as a message, from every source', async () => {
    const outcomes: string[] = [];
    const { held, accepted } = path({}, [
      source(
        [
          { runId: 'r1', text: 'reply' },
          { runId: 'r2', text: 'other run' },
        ],
        outcomes,
      ),
      source([{ runId: 'r1', text: 'remote result' }, { runId: 'r1' }], outcomes),
    ]);
    await held.afterRun('r1', 'succeeded');
    expect(outcomes).toEqual(['reply:settled', 'remote result:settled', '(none):settled']);
    expect(accepted).toEqual([]);
    outcomes.length = 0;
    await held.afterRun('r1', 'failed');
    expect(outcomes).toEqual(['reply:redelivered', 'remote result:redelivered', '(none):settled']);
    expect(accepted.map((input) => [input.id, input.idempotencyKey, input.text])).toEqual([
      ['id-1', 'held:reply', 'reply'],
      ['id-2', 'held:remote result', 'remote result'],
    ]);
  });

  it('recovery settles each result as its run ended, and leaves alone one whose run is still running (another gateway on the store)', async () => {
    const outcomes: string[] = [];
    const { held, accepted } = path({ done: 'succeeded', died: 'interrupted', live: 'running' }, [
      source(
        [
          { runId: 'done', text: 'kept' },
          { runId: 'died', text: 'lost run' },
          { runId: 'live', text: 'live' },
          { runId: null, text: 'no run' },
        ],
        outcomes,
      ),
    ]);
    await held.recover();
    expect(outcomes).toEqual(['kept:settled', 'lost run:redelivered', 'no run:redelivered']);
    expect(accepted.map((input) => input.text)).toEqual(['lost run', 'no run']);
  });

  it('a failed delivery leaves the result unsettled, so the next pass (recovery) delivers it', async () => {
    const outcomes: string[] = [];
    const sources = [source([{ runId: 'r1', text: 'reply' }], outcomes)];
    const store = { runs: { get: async () => undefined } } as unknown as Store;
    const failing = new HeldResults({ store, newId: () => 'x', accept: async () => Promise.reject(new Error('disk full')) }, sources);
    await expect(failing.afterRun('r1', 'failed')).rejects.toThrow('disk full');
    expect(outcomes).toEqual([]);
  });
});
