import { describe, expect, it } from 'vitest';
import { decideOnArrival, planNextRun } from '../../src/core/queue-mode.js';
import { MemoryRateLimiter, limitReached, retryAfterMs } from '../../src/core/rate-limit.js';
import { a2aSessionKey, parseSessionKey } from '../../src/core/session-key.js';
import { applyToolPolicy } from '../../src/core/tool-policy.js';
import { backoffDelay } from '../../src/kit/retry.js';

describe('session keys', () => {
  it('session key: parses every kind in the OpenClaw namespace', () => {
    expect(parseSessionKey('agent:support:main')).toEqual({ agentId: 'support', kind: 'main', depth: 0 });
    expect(parseSessionKey('agent:support:whatsapp:direct:+4912')).toEqual({
      agentId: 'support',
      kind: 'direct',
      channel: 'whatsapp',
      peer: '+4912',
      depth: 0,
    });
    expect(parseSessionKey('agent:expert:slack:group:tech')).toEqual({
      agentId: 'expert',
      kind: 'group',
      channel: 'slack',
      peer: 'tech',
      depth: 0,
    });
    expect(parseSessionKey('agent:w:subagent:u1:subagent:u2')).toEqual({ agentId: 'w', kind: 'subagent', depth: 2 });
    // External runtimes' children (a last acp: or process: pair) and editors' sessions (docs/runtimes.md).
    expect(parseSessionKey('agent:w:acp:u1')).toEqual({ agentId: 'w', kind: 'acp', depth: 1 });
    expect(parseSessionKey('agent:w:subagent:u1:process:u2')).toEqual({ agentId: 'w', kind: 'process', depth: 2 });
    expect(parseSessionKey('agent:w:acp-client:u1')).toEqual({ agentId: 'w', kind: 'acp-client', depth: 0 });
    // A channel may be called acp: its direct sessions are three segments, not a runtime child.
    expect(parseSessionKey('agent:w:acp:direct:zed')).toMatchObject({ kind: 'direct', channel: 'acp', peer: 'zed' });
    expect(parseSessionKey('agent:w:a2a:partner:ctx-1')).toEqual({ agentId: 'w', kind: 'a2a', peer: 'partner', depth: 0 });
    // Peer and context are one segment each, whatever they contain: two peers never share a context's session.
    expect(a2aSessionKey('w', 'partner', 'a:b/c')).toBe('agent:w:a2a:partner:a%3ab%2fc');
    expect(a2aSessionKey('w', 'other', 'a:b/c')).not.toBe(a2aSessionKey('w', 'partner', 'a:b/c'));
  });

  it('session key: rejects malformed keys', () => {
    for (const bad of [
      'agent:support',
      'agent:Support:main',
      'user:x:main',
      'agent:x:subagent',
      'agent:x:subagent:a:other:b',
      'agent:x:acp:a:subagent:b',
      'agent:x:subagent:a:acp:',
      'agent:x:slack:dm:y',
      'agent:x:a2a:',
      'agent:x:a2a:ctx-only',
      'agent:x:a2a:p:',
    ]) {
      expect(parseSessionKey(bad), bad).toBeUndefined();
    }
  });
});

describe('queue-mode decisions', () => {
  const at = (id: string, mode: 'steer' | 'followup' | 'collect' | 'interrupt', createdAt = 0) => ({ id, mode, createdAt });

  it('queue mode: arrival actions on an idle and a busy session', () => {
    expect(decideOnArrival('notify', false)).toBe('store');
    expect(decideOnArrival('steer', false)).toBe('schedule');
    expect(decideOnArrival('steer', true)).toBe('steer');
    expect(decideOnArrival('interrupt', true)).toBe('interrupt');
    expect(decideOnArrival('followup', true)).toBe('wait');
    expect(decideOnArrival('collect', true)).toBe('wait');
  });

  it('queue mode: FIFO one at a time; the newest interrupt jumps the queue', () => {
    expect(planNextRun([], 0, 100)).toEqual({ kind: 'idle' });
    expect(planNextRun([at('a', 'followup'), at('b', 'followup')], 0, 100)).toEqual({ kind: 'run', inputIds: ['a'] });
    expect(planNextRun([at('a', 'followup'), at('i1', 'interrupt'), at('i2', 'interrupt')], 0, 100)).toEqual({
      kind: 'run',
      inputIds: ['i2'],
    });
  });

  it('queue mode: collect waits for the quiet window, then takes every collect input', () => {
    const queued = [at('a', 'collect', 1000), at('b', 'followup', 1010), at('c', 'collect', 1050)];
    expect(planNextRun(queued, 1100, 100)).toEqual({ kind: 'wait', untilMs: 1150 });
    expect(planNextRun(queued, 1150, 100)).toEqual({ kind: 'run', inputIds: ['a', 'c'] });
  });

  it("queue mode: the newest collect input's channel window wins over the default", () => {
    const queued = [at('a', 'collect', 1000), { ...at('b', 'collect', 1050), debounceMs: 10 }];
    expect(planNextRun(queued, 1055, 100)).toEqual({ kind: 'wait', untilMs: 1060 });
    expect(planNextRun(queued, 1060, 100)).toEqual({ kind: 'run', inputIds: ['a', 'b'] });
  });
});

describe('tool policy', () => {
  it('tool policy: each layer only narrows; wildcards are case-insensitive', () => {
    const all = ['sessions_send', 'sessions_list', 'time_now', 'exec'];
    expect(
      applyToolPolicy(all, [
        { source: 'tools', allow: ['sessions_*', 'time_now'] },
        { source: 'agent', deny: ['SESSIONS_LIST'] },
      ]),
    ).toEqual(['sessions_send', 'time_now']);
    // A lower layer cannot add back what a higher one removed.
    expect(
      applyToolPolicy(all, [
        { source: 'tools', deny: ['exec'] },
        { source: 'agent', allow: ['exec', 'time_now'] },
      ]),
    ).toEqual(['time_now']);
    expect(applyToolPolicy(all, [{ source: 'agent', deny: ['*'] }])).toEqual([]);
  });
});

describe('outbox backoff', () => {
  it('outbox: exponential backoff with jitter between half and all of the capped delay', () => {
    const options = { baseDelayMs: 500, maxDelayMs: 10_000 };
    expect(backoffDelay(0, options, 1)).toBe(500);
    expect(backoffDelay(0, options, 0)).toBe(250);
    expect(backoffDelay(3, options, 1)).toBe(4000);
    expect(backoffDelay(10, options, 1)).toBe(10_000);
    expect(backoffDelay(10, options, 0)).toBe(5000);
  });
});

describe('the rate limit rule', () => {
  it('allows max takes in any window, counts no refused take, and says when the next one is allowed', () => {
    const limiter = new MemoryRateLimiter();
    const rate = { bucket: 'b', windowMs: 1000, max: 2 };
    expect(limiter.take(rate, 0)).toBeUndefined();
    expect(limiter.take(rate, 400)).toBeUndefined();
    const refused = limiter.take(rate, 500);
    expect(refused).toEqual({ limited: { count: 2, oldestAt: 0 } });
    expect(retryAfterMs(rate, refused!.limited, 500)).toBe(500);
    // The refused take at 500 was not counted: at 1000 the mark at 0 has left the window, so one more fits.
    expect(limiter.take(rate, 1000)).toBeUndefined();
    expect(limiter.take(rate, 1001)).toEqual({ limited: { count: 2, oldestAt: 400 } });
    // Buckets are independent.
    expect(limiter.take({ ...rate, bucket: 'other' }, 1001)).toBeUndefined();
    expect(limitReached(rate, 1, 0)).toBeUndefined();
    expect(limitReached(rate, 2, 7)).toEqual({ limited: { count: 2, oldestAt: 7 } });
  });

  it('decides as the rule over every mark would, over a long run of takes (the marks are trimmed from the front)', () => {
    // The rule applied to all marks ever taken: what the limiter must answer, however it keeps its marks.
    const all: number[] = [];
    const reference = (rate: { windowMs: number; max: number }, now: number) => {
      const recent = all.filter((at) => at > now - rate.windowMs);
      const reached = limitReached({ bucket: 'b', ...rate }, recent.length, recent[0] ?? now);
      if (!reached) all.push(now);
      return reached;
    };
    const limiter = new MemoryRateLimiter();
    const rate = { bucket: 'b', windowMs: 1000, max: 50 };
    let now = 0;
    let refused = 0;
    for (let i = 0; i < 20_000; i += 1) {
      // Bursts and lulls, a clock that sometimes stands still: the window fills, empties and refuses.
      now += i % 500 < 400 ? (i % 3 === 0 ? 0 : 7) : 60;
      const expected = reference(rate, now);
      expect(limiter.take(rate, now)).toEqual(expected);
      if (expected) refused += 1;
    }
    expect(refused).toBeGreaterThan(1000);
  });

  it('lets go of the buckets of callers that came once and left', () => {
    const limiter = new MemoryRateLimiter();
    const rate = { windowMs: 1000, max: 5 };
    for (let i = 0; i < 1000; i += 1) limiter.take({ ...rate, bucket: `address-${i}` }, i);
    expect(limiter.buckets).toBe(1000);
    // Later, one caller keeps coming: the others' marks have left the window, and a sweep drops their buckets.
    for (let i = 0; i < 1024; i += 1) limiter.take({ ...rate, bucket: 'steady' }, 10_000 + i * 300);
    expect(limiter.buckets).toBe(1);
  });
});
