/** The board's pure rules: which moves by hand are allowed from each state, where a task starts, when it gives up, cycles. */
import { describe, expect, it } from 'vitest';
import { afterFailure, BOARD_STATES, cyclePath, initialState, refuseMove, type BoardState } from '../../src/core/board.js';

describe('board rules', () => {
  it('moves by hand: exactly these are allowed', () => {
    const allowed = Object.fromEntries(BOARD_STATES.map((from) => [from, BOARD_STATES.filter((to) => refuseMove(from, to) === null)]));
    expect(allowed).toEqual({
      triage: ['todo', 'ready', 'cancelled'],
      todo: ['triage', 'ready', 'blocked', 'cancelled'],
      ready: ['triage', 'todo', 'blocked', 'cancelled'],
      running: ['cancelled'],
      review: ['ready', 'done', 'cancelled'],
      done: ['archived'],
      blocked: ['triage', 'todo', 'ready', 'cancelled'],
      cancelled: ['archived'],
      archived: [],
    } satisfies Record<BoardState, BoardState[]>);
  });

  it('a refusal says what is possible instead', () => {
    expect(refuseMove('todo', 'todo')).toBe('the task is already todo');
    expect(refuseMove('done', 'ready')).toBe('a done task can be moved to archived, not to ready');
    expect(refuseMove('archived', 'ready')).toBe('an archived task is final and cannot be moved');
    expect(refuseMove('running', 'done')).toBe(
      'a running task moves only through its claim (complete, block, release) or a cancel; it cannot be moved to done by hand',
    );
  });

  it('a new task starts in triage when asked, else todo while a dependency is open, else ready', () => {
    expect(initialState(true, 0)).toBe('triage');
    expect(initialState(true, 3)).toBe('triage');
    expect(initialState(false, 1)).toBe('todo');
    expect(initialState(false, 0)).toBe('ready');
  });

  it('after a failed attempt: ready while the budget lasts, blocked once it is spent', () => {
    expect(afterFailure(1, 2)).toBe('ready');
    expect(afterFailure(2, 2)).toBe('blocked');
    expect(afterFailure(3, 2)).toBe('blocked');
  });

  it('cycles: the path a new edge would close, or null', () => {
    const graph: Record<string, string[]> = { b: ['a'], c: ['b'], d: ['c', 'x'], x: [] };
    const of = (id: string) => graph[id] ?? [];
    expect(cyclePath('a', 'd', of)).toEqual(['a', 'd', 'c', 'b', 'a']);
    expect(cyclePath('a', 'a', of)).toEqual(['a', 'a']);
    expect(cyclePath('x', 'a', of)).toBeNull();
    expect(cyclePath('e', 'd', of)).toBeNull();
  });
});
