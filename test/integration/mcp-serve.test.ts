/**
 * `switchboard mcp serve` as an MCP client runs it (Claude Code, Codex and Cursor start a stdio server the same way):
 * a real gateway process, and the CLI's stdio bridge to its `/mcp`, driven by the MCP SDK's v2 client over stdio.
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliWith, ROOT, startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  mcpServer: { caller: "claude-code" },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`);

let gw: GatewayProcess | undefined;
beforeAll(async () => {
  gw = await startGatewayProcess(configPath);
});
afterAll(async () => {
  if (gw) await stopGatewayProcess(gw);
});

async function stdioClient(mode: 'auto' | 'legacy'): Promise<Client> {
  const client = new Client({ name: 'stdio-test', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [BIN, '--config', configPath, 'mcp', 'serve'], cwd: ROOT, stderr: 'pipe' }),
  );
  return client;
}

describe('switchboard mcp serve (stdio) against a real gateway process', () => {
  it.each(['auto', 'legacy'] as const)('a %s-negotiating client lists the tools and gets an answer with progress', async (mode) => {
    const client = await stdioClient(mode);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(mode === 'auto' ? '2026-07-28' : '2025-11-25');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('send_message');
      const progress: unknown[] = [];
      const result = await client.callTool(
        { name: 'send_message', arguments: { agent: 'echo', message: `over stdio (${mode})` } },
        { onprogress: (update) => progress.push(update) },
      );
      expect(result.structuredContent).toMatchObject({
        status: 'ok',
        reply: `echo: over stdio (${mode})`,
        sessionKey: 'agent:echo:mcp:direct:claude-code',
      });
      expect(progress[0]).toEqual({ progress: 1, message: 'agent:echo:mcp:direct:claude-code: run started' });
    } finally {
      await client.close();
    }
  });

  it('fails at once, saying so and how to start it, when the gateway is not running', async () => {
    await stopGatewayProcess(gw!);
    const url = gw!.url;
    gw = undefined;
    const served = await cliWith(configPath)('mcp', 'serve');
    expect(served.code).toBe(1);
    expect(served.stdout).toBe('');
    expect(served.stderr.trim()).toBe(
      `switchboard: cannot reach the gateway at ${url} (start it with "switchboard --config ${configPath} gateway")`,
    );
  });
});
