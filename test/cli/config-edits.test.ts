import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addAgent, bindAgent, deleteAgent, setIdentity, unbindAgent } from '../../src/cli/config-edits.js';
import { loadConfigFile } from '../../src/config/load.js';
import { tempConfig } from '../helpers/process.js';

const original = `// Team config — keep this comment
{
  agents: {
    list: [
      // the front desk
      { id: "support", model: "scripted/echo" },
    ],
  },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } }, // trailing note
}
`;

function fresh(): string {
  const { configPath } = tempConfig(original);
  return configPath;
}

describe('agents add|delete|bind|unbind|set-identity edit the config file', () => {
  it('config edit: add, bind, set-identity, unbind and delete keep comments and stay valid', () => {
    const path = fresh();
    addAgent(path, { id: 'expert', model: 'scripted/echo', name: 'Expert' });
    bindAgent(path, 'expert', { channel: 'slack', peer: 'U123' });
    setIdentity(path, 'expert', { name: 'Ada', emoji: '🛠️' });
    setIdentity(path, 'expert', { theme: 'precise' });
    let text = readFileSync(path, 'utf8');
    expect(text).toContain('// Team config — keep this comment');
    expect(text).toContain('// the front desk');
    expect(text).toContain('// trailing note');
    let { config } = loadConfigFile(path, {});
    expect(config.agents.list.map((a) => a.id)).toEqual(['support', 'expert']);
    expect(config.agents.list[1].identity).toEqual({ name: 'Ada', emoji: '🛠️', theme: 'precise' });
    expect(config.bindings).toEqual([{ agentId: 'expert', match: { channel: 'slack', peer: 'U123' } }]);

    expect(unbindAgent(path, 'expert', 'email')).toBe(0);
    expect(unbindAgent(path, 'expert')).toBe(1);
    bindAgent(path, 'expert', { channel: 'cli' });
    deleteAgent(path, 'expert');
    text = readFileSync(path, 'utf8');
    ({ config } = loadConfigFile(path, {}));
    expect(config.agents.list.map((a) => a.id)).toEqual(['support']);
    expect(config.bindings).toEqual([]);
    expect(text).toContain('// the front desk');
  });

  it('config edit: refuses duplicates, unknown agents and edits that would make the config invalid, leaving the file alone', () => {
    const path = fresh();
    expect(() => addAgent(path, { id: 'support' })).toThrow(`agent "support" already exists in ${path}`);
    expect(() => deleteAgent(path, 'ghost')).toThrow('unknown agent "ghost" (configured agents: support)');
    expect(() => addAgent(path, { id: 'Bad Id', model: 'scripted/echo' })).toThrow(
      /agents\.list\[1\]\.id: expected a string of 1-64 characters \[a-z0-9_-\], got "Bad Id"/,
    );
    expect(() => addAgent(path, { id: 'nomodel' })).toThrow(/agents\.list\[1\]\.model: required \(or set agents\.defaults\.model\)/);
    expect(readFileSync(path, 'utf8')).toBe(original);
  });

  it('config edit: works on a file with an empty agent list and no trailing commas', () => {
    const { configPath } = tempConfig(
      '{ agents: { defaults: { model: "scripted/echo" }, list: [{ id: "a" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }',
    );
    addAgent(configPath, { id: 'b' });
    bindAgent(configPath, 'b', { channel: 'cli' });
    const { config } = loadConfigFile(configPath, {});
    expect(config.agents.list.map((a) => a.id)).toEqual(['a', 'b']);
    expect(config.bindings).toHaveLength(1);
  });

  it('config edit: validates as the gateway does, with ${NAME:-default} defaults applied and variables unset here allowed', () => {
    const { configPath } = tempConfig(`{
      agents: { list: [{ id: "support", model: "scripted/echo" }] },
      a2a: { server: { enabled: true, peers: [{ id: "partner", token: "\${PARTNER_TOKEN:-partner-token-0123456789}", agents: ["*"] }] } },
      models: { providers: {
        scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } },
        remote: { type: "openai-compatible", baseURL: "\${REMOTE_URL_UNSET_HERE}", apiKey: "\${REMOTE_KEY_UNSET_HERE}" },
      } },
    }`);
    bindAgent(configPath, 'support', { channel: 'slack' });
    setIdentity(configPath, 'support', { name: 'Desk' });
    addAgent(configPath, { id: 'expert', model: 'scripted/echo' });
    // The references stay in the file as they were written.
    const text = readFileSync(configPath, 'utf8');
    expect(text).toContain('${PARTNER_TOKEN:-partner-token-0123456789}');
    expect(text).toContain('${REMOTE_KEY_UNSET_HERE}');
    // A default that the gateway would refuse is still refused: here, a peer token under 16 characters.
    const short =
      tempConfig(`{ agents: { list: [{ id: "a", model: "scripted/echo" }] }, a2a: { server: { peers: [{ id: "p", token: "\${PT:-short}" }] } },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }`).configPath;
    expect(() => addAgent(short, { id: 'b' })).toThrow(/a2a\.server\.peers\[0\]\.token: expected at least 16 characters/);
    // The gateway itself still refuses the unset variable.
    expect(() => loadConfigFile(configPath, {})).toThrow(
      'models.providers.remote.baseURL: environment variable REMOTE_URL_UNSET_HERE is not set',
    );
  });
});
