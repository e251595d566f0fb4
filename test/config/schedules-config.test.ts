/** `schedules` in the config (docs/schedules.md): defaults, and each problem as one exact line with its path. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configProblems } from '../helpers/config-problems.js';
import { planReload } from '../../src/config/reload.js';
import { intervalMs } from '../../src/config/schema-schedules.js';

const configWith = (schedules: string) =>
  `{ agents: { list: [{ id: "ops", model: "scripted/ops" }, { id: "dev", model: "scripted/ops" }] }, models: { providers: { scripted: { type: "scripted", models: { ops: { rules: [{ reply: "x" }] } } } } }, schedules: [${schedules}] }`;

const problemsOf = (schedules: string) => configProblems(configWith(schedules));

describe('schedules config', () => {
  it('fills the defaults: missed skip, maxCatchUp 10, enabled', () => {
    const { config } = parseConfigText(
      configWith(
        '{ id: "daily", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", agent: "ops", message: "standup" }, { id: "q", every: 900000, session: "agent:dev:cli:direct:alice", message: "ping" }',
      ),
      '/etc/sb.json5',
      {},
    );
    expect(config.schedules).toEqual([
      {
        id: 'daily',
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Berlin',
        agent: 'ops',
        message: 'standup',
        missed: 'skip',
        maxCatchUp: 10,
        enabled: true,
      },
      { id: 'q', every: 900000, session: 'agent:dev:cli:direct:alice', message: 'ping', missed: 'skip', maxCatchUp: 10, enabled: true },
    ]);
    expect(parseConfigText(configWith(''), '/etc/sb.json5', {}).config.schedules).toEqual([]);
  });

  it('reads intervals as written in the config: units, combined, or milliseconds of at least a second', () => {
    expect([intervalMs('30s'), intervalMs('15m'), intervalMs('1h30m'), intervalMs('1d'), intervalMs(90_000)]).toEqual([
      30_000, 900_000, 5_400_000, 86_400_000, 90_000,
    ]);
    expect([intervalMs('500ms'), intervalMs('15 minutes'), intervalMs('1h 30x'), intervalMs(999), intervalMs(1.5e3 + 0.5)]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('rejects a cron expression croner refuses, with its reason and an example', () => {
    expect(problemsOf('{ id: "a", cron: "61 * * * *", agent: "ops", message: "m" }')).toEqual([
      'schedules[0].cron: croner refuses "61 * * * *": CronPattern: Invalid value for minute: 61 (e.g. "0 9 * * 1-5" is 09:00 on weekdays, "*/15 * * * *" every 15 minutes)',
    ]);
  });

  it('rejects an unknown timezone, and a timezone on an interval', () => {
    expect(problemsOf('{ id: "a", cron: "0 9 * * *", timezone: "Mars/Olympus", agent: "ops", message: "m" }')).toEqual([
      'schedules[0].timezone: unknown timezone "Mars/Olympus" (an IANA name such as "Europe/Berlin" or "America/New_York"; default UTC)',
    ]);
    expect(problemsOf('{ id: "a", every: "1h", timezone: "UTC", agent: "ops", message: "m" }')).toEqual([
      'schedules[0].timezone: a timezone is for cron; an interval (every) is the same everywhere',
    ]);
  });

  it('rejects both cron and every, or neither; both agent and session, or neither', () => {
    const neither = 'schedules[0]: give either cron (e.g. "0 9 * * 1-5") or every (e.g. "15m"), not both or neither';
    expect(problemsOf('{ id: "a", cron: "0 9 * * *", every: "1h", agent: "ops", message: "m" }')).toEqual([neither]);
    expect(problemsOf('{ id: "a", agent: "ops", message: "m" }')).toEqual([neither]);
    const target = 'schedules[0]: give either agent (its main session) or session (a session key), not both or neither';
    expect(problemsOf('{ id: "a", every: "1h", agent: "ops", session: "agent:ops:main", message: "m" }')).toEqual([target]);
    expect(problemsOf('{ id: "a", every: "1h", message: "m" }')).toEqual([target]);
  });

  it('rejects an unknown agent, a session of one, and what is not a session key', () => {
    expect(problemsOf('{ id: "a", every: "1h", agent: "nope", message: "m" }')).toEqual([
      'schedules[0].agent: unknown agent "nope" (agents: ops, dev)',
    ]);
    expect(problemsOf('{ id: "a", every: "1h", session: "agent:nope:main", message: "m" }')).toEqual([
      'schedules[0].session: "agent:nope:main" belongs to unknown agent "nope" (agents: ops, dev)',
    ]);
    expect(problemsOf('{ id: "a", every: "1h", session: "ops", message: "m" }')).toEqual([
      'schedules[0].session: "ops" is not a session key (e.g. "agent:ops:main", "agent:ops:cli:direct:alice")',
    ]);
  });

  it('rejects a session only its own flow creates (sub-agent, a2a, board), naming the kinds a schedule sends to', () => {
    const kinds = 'a schedule sends to a main, direct, group or acp-client session (e.g. "agent:ops:main", "agent:ops:cli:direct:alice")';
    expect(
      problemsOf(
        ['agent:ops:subagent:abc', 'agent:ops:a2a:peer:ctx', 'agent:ops:board:b1', 'agent:ops:acp:x']
          .map((session, index) => `{ id: "s${index}", every: "1h", session: "${session}", message: "m" }`)
          .join(', '),
      ),
    ).toEqual([
      `schedules[0].session: "agent:ops:subagent:abc" is a session of kind "subagent", which only its own flow creates; ${kinds}`,
      `schedules[1].session: "agent:ops:a2a:peer:ctx" is a session of kind "a2a", which only its own flow creates; ${kinds}`,
      `schedules[2].session: "agent:ops:board:b1" is a session of kind "board", which only its own flow creates; ${kinds}`,
      `schedules[3].session: "agent:ops:acp:x" is a session of kind "acp", which only its own flow creates; ${kinds}`,
    ]);
    const { config } = parseConfigText(
      configWith(
        ['agent:ops:main', 'agent:ops:cli:direct:alice', 'agent:ops:slack:group:c1', 'agent:ops:acp-client:ed']
          .map((session, index) => `{ id: "s${index}", every: "1h", session: "${session}", message: "m" }`)
          .join(', '),
      ),
      '/etc/sb.json5',
      {},
    );
    expect(config.schedules).toHaveLength(4);
  });

  it('rejects a duplicate id, a bad interval, an id with spaces, and an unknown key', () => {
    expect(
      problemsOf(
        '{ id: "a", every: "1h", agent: "ops", message: "m" }, { id: "a", every: "15 minutes", agent: "ops", message: "m" }, { id: "b c", every: 500, agent: "ops", mesage: "m" }',
      ),
    ).toEqual([
      'schedules[1].every: expected an interval such as "30s", "15m", "1h30m" or "1d", or a whole number of milliseconds of at least 1000, got "15 minutes"',
      'schedules[2].id: expected 1-64 characters [A-Za-z0-9._-], got "b c"',
      'schedules[2].every: expected an interval such as "30s", "15m", "1h30m" or "1d", or a whole number of milliseconds of at least 1000, got 500',
      'schedules[2].message: required, expected string',
      'schedules[2].mesage: unknown key (did you mean "message"?)',
    ]);
    expect(
      problemsOf('{ id: "a", every: "1h", agent: "ops", message: "m" }, { id: "a", every: "2h", agent: "ops", message: "m" }'),
    ).toEqual(['schedules[1].id: duplicate schedule id "a" (also schedules[0].id)']);
  });

  it('rejects a message longer than the intake takes', () => {
    const long = 'x'.repeat(32_001);
    expect(problemsOf(`{ id: "a", every: "1h", agent: "ops", message: "${long}" }`)).toEqual([
      'schedules[0].message: 32001 characters, over gateway.maxMessageChars (32000); shorten it or raise the limit',
    ]);
  });

  it('is reloaded in place: a reload applies schedules without a restart', () => {
    const before = parseConfigText(configWith(''), '/etc/sb.json5', {}).config;
    const after = parseConfigText(configWith('{ id: "a", every: "1h", agent: "ops", message: "m" }'), '/etc/sb.json5', {}).config;
    expect(planReload(before, after)).toEqual({ applied: ['schedules'], restartRequired: [] });
  });
});
