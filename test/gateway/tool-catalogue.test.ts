/** The deferred tools' catalogue: names listed compactly, loads that take effect, and what a session's history loaded. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listNames, loadedInHistory, loadedInSteps, ToolCatalogue } from '../../src/gateway/tooling/tool-catalogue.js';
import type { GatewayTool, ToolContext } from '../../src/ports/tools.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

const tool = (name: string) => ({ name, description: `does ${name}` }) as GatewayTool;

describe('tool catalogue', () => {
  it('lists names with each MCP server prefix once', () => {
    expect(listNames(['read_file', 'mcp__files__read_text_file', 'mcp__files__list_directory', 'exec', 'mcp__my_db__query'])).toBe(
      'read_file exec mcp__files__{read_text_file,list_directory} mcp__my_db__query',
    );
  });

  it('tools_load loads what is deferred, refuses other names exactly, and keeps the rest pending', async () => {
    const catalogue = new ToolCatalogue(new Map(['read_file', 'write_file'].map((name) => [name, tool(name)])), []);
    expect(catalogue.pending(['time_now', 'read_file', 'write_file'])).toEqual(['read_file', 'write_file']);
    const answer = await catalogue.tool().execute({ names: ['read_file', 'shell'] }, {} as ToolContext);
    expect(answer).toEqual({
      loaded: [{ name: 'read_file', description: 'does read_file' }],
      note: 'call them from your next step',
      unknown: ['shell'],
      error: 'no such tool to load: shell',
    });
    expect(catalogue.pending(['read_file', 'write_file'])).toEqual(['write_file']);
  });

  it('tools_load refuses, with the reason, a tool the agent is not offered: exec that is off for it, a tool its policy denies', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-catalogue-'));
    const gateway = await startTestGateway(`{
      agents: { list: [{ id: "main", model: "scripted/m", workspace: ${JSON.stringify(workspace)}, tools: { deny: ["write_file"] } }] },
      models: { providers: { scripted: { type: "scripted", models: { m: { rules: [
        { steps: [{ toolCalls: [{ tool: "tools_load", args: { names: ["exec", "write_file", "read_file", "shell"] } }] },
                  { text: "{{tool.tools_load}}" }] },
      ] } } } } },
    }`);
    try {
      const sent = await gateway.send({ target: 'agent:main:main', message: 'load' });
      const result = await gateway.waitForInput(sent.input.id, 30_000);
      const answer = JSON.parse(('reply' in result && result.reply) || '{}') as Record<string, unknown>;
      expect(answer.loaded).toEqual([{ name: 'read_file', description: expect.any(String) }]);
      expect(answer.refused).toEqual([
        { name: 'exec', reason: expect.stringContaining('exec is off for agent "main"; set agents.list[main].exec.enabled: true') },
        { name: 'write_file', reason: expect.stringContaining('the tool policy leaves it out') },
      ]);
      expect(answer.unknown).toEqual(['shell']);
      expect(answer.error).toMatch(
        /^not loaded: exec \(exec is off for agent "main";.*\); write_file \(agent "main" may not use write_file.*\); no such tool to load: shell$/,
      );
    } finally {
      await stopTestGateway(gateway);
    }
  }, 30_000);

  it('tools_load says a tool is sent whole already, instead of calling it no tool', async () => {
    const catalogue = new ToolCatalogue(new Map([['read_file', tool('read_file')]]), [], [], new Set(['sessions_send']));
    catalogue.pending(['read_file']);
    expect(await catalogue.tool().execute({ names: ['sessions_send', 'read_file'] }, {} as ToolContext)).toEqual({
      loaded: [{ name: 'read_file', description: 'does read_file' }],
      note: 'call them from your next step',
      sentWhole: ['sessions_send'],
    });
  });

  it("a resumed run's replayed steps keep loaded what they loaded or called", () => {
    const loaded = loadedInSteps([
      {
        toolNames: ['tools_load'],
        results: [
          { toolCallId: '1', toolName: 'tools_load', output: { loaded: [{ name: 'read_file', description: 'reads' }], note: 'x' } },
        ],
      },
      { toolNames: ['exec'], results: null },
      // A load that failed loaded nothing.
      { toolNames: ['tools_load'], results: [{ toolCallId: '3', toolName: 'tools_load', error: 'boom' }] },
    ]);
    expect([...loaded].sort()).toEqual(['exec', 'read_file', 'tools_load']);
  });

  it("a session's history keeps loaded what it loaded or called", () => {
    const loaded = loadedInHistory([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: '1', toolName: 'tools_load', input: { names: ['exec'] } }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: '2', toolName: 'read_file', input: { path: 'a' } }] },
    ]);
    expect([...loaded].sort()).toEqual(['exec', 'read_file', 'tools_load']);
  });
});
