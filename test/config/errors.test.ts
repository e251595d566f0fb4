/** Config errors a new user meets: hints for every unknown key, every problem at once, and secrets never shown. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configSchema, secretSchemas } from '../../src/config/schema.js';

const scriptedProvider = `scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } }`;
const scripted = `models: { providers: { ${scriptedProvider} } }`;
const agents = `agents: { list: [{ id: "a", model: "scripted/echo" }] }`;

function errorOf(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfigText(text, '/etc/sb.json5', env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
}

type AnySchema = any;
const WRAPPERS = ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch'];

/** Every path of the schema that holds a secret: `*` for a record's key, `[]` for a list's item. */
function secretPaths(schema: AnySchema, path: string, found: Set<string>): Set<string> {
  let inner = schema;
  while (inner) {
    if (secretSchemas.has(inner)) found.add(path);
    inner = WRAPPERS.includes(inner.def?.type) ? inner.def.innerType : undefined;
  }
  let bare = schema;
  while (WRAPPERS.includes(bare?.def?.type)) bare = bare.def.innerType;
  const def = bare?.def;
  if (def?.type === 'object')
    for (const [key, value] of Object.entries(def.shape)) secretPaths(value, path ? `${path}.${key}` : key, found);
  if (def?.type === 'record') secretPaths(def.valueType, `${path}.*`, found);
  if (def?.type === 'array') secretPaths(def.element, `${path}[]`, found);
  if (def?.type === 'union') for (const option of def.options) secretPaths(option, path, found);
  return found;
}

const SECRET = 'Zq7Xw9Kp';
const NUMBER = 97531864;
/** A config whose value at each secret path is invalid, and the problem's path as it is printed. */
const invalidAt: Record<string, { config: string; at: string }> = {
  'a2a.server.peers[].token': {
    config: `a2a: { server: { enabled: true, peers: [{ id: "p", token: "${SECRET}" }] } }`,
    at: 'a2a.server.peers[0].token',
  },
  'a2a.server.peers[].apiKey': {
    config: `a2a: { server: { enabled: true, peers: [{ id: "p", apiKey: "${SECRET}" }] } }`,
    at: 'a2a.server.peers[0].apiKey',
  },
  'a2a.remoteAgents[].token': {
    config: `a2a: { remoteAgents: [{ id: "r", url: "http://x.example", token: ${NUMBER} }] }`,
    at: 'a2a.remoteAgents[0].token',
  },
  'a2a.remoteAgents[].apiKey': {
    config: `a2a: { remoteAgents: [{ id: "r", url: "http://x.example", apiKey: ${NUMBER} }] }`,
    at: 'a2a.remoteAgents[0].apiKey',
  },
  'a2a.remoteAgents[].headers.*': {
    config: `a2a: { remoteAgents: [{ id: "r", url: "http://x.example", headers: { authorization: ${NUMBER} } }] }`,
    at: 'a2a.remoteAgents[0].headers.authorization',
  },
  'store.url': {
    config: `store: { driver: "postgres", url: ${NUMBER} }`,
    at: 'store.url',
  },
  'models.providers.*.apiKey': {
    config: `models: { providers: { ${scriptedProvider}, o: { type: "openai", apiKey: ${NUMBER} } } }`,
    at: 'models.providers.o.apiKey',
  },
  'models.providers.*.headers.*': {
    config: `models: { providers: { ${scriptedProvider}, o: { type: "anthropic", headers: { "x-api-key": ${NUMBER} } } } }`,
    at: 'models.providers.o.headers.x-api-key',
  },
  'acp.agents.*.env.*': {
    config: `acp: { agents: { a: { command: "x", env: { TOKEN: ${NUMBER} } } } }`,
    at: 'acp.agents.a.env.TOKEN',
  },
  'runtimes.*.env.*': {
    config: `runtimes: { r: { command: "x", env: { TOKEN: ${NUMBER} } } }`,
    at: 'runtimes.r.env.TOKEN',
  },
  'mcp.servers.*.env.*': {
    config: `mcp: { servers: { s: { command: "x", env: { TOKEN: ${NUMBER} } } } }`,
    at: 'mcp.servers.s.env.TOKEN',
  },
  'mcp.servers.*.headers.*': {
    config: `mcp: { servers: { s: { url: "http://x.example", headers: { authorization: ${NUMBER} } } } }`,
    at: 'mcp.servers.s.headers.authorization',
  },
  'telemetry.traces.headers.*': {
    config: `telemetry: { traces: { endpoint: "http://x.example/v1/traces", headers: { authorization: ${NUMBER} } } }`,
    at: 'telemetry.traces.headers.authorization',
  },
  'channels.telegram.accounts.*.token': {
    config: `channels: { telegram: { accounts: { a: { token: ${NUMBER} } } } }`,
    at: 'channels.telegram.accounts.a.token',
  },
  'channels.telegram.accounts.*.webhookSecret': {
    config: `channels: { telegram: { accounts: { a: { token: "t", webhookSecret: ${NUMBER} } } } }`,
    at: 'channels.telegram.accounts.a.webhookSecret',
  },
  'channels.slack.accounts.*.botToken': {
    config: `channels: { slack: { accounts: { a: { botToken: ${NUMBER} } } } }`,
    at: 'channels.slack.accounts.a.botToken',
  },
  'channels.slack.accounts.*.appToken': {
    config: `channels: { slack: { accounts: { a: { botToken: "t", appToken: ${NUMBER} } } } }`,
    at: 'channels.slack.accounts.a.appToken',
  },
  'channels.slack.accounts.*.signingSecret': {
    config: `channels: { slack: { accounts: { a: { botToken: "t", signingSecret: ${NUMBER} } } } }`,
    at: 'channels.slack.accounts.a.signingSecret',
  },
  'channels.discord.accounts.*.token': {
    config: `channels: { discord: { accounts: { a: { token: ${NUMBER} } } } }`,
    at: 'channels.discord.accounts.a.token',
  },
  'channels.webhook.accounts.*.secret': {
    config: `channels: { webhook: { accounts: { a: { secret: ${NUMBER} } } } }`,
    at: 'channels.webhook.accounts.a.secret',
  },
};

describe('config errors', () => {
  it('an unknown MCP server, a server that is neither or both kinds, and a memory grant given on one side only, each naming its keys', () => {
    const message = errorOf(`{
      agents: { list: [
        { id: "a", model: "scripted/echo", mcp: ["gitub"], memory: { readFrom: [{ agent: "b" }] } },
        { id: "b", model: "scripted/echo", memory: { shareWith: ["c"] } },
        { id: "c", model: "scripted/echo" },
      ] },
      mcp: { servers: { github: { command: "npx", url: "http://x.example" } } },
      ${scripted},
    }`);
    expect(message).toContain(
      '\n  mcp.servers.github: give either command (a process on stdio) or url (Streamable HTTP), not both or neither\n',
    );
    const grants = errorOf(`{
      agents: { list: [
        { id: "a", model: "scripted/echo", mcp: ["gitub"], memory: { readFrom: [{ agent: "b" }] } },
        { id: "b", model: "scripted/echo", memory: { shareWith: ["c"] } },
        { id: "c", model: "scripted/echo" },
      ] },
      mcp: { servers: { github: { command: "npx" } } },
      ${scripted},
    }`);
    expect(grants).toBe(
      [
        'invalid config /etc/sb.json5:',
        '  agents.list[0].mcp: unknown MCP server "gitub" (configured under mcp.servers: github)',
        '  agents.list[0].memory.readFrom[0]: "a" reads the memory of "b", but agents.list[1].memory.shareWith does not list "a"; a grant needs both keys',
        '  agents.list[1].memory.shareWith[0]: "b" shares its memory with "c", but agents.list[2].memory.readFrom has no entry for "b"; a grant needs both keys',
      ].join('\n'),
    );
  });

  it('every unknown key gets a did-you-mean hint, in sections with defaults too', () => {
    const message = errorOf(
      `{ ${agents}, ${scripted}, tools: { agentToAgnet: { enabled: true }, sessions: { visiblity: "all" } }, a2a: { server: { requireAuht: false } } }`,
    );
    expect(message).toBe(
      [
        'invalid config /etc/sb.json5:',
        '  tools.sessions.visiblity: unknown key (did you mean "visibility"?)',
        '  tools.agentToAgnet: unknown key (did you mean "agentToAgent"?)',
        '  a2a.server.requireAuht: unknown key (did you mean "requireAuth"?)',
      ].join('\n'),
    );
  });

  it('every problem is reported at once: an unset variable, a bad value, an unknown key and a cross-check', () => {
    const message = errorOf(
      `{ agents: { list: [{ id: "a", model: "scripted/missing" }] }, ${scripted}, gateway: { port: "7402x" }, lanes: { maxWaitng: 3 }, a2a: { remoteAgents: [{ id: "r", url: "\${REMOTE_URL}" }] } }`,
    );
    expect(message).toBe(
      [
        'invalid config /etc/sb.json5:',
        '  a2a.remoteAgents[0].url: environment variable REMOTE_URL is not set (set it, or write ${REMOTE_URL:-default})',
        '  gateway.port: expected number, got "7402x"',
        '  lanes.maxWaitng: unknown key (did you mean "maxWaiting"?)',
        '  agents.list[0].model: scripted model "missing" is not defined under models.providers.scripted.models (defined: echo)',
      ].join('\n'),
    );
  });

  it('no config error shows a secret, whole or in part, for every field marked secret', () => {
    const paths = [...secretPaths(configSchema, '', new Set())].sort();
    expect(paths).toEqual(Object.keys(invalidAt).sort());
    for (const path of paths) {
      const { config, at } = invalidAt[path];
      const message = errorOf(`{ ${agents}, ${config.startsWith('models:') ? '' : `${scripted}, `}${config} }`);
      expect(message, path).toContain(`${at}: `);
      expect(message, path).toMatch(/a (secret of \d+ characters|number) \(not shown\)/);
      for (let start = 0; start + 4 <= SECRET.length; start += 1) expect(message, path).not.toContain(SECRET.slice(start, start + 4));
      expect(message, path).not.toContain(String(NUMBER).slice(0, 4));
    }
  });
});
