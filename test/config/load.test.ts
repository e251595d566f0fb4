import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { SwitchboardError } from '../../src/core/errors.js';

const scripted = `models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } }`;

function errorOf(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfigText(text, '/etc/sb.json5', env);
  } catch (error) {
    expect(SwitchboardError.isInstance(error)).toBe(true);
    expect((error as SwitchboardError).code).toBe('CONFIG_INVALID');
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
}

/** The problems a rejected config lists, one per line after the first. */
const problemsOf = (text: string) =>
  errorOf(text)
    .split('\n')
    .slice(1)
    .map((line) => line.trim());

describe('config loading', () => {
  it('config: fills every default for a minimal file', () => {
    const { config, dataDir } = parseConfigText(
      `{ agents: { list: [{ id: "a", model: "scripted/echo" }] }, ${scripted} }`,
      '/etc/sb/sb.json5',
      {},
    );
    expect(config.gateway).toEqual({
      host: '127.0.0.1',
      port: 7317,
      dataDir: '.switchboard',
      maxMessageChars: 32000,
      waitTimeoutSeconds: 120,
    });
    expect(config.messages.queue).toEqual({ mode: 'followup', debounceMs: 1000, byChannel: {} });
    expect(config.tools.sessions.visibility).toBe('tree');
    expect(config.session.agentToAgent.maxPingPongTurns).toBe(0);
    expect(config.recovery.retryInterrupted).toBe(1);
    expect(config.agents.defaults).toMatchObject({ maxSteps: 16, historyLimit: 200, timeoutSeconds: 600 });
    expect(dataDir).toBe('/etc/sb/.switchboard');
  });

  it('config: an empty agent id names the path, the value and what is expected', () => {
    const message = errorOf(`{ agents: { list: [{ id: "a", model: "scripted/echo" }, { id: "" }] }, ${scripted} }`);
    expect(message).toBe('invalid config /etc/sb.json5:\n  agents.list[1].id: expected a string of 1-64 characters [a-z0-9_-], got ""');
  });

  it('config: an unknown key is an error with a did-you-mean hint', () => {
    const message = errorOf(`{ agents: { list: [{ id: "a", modle: "scripted/echo" }] }, ${scripted} }`);
    expect(message).toContain('agents.list[0].modle: unknown key (did you mean "model"?)');
    expect(errorOf(`{ gatway: {}, agents: { list: [{ id: "a", model: "scripted/echo" }] }, ${scripted} }`)).toContain(
      'gatway: unknown key (did you mean "gateway"?)',
    );
  });

  it('config: malformed JSON5 says where', () => {
    expect(() => parseConfigText('{ agents: [ }', '/x.json5', {})).toThrow(/^\/x\.json5: not valid JSON5: invalid character '}' at 1:13$/);
  });

  it('config: ${ENV} substitution, fallbacks, escapes and a missing variable', () => {
    const text = `{ agents: { list: [{ id: "a", model: "oa/gpt-4o-mini", name: "$\${LITERAL}" }] },
      models: { providers: { oa: { type: "openai", apiKey: "\${OPENAI_API_KEY}", baseURL: "\${BASE:-http://127.0.0.1:9/v1}" } } } }`;
    const { config } = parseConfigText(text, '/x.json5', { OPENAI_API_KEY: 'sk-test' });
    expect(config.models.providers.oa).toEqual({ type: 'openai', apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1' });
    expect(config.agents.list[0].name).toBe('${LITERAL}');
    expect(errorOf(text)).toContain('models.providers.oa.apiKey: environment variable OPENAI_API_KEY is not set');
  });

  it('config: cross-checks duplicate ids, unknown providers, scripted models and bindings', () => {
    const problems =
      problemsOf(`{ agents: { list: [{ id: "a", model: "scripted/echo" }, { id: "a", model: "nope/x" }, { id: "b", model: "scripted/missing" }] },
      bindings: [{ agentId: "ghost", match: { channel: "cli" } }], ${scripted} }`);
    expect(problems).toEqual([
      'agents.list[1].id: duplicate agent id "a" (also agents.list[0].id)',
      'agents.list[1].model: unknown model provider "nope" in "nope/x" (configured under models.providers: scripted)',
      'agents.list[2].model: scripted model "missing" is not defined under models.providers.scripted.models (defined: echo)',
      'bindings[0].agentId: unknown agent "ghost" (agents: a, b)',
    ]);
  });

  it('config: cross-checks mailbox names and teams', () => {
    const problems = problemsOf(`{ mailbox: { enabled: true }, agents: { list: [
        { id: "a", model: "scripted/echo", mailbox: { name: "Same" } }, { id: "b", model: "scripted/echo", mailbox: { name: "Same" } },
        { id: "-c", model: "scripted/echo" }] },
      teams: [{ id: "t", lead: "ghost", members: ["a", "a", "t/x", "ghost"], skills: { zed: ["docs"] } }, { id: "t", lead: "a", members: ["a"] }],
      ${scripted} }`);
    expect(problems).toEqual([
      'agents.list[1].mailbox.name: "Same" is already the mailbox name of agent "a"',
      'agents.list[2].mailbox.name: the agent id "-c" is not a mailbox name (1-50 characters [A-Za-z0-9_-], not starting with "-"); set one',
      'teams[0].lead: unknown agent "ghost" (agents: a, b, -c)',
      'teams[0].members[1]: "a" is listed twice',
      'teams[0].members[2]: "t/x" is neither an agent (agents: a, b, -c) nor a mailbox name of an outside process',
      'teams[0].members[3]: "ghost" is the team\'s lead; a lead is not also a member',
      'teams[0].skills.zed: "zed" is not a member of the team',
      'teams[1].id: duplicate team id "t"',
      'teams[1].members[0]: "a" is the team\'s lead; a lead is not also a member',
    ]);
  });

  it('config: a team mirrored in Claude Code refuses agents named as Claude Code names its own, or not as a mailbox name', () => {
    const problems = problemsOf(`{ agents: { list: [{ id: "team-lead", model: "scripted/echo" }, { id: "-c", model: "scripted/echo" }] },
      teams: [{ id: "t", lead: "team-lead", members: ["-c", "Outsider"], claudeDir: "/tmp/claude" }], ${scripted} }`);
    expect(problems).toEqual([
      'teams[0].claudeDir: agent "team-lead" cannot be a Claude Code teammate: Claude Code keeps the names team-lead, user, system for itself; rename the agent or leave it out of the team',
      'teams[0].claudeDir: agent "-c" cannot be a Claude Code teammate: its id is not a mailbox name (1-50 characters [A-Za-z0-9_-], not starting with "-"); rename the agent or leave it out of the team',
    ]);
  });

  it('config: bad enum values and types', () => {
    const message = errorOf(
      `{ agents: { list: [{ id: "a", model: "scripted/echo" }] }, messages: { queue: { mode: "later" } }, gateway: { port: "80" }, ${scripted} }`,
    );
    expect(message).toContain('messages.queue.mode: expected one of "steer", "followup", "collect", "interrupt", "notify", got "later"');
    expect(message).toContain('gateway.port: expected number, got "80"');
    expect(message).not.toContain('received');
  });
});

describe('config defaults', () => {
  it("config: every section left out is filled from its keys' defaults", () => {
    const { config } = parseConfigText(`{ agents: { list: [{ id: "a", model: "scripted/echo" }] }, ${scripted} }`, '/x.json5', {});
    expect(config.store).toEqual({
      driver: 'sqlite',
      schema: 'public',
      maxConnections: 10,
      preparedStatements: true,
      analyze: 'auto',
      sqlite: { synchronous: 'FULL', mmapMb: 2047, thread: 'main' },
    });
    expect(config.tools).toEqual({
      agentToAgent: { enabled: false, allow: [], history: true, list: true },
      sessions: { visibility: 'tree' },
      defer: ['agents_list', 'sessions_list', 'sessions_history', 'session_status'],
    });
    expect(config.lanes).toEqual({
      main: { maxConcurrent: 4 },
      subagent: {},
      nested: { maxConcurrent: 8 },
      maxWaiting: 10_000,
      leaseTtlSeconds: 30,
      suspendWaitsAfterMs: 2000,
    });
    expect(config.agents.defaults.subagents).toEqual({
      maxSpawnDepth: 1,
      maxChildrenPerAgent: 5,
      maxConcurrent: 8,
      runTimeoutSeconds: 900,
      archiveAfterMinutes: 60,
      allowAgents: [],
      maxResultChars: 32_000,
      completionMode: 'steer',
      retryInterrupted: false,
      allowRuntimes: [],
      tools: {},
    });
    expect(config.acp).toEqual({ agents: {}, maxConcurrentSessions: 8, cancelGraceMs: 3000 });
    expect(config.runtimes).toEqual({});
    expect(config.recovery).toEqual({ retryInterrupted: 1 });
    expect(config.watchdog).toEqual({ intervalMs: 5000, stallMs: 30_000 });
    expect(config.outbox).toEqual({ maxAttempts: 10, baseDelayMs: 500, maxDelayMs: 300_000, concurrencyPerKind: 8, claimMs: 300_000 });
    expect(config.session).toEqual({ agentToAgent: { maxPingPongTurns: 0, maxHops: 8, maxSendsPerMinute: 30 } });
    expect(config.agents.defaults).toMatchObject({
      maxSteps: 16,
      historyLimit: 200,
      timeoutSeconds: 600,
      tools: {},
      subagents: { maxSpawnDepth: 1 },
    });
    // A section given in part keeps the defaults of the keys it leaves out.
    const partial = parseConfigText(
      `{ lanes: { main: { maxConcurrent: 2 } }, agents: { list: [{ id: "a", model: "scripted/echo" }] }, ${scripted} }`,
      '/x.json5',
      {},
    );
    expect(partial.config.lanes).toEqual({
      main: { maxConcurrent: 2 },
      subagent: {},
      nested: { maxConcurrent: 8 },
      maxWaiting: 10_000,
      leaseTtlSeconds: 30,
      suspendWaitsAfterMs: 2000,
    });
  });
});
