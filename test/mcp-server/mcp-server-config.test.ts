/** The `mcpServer` section (docs/configuration.md): its defaults, and its errors, one line each with the path. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';

const base = `agents: { list: [{ id: "a", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok" }] } } } } }`;

function errorOf(text: string): string {
  try {
    parseConfigText(text, '/etc/sb.json5', {});
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
}

describe('mcpServer config', () => {
  it('defaults: on, caller "mcp", every agent, 120 s waits capped at 1800, 200 transcript entries', () => {
    const { config } = parseConfigText(`{ ${base} }`, '/etc/sb.json5', {});
    expect(config.mcpServer).toEqual({
      enabled: true,
      caller: 'mcp',
      agents: ['*'],
      defaultWaitSeconds: 120,
      maxWaitSeconds: 1800,
      transcriptLimit: 200,
    });
  });

  it('a bad caller, an unknown key and a default wait above the cap are each named with their path', () => {
    expect(errorOf(`{ ${base}, mcpServer: { caller: "has space", maxWaitSecond: 5 } }`)).toBe(
      [
        'invalid config /etc/sb.json5:',
        '  mcpServer.caller: expected 1-64 characters [A-Za-z0-9_.-], got "has space"',
        '  mcpServer.maxWaitSecond: unknown key (did you mean "maxWaitSeconds"?)',
      ].join('\n'),
    );
    expect(errorOf(`{ ${base}, mcpServer: { defaultWaitSeconds: 600, maxWaitSeconds: 60 } }`)).toBe(
      ['invalid config /etc/sb.json5:', '  mcpServer: defaultWaitSeconds must not be above maxWaitSeconds'].join('\n'),
    );
  });
});

describe('mcpServer on reload', () => {
  it('the section is applied in place, but turning /mcp on or off waits for a restart', async () => {
    const { planReload } = await import('../../src/config/reload.js');
    const running = parseConfigText(`{ ${base} }`, '/etc/sb.json5', {}).config;
    const next = parseConfigText(`{ ${base}, mcpServer: { enabled: false, caller: "other" } }`, '/etc/sb.json5', {}).config;
    expect(planReload(running, next)).toEqual({ applied: ['mcpServer'], restartRequired: ['mcpServer.enabled'] });
  });
});
