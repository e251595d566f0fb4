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
    expect(() => addAgent(path, { id: 'Bad Id', model: 'scripted/echo' })).toThrow(/agents\.list\[1\]\.id: expected a string of 1-64 characters \[a-z0-9_-\], got "Bad Id"/);
    expect(() => addAgent(path, { id: 'nomodel' })).toThrow(/agents\.list\[1\]\.model: required \(or set agents\.defaults\.model\)/);
    expect(readFileSync(path, 'utf8')).toBe(original);
  });

  it('config edit: works on a file with an empty agent list and no trailing commas', () => {
    const { configPath } = tempConfig('{ agents: { defaults: { model: "scripted/echo" }, list: [{ id: "a" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } } }');
    addAgent(configPath, { id: 'b' });
    bindAgent(configPath, 'b', { channel: 'cli' });
    const { config } = loadConfigFile(configPath, {});
    expect(config.agents.list.map((a) => a.id)).toEqual(['a', 'b']);
    expect(config.bindings).toHaveLength(1);
  });
});
