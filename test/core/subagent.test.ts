/** The pure sub-agent rules: what a run's end means, the frozen result, handles, and tools by role. */
import { describe, expect, it } from 'vitest';
import {
  decideRunEnd,
  elapsedWithoutDowntime,
  freezeResult,
  resolveLimits,
  roleAllowsTool,
  signHandle,
  verifyHandle,
  type Hashing,
} from '../../src/core/subagent.js';

/** A hand-written stand-in for node:crypto: deterministic, and different for every secret and text. */
const hashing: Hashing = { hmacSha256: (secret, text) => `${secret}|${text}`, sha256: (text) => `h(${text})` };

const facts = { status: 'succeeded' as const, finalText: 'answer', error: null, frozenText: null, liveChildren: 0, queuedInputs: 0 };

describe('decideRunEnd', () => {
  it('settles with the final text when nothing is still out', () => {
    expect(decideRunEnd(facts)).toEqual({ kind: 'settle', state: 'succeeded', text: 'answer', diagnostic: null });
  });
  it('freezes the answer while children or inputs are on their way', () => {
    expect(decideRunEnd({ ...facts, liveChildren: 2 })).toEqual({ kind: 'wait', frozenText: 'answer' });
    expect(decideRunEnd({ ...facts, queuedInputs: 1 })).toEqual({ kind: 'wait', frozenText: 'answer' });
  });
  it('a wake run answering nothing or NO_REPLY keeps the frozen answer', () => {
    for (const finalText of ['', '  NO_REPLY \n', null]) {
      expect(decideRunEnd({ ...facts, finalText, frozenText: 'earlier' })).toEqual({
        kind: 'settle',
        state: 'succeeded',
        text: 'earlier',
        diagnostic: null,
      });
    }
  });
  it('a failed, timed-out or cancelled run settles with its status and error; an interrupted one changes nothing', () => {
    expect(decideRunEnd({ ...facts, status: 'timed_out', error: 'too slow', liveChildren: 3 })).toEqual({
      kind: 'settle',
      state: 'timed_out',
      text: 'answer',
      diagnostic: 'too slow',
    });
    expect(decideRunEnd({ ...facts, status: 'interrupted' })).toEqual({ kind: 'none' });
  });
});

describe('results, handles, roles and limits', () => {
  it('freezeResult caps the text and hashes what it keeps', () => {
    expect(freezeResult('abcdef', 4, hashing.sha256)).toEqual({ result: 'abcd', resultHash: 'h(abcd)', resultChars: 6, truncated: true });
    expect(freezeResult(null, 4, hashing.sha256)).toEqual({ result: '', resultHash: 'h()', resultChars: 0, truncated: false });
  });
  it('a handle verifies only with its secret and unaltered fields', () => {
    const handle = signHandle(hashing, 's', {
      subagentId: 'a',
      parentSessionKey: 'agent:m:main',
      correlationId: 'c',
      createdAt: 1,
      depth: 1,
      role: 'leaf',
    });
    expect(verifyHandle(hashing, 's', handle)).toBe(true);
    expect(verifyHandle(hashing, 't', handle)).toBe(false);
    expect(verifyHandle(hashing, 's', { ...handle, role: 'orchestrator' })).toBe(false);
    expect(verifyHandle(hashing, 's', { ...handle, createdAt: 2 })).toBe(false);
    expect(verifyHandle(hashing, 's', null)).toBe(false);
    expect(verifyHandle(hashing, 's', { ...handle, capability: `${handle.capability}x` })).toBe(false);
  });
  it('a leaf gets no session tools; an orchestrator only spawn, subagents, list and history', () => {
    expect(
      ['sessions_send', 'sessions_spawn', 'subagents', 'sessions_list', 'time_now'].filter((tool) => roleAllowsTool('leaf', tool)),
    ).toEqual(['time_now']);
    expect(
      ['sessions_send', 'sessions_wait', 'sessions_spawn', 'subagents', 'sessions_list', 'sessions_history', 'time_now'].filter((tool) =>
        roleAllowsTool('orchestrator', tool),
      ),
    ).toEqual(['sessions_spawn', 'subagents', 'sessions_list', 'sessions_history', 'time_now']);
  });
  it("resolveLimits takes the agent's own settings over the defaults and names where each came from", () => {
    const defaults = {
      maxSpawnDepth: 1,
      maxChildrenPerAgent: 5,
      runTimeoutSeconds: 900,
      archiveAfterMinutes: 60,
      allowAgents: [],
      maxResultChars: 32_000,
      completionMode: 'steer' as const,
      retryInterrupted: false,
      allowRuntimes: [],
    };
    const limits = resolveLimits(defaults, { maxSpawnDepth: 2 }, 'lead');
    expect(limits).toMatchObject({ maxSpawnDepth: 2, maxChildrenPerAgent: 5 });
    expect(limits.source('maxSpawnDepth')).toBe('agents.list[lead].subagents.maxSpawnDepth');
    expect(limits.source('maxChildrenPerAgent')).toBe('agents.defaults.subagents.maxChildrenPerAgent');
  });
});

describe('elapsedWithoutDowntime', () => {
  it('leaves out, for each interrupted run, the time from its end to the next run (or the end), and nothing else', () => {
    // Spawned at 0; a run 10-40 interrupted (its lease last ran out at 40), the gateway back and the retry at 1,000;
    // the retry ends at 1,050. Elapsed: 1,050 less the 960 ms down.
    const runs = [
      { startedAt: 1000, endedAt: 1050, status: 'succeeded' },
      { startedAt: 10, endedAt: 40, status: 'interrupted' },
    ];
    expect(elapsedWithoutDowntime(0, 1050, runs)).toBe(90);
    // Interrupted and not retried: the downtime runs to the end (its settling at recovery).
    expect(elapsedWithoutDowntime(0, 500, [{ startedAt: 10, endedAt: 40, status: 'interrupted' }])).toBe(40);
    // No interruption: the wall clock; a run still going counts up to the end.
    expect(elapsedWithoutDowntime(0, 500, [{ startedAt: 10, endedAt: null, status: 'running' }])).toBe(500);
    expect(elapsedWithoutDowntime(100, 50, [])).toBe(0);
  });
});
