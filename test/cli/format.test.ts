/** How `sessions tail` prints sub-agent events and what external runtimes' children did. */
import { describe, expect, it } from 'vitest';
import { describeEvent } from '../../src/cli/format.js';
import type { EventRecord } from '../../src/ports/index.js';

const event = (payload: Record<string, unknown>): EventRecord => ({
  seq: 7,
  type: 'subagent.updated',
  sessionKey: 'agent:m:main',
  runId: null,
  payload,
  createdAt: Date.UTC(2026, 10, 30, 10, 0, 0),
});

describe('describeEvent: subagent.updated', () => {
  it('a state change, with waiting and the diagnostic', () => {
    expect(describeEvent(event({ childSessionKey: 'agent:m:subagent:a', state: 'running', waiting: true }))).toBe(
      '10:00:00.000 #7 sub-agent agent:m:subagent:a: running, waiting for its sub-agents',
    );
    expect(
      describeEvent(event({ childSessionKey: 'agent:m:subagent:a', state: 'timed_out', waiting: false, diagnostic: 'too slow' })),
    ).toBe('10:00:00.000 #7 sub-agent agent:m:subagent:a: timed_out - too slow');
  });
  it('a completion delivered or skipped', () => {
    expect(describeEvent(event({ childSessionKey: 'agent:m:subagent:a', completion: 'delivered', mode: 'steer' }))).toBe(
      '10:00:00.000 #7 sub-agent agent:m:subagent:a: completion delivered (steer)',
    );
    expect(describeEvent(event({ subagentId: 'a1', completion: 'skipped', why: 'parent sub-agent cancelled' }))).toBe(
      '10:00:00.000 #7 sub-agent a1: completion skipped: parent sub-agent cancelled',
    );
  });
});

describe('describeEvent: runtime.update', () => {
  it('one line per thing the child did', () => {
    const updates = [
      { kind: 'message', text: 'Working on it' },
      { kind: 'tool_call', id: 'c1', title: 'Write a.txt', status: 'pending', toolKind: 'edit' },
      {
        kind: 'permission',
        toolCallId: 'c1',
        title: 'Write a.txt',
        answered: 'denied',
        why: 'edit is denied (acp.agents.fake.permissions.edit)',
      },
      { kind: 'file', op: 'refused', path: '/etc/passwd', why: 'outside' },
      { kind: 'stop', stopReason: 'end_turn' },
    ];
    const record: EventRecord = { ...event({ updates }), type: 'runtime.update', runId: 'abcdef1234' };
    expect(describeEvent(record).split('\n')).toEqual([
      '10:00:00.000 #7 run abcdef12 message: Working on it',
      '10:00:00.000 #7 run abcdef12 tool Write a.txt pending',
      '10:00:00.000 #7 run abcdef12 permission for Write a.txt: denied (edit is denied (acp.agents.fake.permissions.edit))',
      '10:00:00.000 #7 run abcdef12 file refused /etc/passwd: outside',
      '10:00:00.000 #7 run abcdef12 stop: end_turn',
    ]);
  });
});

describe('describeEvent: board.updated', () => {
  it('a task that gave up says gave_up', () => {
    const record: EventRecord = {
      ...event({
        taskId: 'abcdef123456',
        event: 'attempt_failed',
        actor: 'board',
        state: 'blocked',
        blockKind: 'gave_up',
        error: 'timed out',
      }),
      type: 'board.updated',
    };
    expect(describeEvent(record)).toBe('10:00:00.000 #7 board abcdef12 attempt_failed by board: blocked gave_up (timed out)');
  });
});
