/** The `mcpServer` section (docs/configuration.md): its defaults, and its errors, one line each with the path. */
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/client';
import { DEFAULT_REQUEST_TIMEOUT_MSEC as LEGACY_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
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
  it('defaults: on, caller "mcp", every agent, 55 s waits capped at 1800, 200 transcript entries', () => {
    const { config } = parseConfigText(`{ ${base} }`, '/etc/sb.json5', {});
    expect(config.mcpServer).toEqual({
      enabled: true,
      caller: 'mcp',
      agents: ['*'],
      defaultWaitSeconds: 55,
      maxWaitSeconds: 1800,
      transcriptLimit: 200,
    });
  });

  it("the default wait ends before the MCP SDK clients' default request timeout, so a client at its defaults gets the answer", () => {
    const { config } = parseConfigText(`{ ${base} }`, '/etc/sb.json5', {});
    // Both SDKs' clients (v2 and 1.x) give up on a request after this long unless told otherwise (docs/mcp-server.md).
    expect([DEFAULT_REQUEST_TIMEOUT_MSEC, LEGACY_REQUEST_TIMEOUT_MSEC]).toEqual([60_000, 60_000]);
    expect(config.mcpServer.defaultWaitSeconds * 1000).toBeLessThan(Math.min(DEFAULT_REQUEST_TIMEOUT_MSEC, LEGACY_REQUEST_TIMEOUT_MSEC));
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
