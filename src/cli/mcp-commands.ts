/**
 * `switchboard mcp list|tools|call` (docs/tools.md): the MCP servers the config declares, which agents attach
 * each, their tools, and one call, made from here with the same client the gateway uses, so a server can be
 * tried before any agent depends on it. `switchboard mcp serve` (docs/mcp-server.md): this gateway as an MCP server
 * over stdio, for Claude Code, Codex or Cursor, bridged to the running gateway's `/mcp`.
 */
import { SwitchboardError } from '../core/errors.js';
import { loadConfigFile } from '../config/load.js';
import { client, configPath, print, program } from './shared.js';
import { cliCommand } from './client.js';

async function service() {
  const { McpService } = await import('../mcp/mcp-tools.js');
  const { config } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
  return { config, mcp: new McpService(config) };
}

const mcp = program
  .command('mcp')
  .description('MCP: the tool servers configured (list, tools, call), and this gateway as an MCP server (serve)');

mcp
  .command('list')
  .description('the configured MCP servers and the agents that attach each')
  .action(async () => {
    const { config } = await service();
    const servers = Object.entries(config.mcp.servers).map(([name, server]) => ({
      name,
      transport: server.url ? 'http' : 'stdio',
      target: server.url ?? [server.command, ...server.args].join(' '),
      agents: config.agents.list.filter((agent) => agent.mcp?.includes(name)).map((agent) => agent.id),
    }));
    print(servers, () =>
      servers.length
        ? servers
            .map((server) => `${server.name}  ${server.transport}  ${server.target}  agents: ${server.agents.join(', ') || '(none)'}`)
            .join('\n')
        : 'no MCP servers configured (add mcp.servers; see docs/tools.md)',
    );
  });

mcp
  .command('tools <server>')
  .description("start the server and list its tools, as the gateway's agents are offered them")
  .action(async (server: string) => {
    const { mcp: client } = await service();
    try {
      const tools = await client.connection(server).listTools();
      const rows = tools.map((tool) => ({
        name: tool.name,
        offeredAs: `mcp__${server}__${tool.name}`,
        description: tool.description ?? '',
      }));
      print(rows, () => rows.map((row) => `${row.offeredAs}  ${row.description.split('\n')[0].slice(0, 100)}`).join('\n') || '(no tools)');
    } finally {
      await client.stop();
    }
  });

mcp
  .command('call <server> <tool> [json]')
  .description('call one tool with JSON arguments and print its answer')
  .action(async (server: string, tool: string, json = '{}') => {
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(json);
    } catch (error) {
      throw new SwitchboardError('INVALID_REQUEST', `the arguments are not JSON: ${(error as Error).message}; e.g. '{"text": "hi"}'`);
    }
    if (!args || typeof args !== 'object' || Array.isArray(args))
      throw new SwitchboardError('INVALID_REQUEST', `the arguments must be a JSON object, e.g. '{"text": "hi"}'`);
    const { mcp: client, config } = await service();
    try {
      const result = await client.connection(server).call(tool, args, new AbortController().signal, config.mcp.callTimeoutSeconds * 1000);
      const text = (result.content ?? []).map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
      print(result, () => (result.isError ? `error: ${text}` : text));
      if (result.isError) process.exitCode = 1;
    } finally {
      await client.stop();
    }
  });

mcp
  .command('serve')
  .description("serve this gateway's agents, sub-agents and board as an MCP server over stdio (for Claude Code, Codex, Cursor)")
  .action(async () => {
    const control = client();
    const { target } = control;
    // At once, before the client's first message: a gateway that is not running (or a wrong token) is said plainly.
    await control.request('GET', '/v1/status');
    const probe = await fetch(`${target.url}/mcp`, { headers: { authorization: `Bearer ${target.token}` } }).catch(() => undefined);
    if (probe?.status === 404) {
      const body = (await probe.json().catch(() => ({}))) as { error?: { message?: string } };
      throw new SwitchboardError('NOT_FOUND', body.error?.message ?? `the gateway at ${target.url} serves no /mcp`);
    }
    await probe?.body?.cancel();
    const { bridgeStdio } = await import('../mcp-server/stdio-bridge.js');
    const start = target.configPath ? ` (start it with "${cliCommand('gateway', target.configPath)}")` : '';
    await bridgeStdio({ url: `${target.url}/mcp`, token: target.token, unreachable: `cannot reach the gateway at ${target.url}${start}` });
  });
