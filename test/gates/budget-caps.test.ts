/** Which caps a run draws on (docs/gates.md, "Caps"): each key, its config source, and what `*` and `anonymous` cover. */
import { describe, expect, it } from 'vitest';
import { costMicros, runCaps } from '../../src/gateway/gates/budget-meter.js';
import { parseConfigText } from '../../src/config/load.js';

const config = (budgets: string) =>
  parseConfigText(
    `{ budgets: ${budgets}, agents: { list: [{ id: "a", model: "scripted/m" }, { id: "b", model: "scripted/m" }] },
       models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`,
    '/etc/sb.json5',
    {},
  ).config;

const NOON = Date.UTC(2026, 11, 5, 12);

describe('the caps a run draws on', () => {
  it('keys each cap by what it counts, with the day for the daily ones, and names the key that sets it', () => {
    const caps = runCaps(
      config(`{ agents: { a: { tokens: 10 }, "*": { cost: 1.5 } }, session: { tokens: 20 }, subagentTree: { tokens: 30 },
                boardTask: { cost: 2 }, peers: { p1: { tokens: 40 }, "*": { tokens: 50 } } }`),
      {
        agentId: 'a',
        sessionKey: 'agent:a:subagent:x',
        rootSession: 'agent:a:main',
        provenance: [
          { kind: 'board', channel: 'board', peer: 'task-1' },
          { kind: 'a2a', channel: 'a2a', peer: 'p1' },
          { kind: 'a2a', channel: 'a2a', peer: 'p2' },
          { kind: 'a2a', channel: 'a2a', peer: 'anonymous' },
          { kind: 'user', channel: 'api' },
        ],
      },
      NOON,
    );
    expect(caps).toEqual([
      { key: 'agent:a:2026-12-05', source: 'budgets.agents.a', tokens: 10 },
      { key: 'session:agent:a:subagent:x', source: 'budgets.session', tokens: 20 },
      { key: 'tree:agent:a:main', source: 'budgets.subagentTree', tokens: 30 },
      { key: 'task:task-1', source: 'budgets.boardTask', costMicros: 2_000_000 },
      { key: 'peer:p1:2026-12-05', source: 'budgets.peers.p1', tokens: 40 },
      // `*` covers configured peers without their own cap, not callers without credentials.
      { key: 'peer:p2:2026-12-05', source: 'budgets.peers.*', tokens: 50 },
    ]);
    expect(
      runCaps(config(`{ agents: { "*": { cost: 1.5 } } }`), { agentId: 'b', sessionKey: 's', rootSession: 's', provenance: [] }, NOON),
    ).toEqual([{ key: 'agent:b:2026-12-05', source: 'budgets.agents.*', costMicros: 1_500_000 }]);
    expect(
      runCaps(
        config(`{ peers: { anonymous: { tokens: 5 } } }`),
        {
          agentId: 'b',
          sessionKey: 's',
          rootSession: 's',
          provenance: [{ kind: 'a2a', channel: 'a2a', peer: 'anonymous' }],
        },
        NOON,
      ),
    ).toEqual([{ key: 'peer:anonymous:2026-12-05', source: 'budgets.peers.anonymous', tokens: 5 }]);
    expect(runCaps(config('{}'), { agentId: 'a', sessionKey: 's', rootSession: 's', provenance: [] }, NOON)).toEqual([]);
  });

  it("draws a sub-agent or a wake run of an A2A or board task on that task's caps, from its session and its tree's top", () => {
    const budgets = config(`{ boardTask: { tokens: 7 }, peers: { p1: { tokens: 40 } } }`);
    const spawnedByPeer = runCaps(
      budgets,
      {
        agentId: 'a',
        sessionKey: 'agent:a:subagent:s1',
        rootSession: 'agent:a:a2a:p1:ctx-1',
        provenance: [{ kind: 'subagent_task', channel: 'subagent' }],
      },
      NOON,
    );
    expect(spawnedByPeer).toEqual([{ key: 'peer:p1:2026-12-05', source: 'budgets.peers.p1', tokens: 40 }]);
    const wakeOfTask = runCaps(
      budgets,
      {
        agentId: 'a',
        sessionKey: 'agent:a:board:task-9',
        rootSession: 'agent:a:board:task-9',
        provenance: [{ kind: 'subagent_completion', channel: 'subagent' }],
      },
      NOON,
    );
    expect(wakeOfTask).toEqual([{ key: 'task:task-9', source: 'budgets.boardTask', tokens: 7 }]);
  });

  it('refuses a cap with neither tokens nor cost, naming the key', () => {
    expect(() => config(`{ session: {} }`)).toThrow(/budgets\.session: give tokens, cost or both/);
  });

  it('prices tokens in millionths of a dollar, cached input at its own price', () => {
    expect(costMicros({ input: 2.5, output: 10, cachedInput: 1.25 }, { input: 1000, output: 100, cachedInput: 400 })).toBe(
      600 * 2.5 + 400 * 1.25 + 100 * 10,
    );
    expect(costMicros(undefined, { input: 1000, output: 100 })).toBe(0);
  });
});
