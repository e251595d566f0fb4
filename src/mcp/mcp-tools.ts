/**
 * MCP servers as agents' tools (docs/tools.md): each server named in `mcp.servers` is one connection shared by the
 * agents that attach it (`agents.list[].mcp`); its tools are offered to them as `mcp__<server>__<tool>`, under the
 * tool policy like any other, with the server's description cut to `mcp.maxDescriptionChars`. A server starts with
 * the first run that needs it. A tool that changes nothing (`readOnlyHint`) is called freely; any other goes
 * through the tool-call ledger: one not marked idempotent is recorded before the call, and a crashed run's retry does not
 * call it again.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { SwitchboardConfig } from '../config/schema.js';
import { errorMessage, SwitchboardError } from '../core/errors.js';
import type { GatewayTool } from '../ports/tools.js';
import { McpConnection, McpUnavailableError, type McpTool } from './connection.js';
import { z } from 'zod';

/** OpenAI and Anthropic take tool names of 1-64 characters [a-zA-Z0-9_-]. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
}

/** Any object: the server checks its own arguments. */
const ANY_ARGS = z.looseObject({});

export interface McpServiceOptions {
  /** The config file's folder, for stdio servers' relative `cwd`. */
  baseDir?: string;
  log?: (message: string) => void;
  version?: string;
}

export class McpService {
  private readonly connections = new Map<string, McpConnection>();
  /** Each server's tools as GatewayTools, rebuilt when its list changes (so schemas are converted once). */
  private readonly built = new Map<string, { from: readonly McpTool[]; tools: GatewayTool[] }>();

  constructor(
    private readonly config: SwitchboardConfig,
    private readonly options: McpServiceOptions = {},
  ) {}

  /** The connection to a configured server, made on first use (the server itself starts on its first call). */
  connection(name: string): McpConnection {
    let connection = this.connections.get(name);
    if (!connection) {
      const server = this.config.mcp.servers[name];
      if (!server)
        throw new SwitchboardError(
          'INVALID_REQUEST',
          `unknown MCP server "${name}" (configured: ${Object.keys(this.config.mcp.servers).join(', ') || 'none; add mcp.servers'})`,
        );
      connection = new McpConnection(name, server, {
        maxBackoffMs: this.config.mcp.maxBackoffSeconds * 1000,
        baseDir: this.options.baseDir,
        log: this.options.log,
        version: this.options.version,
      });
      this.connections.set(name, connection);
    }
    return connection;
  }

  /**
   * The tools of the servers this agent attaches. A server not yet started is started here; one that cannot be
   * reached offers the tools it had when it was last up (their calls answer that it is down), or none.
   */
  async toolsFor(agentId: string): Promise<GatewayTool[]> {
    const names = this.config.agents.list.find((agent) => agent.id === agentId)?.mcp ?? [];
    const lists = await Promise.all(
      names.map(async (name) => {
        const connection = this.connection(name);
        // A run waits for a starting server only so long; it goes on without the tools of one that is slower (a
        // first `npx` download, a hung server), and a later run is offered them once it is up.
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.config.mcp.startTimeoutSeconds * 1000);
        });
        await Promise.race([connection.connect().catch(() => {}), waited]);
        clearTimeout(timer);
        return this.toolsOf(connection);
      }),
    );
    return lists.flat();
  }

  status(): { name: string; state: string; error?: string; tools?: number }[] {
    return Object.keys(this.config.mcp.servers).map((name) => {
      const connection = this.connections.get(name);
      return { name, ...(connection?.state ?? { state: 'idle' }), ...(connection?.tools ? { tools: connection.tools.length } : {}) };
    });
  }

  async stop(): Promise<void> {
    await Promise.all([...this.connections.values()].map((connection) => connection.close()));
  }

  private toolsOf(connection: McpConnection): GatewayTool[] {
    const known = connection.tools;
    if (!known) return [];
    const cached = this.built.get(connection.name);
    if (cached?.from === known) return cached.tools;
    const tools = known.map((tool) => this.gatewayTool(connection, tool));
    this.built.set(connection.name, { from: known, tools });
    return tools;
  }

  private gatewayTool(connection: McpConnection, tool: McpTool): GatewayTool {
    const max = this.config.mcp.maxDescriptionChars;
    const description = tool.description ?? '';
    const readOnly = tool.annotations?.readOnlyHint === true;
    const idempotent = tool.annotations?.idempotentHint === true;
    return {
      name: mcpToolName(connection.name, tool.name),
      description: description.length > max ? `${description.slice(0, Math.max(0, max - 1))}…` : description,
      deferred: true,
      parameters: ANY_ARGS,
      shownSchema: shownSchema(tool.inputSchema),
      ...(readOnly ? {} : { effects: true as const }),
      // `mcp__*:destructive` asks before any call a server does not mark read-only or non-destructive (the MCP
      // spec's default for a tool that is not read-only is destructive).
      approval: { subject: () => (readOnly ? 'readOnly' : tool.annotations?.destructiveHint === false ? 'additive' : 'destructive') },
      execute: async (args, context) => {
        // Recorded before the call (a durable write) only where a second call would do harm: a retry may call a
        // read-only or idempotent tool again.
        if (!readOnly && !idempotent) {
          const earlier = await context.beginEffect?.({ server: connection.name, tool: tool.name });
          if (earlier?.state === 'completed') return earlier.recorded;
          if (earlier)
            return {
              status: 'error',
              error: `an earlier attempt of this run called ${tool.name} on MCP server "${connection.name}" and then the gateway stopped; the tool is not marked idempotent, so it is not called a second time. Check its effect, then call it again if that is safe`,
            };
        }
        try {
          return resultOf(await connection.call(tool.name, args, context.signal, this.config.mcp.callTimeoutSeconds * 1000));
        } catch (error) {
          if (error instanceof McpUnavailableError) return { status: 'error', code: 'MCP_UNAVAILABLE', error: error.message };
          return { status: 'error', error: `MCP server "${connection.name}", tool ${tool.name}: ${errorMessage(error)}` };
        }
      },
    };
  }
}

/** The input schema as the model is shown it: the server's, without `$schema`, always an object. */
function shownSchema(schema: McpTool['inputSchema']): Record<string, unknown> {
  const { $schema: _, ...rest } = schema as Record<string, unknown>;
  return { ...rest, type: 'object' };
}

/** A tool's answer as a tool result: its text (or structured content), an error when it says so. */
function resultOf(result: CallToolResult): unknown {
  const text = (result.content ?? []).map((part) => (part.type === 'text' ? part.text : `[${part.type} omitted]`)).join('\n');
  if (result.isError) return { status: 'error', error: text || 'the tool reported an error without a message' };
  return result.structuredContent ?? text;
}
