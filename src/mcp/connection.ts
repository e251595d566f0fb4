/**
 * One MCP tool server (docs/tools.md): started on first need, over stdio or Streamable HTTP with the SDK's
 * client; its tool list kept and refreshed on `notifications/tools/list_changed`; restarted with backoff when it
 * fails. A server that is down answers each call with an error naming it and when it is tried again, so a run
 * that called it goes on.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema-tools.js';
import { errorMessage } from '../core/errors.js';
import { guardedFetch } from '../net/outbound-guard.js';
import { childEnvironment } from '../processes.js';
import { traceHeader } from '../kit/trace-context.js';

export type McpTool = Pick<Tool, 'name' | 'description' | 'inputSchema' | 'annotations'>;

export interface McpConnectionOptions {
  /** The longest pause between restarts, in milliseconds. */
  maxBackoffMs: number;
  /** Where a stdio server's relative `cwd` is resolved: the config file's folder. */
  baseDir?: string;
  log?: (message: string) => void;
  /** Told when the tool list changed (a notification, or a restart that found other tools). */
  onToolsChanged?: () => void;
  version?: string;
}

/** A call to a server that is down, or failed to start: the message says which, why, and when it is tried again. */
export class McpUnavailableError extends Error {}

const FIRST_BACKOFF_MS = 500;
const STDERR_KEPT = 2000;

export class McpConnection {
  private client: Client | undefined;
  /** The client of a start under way, so that closing ends its process too. */
  private opening: Client | undefined;
  private starting: Promise<Client> | undefined;
  private known: McpTool[] | undefined;
  private failure: string | undefined;
  private backoffMs = FIRST_BACKOFF_MS;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private stderr = '';
  private closed = false;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly options: McpConnectionOptions,
  ) {}

  /** `up`, `down` (with the reason), or `idle` before its first use. */
  get state(): { state: 'idle' | 'starting' | 'up' | 'down'; error?: string; retryInMs?: number } {
    if (this.client) return { state: 'up' };
    if (this.starting) return { state: 'starting' };
    if (this.failure) return { state: 'down', error: this.failure, retryInMs: Math.max(0, this.retryAt - Date.now()) };
    return { state: 'idle' };
  }

  /** The tools as last listed; undefined until the server was first reached. */
  get tools(): readonly McpTool[] | undefined {
    return this.known;
  }

  /** Starts the server if it is not up (at once the first time; after a failure only once its backoff has passed). */
  async connect(): Promise<Client> {
    if (this.client) return this.client;
    if (this.closed) throw new McpUnavailableError(`MCP server "${this.name}" is stopped (the gateway is stopping)`);
    if (!this.starting) {
      if (this.failure && Date.now() < this.retryAt) throw new McpUnavailableError(this.downMessage());
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  async listTools(): Promise<readonly McpTool[]> {
    await this.connect();
    return this.known ?? [];
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult> {
    const client = await this.connect();
    // A signal of the call's own: the SDK leaves a listener on the signal it is given, and a run's signal is shared
    // by all of the run's calls.
    const own = new AbortController();
    const abort = () => own.abort(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    try {
      // The call's trace, where the MCP spec puts it: params._meta.traceparent.
      return (await client.callTool({ name: tool, arguments: args, _meta: traceHeader() }, undefined, {
        signal: own.signal,
        timeout: timeoutMs,
      })) as CallToolResult;
    } catch (error) {
      // A transport failure (the process died, the connection was refused) takes the server down; a tool's own
      // error or a timeout does not. One death counts once: the SDK reports the closed connection (onclose, which
      // took this client down already) before it fails the calls in flight, and those failures are the same death.
      if (this.client === client && isTransportFailure(error)) this.wentDown(errorMessage(error));
      if (this.client !== client && this.failure !== undefined) throw new McpUnavailableError(this.downMessage());
      throw error;
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const clients = [this.client, this.opening];
    this.client = undefined;
    await Promise.all(clients.map((client) => client?.close().catch(() => {})));
  }

  private downMessage(): string {
    const seconds = Math.max(0, Math.ceil((this.retryAt - Date.now()) / 1000));
    return `MCP server "${this.name}" is down: ${this.failure}; it is started again with backoff (next try in ${seconds}s). Go on without it, or try again later`;
  }

  private async start(): Promise<Client> {
    const client = new Client({ name: 'switchboard', version: this.options.version ?? '0' }, { capabilities: {} });
    this.opening = client;
    this.stderr = '';
    try {
      await client.connect(this.transport());
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        await this.refresh(client).catch((error) =>
          this.options.log?.(`MCP server "${this.name}": listing its tools failed: ${errorMessage(error)}`),
        );
      });
      client.onclose = () => {
        if (this.client === client) this.wentDown(this.lastWords('the connection closed'));
      };
      await this.refresh(client);
    } catch (error) {
      await client.close().catch(() => {});
      if (this.closed) throw new McpUnavailableError(`MCP server "${this.name}" is stopped (the gateway is stopping)`);
      this.wentDown(this.lastWords(errorMessage(error)));
      throw new McpUnavailableError(this.downMessage());
    } finally {
      this.opening = undefined;
    }
    if (this.closed) {
      await client.close().catch(() => {});
      throw new McpUnavailableError(`MCP server "${this.name}" is stopped (the gateway is stopping)`);
    }
    this.client = client;
    this.failure = undefined;
    this.backoffMs = FIRST_BACKOFF_MS;
    return client;
  }

  private async refresh(client: Client): Promise<void> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const changed = JSON.stringify(tools) !== JSON.stringify(this.known);
    this.known = tools;
    if (changed) this.options.onToolsChanged?.();
  }

  private transport(): Transport {
    if (this.config.url) {
      const fetch = guardedFetch({ setting: `mcp.servers.${this.name}.allowPrivate`, allowPrivate: this.config.allowPrivate });
      return new StreamableHTTPClientTransport(new URL(this.config.url), { fetch, requestInit: { headers: this.config.headers } });
    }
    const transport = new StdioClientTransport({
      command: this.config.command!,
      args: this.config.args,
      env: childEnvironment(this.config.env),
      cwd: this.config.cwd ?? this.options.baseDir,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    return transport;
  }

  /** The reason, with the last line the server wrote to stderr when it has one. */
  private lastWords(reason: string): string {
    const last = this.stderr.trim().split('\n').pop();
    return last ? `${reason} (its stderr: ${last})` : reason;
  }

  private wentDown(reason: string): void {
    const client = this.client;
    this.client = undefined;
    void client?.close().catch(() => {});
    this.failure = reason;
    this.retryAt = Date.now() + this.backoffMs;
    this.options.log?.(`MCP server "${this.name}" is down: ${reason}; next try in ${this.backoffMs} ms`);
    clearTimeout(this.retryTimer);
    // Started again in the background once the backoff has passed, so that a server that comes back is up
    // before the next call; each failure doubles the pause, up to mcp.maxBackoffSeconds.
    // The timer may fire a millisecond before `retryAt` on Date.now()'s clock (Node rounds timers): the backoff is
    // over when it fires, so its start is not refused as too early, which would leave the server down for good.
    this.retryTimer = setTimeout(() => {
      this.retryAt = 0;
      void this.connect().catch(() => {});
    }, this.backoffMs);
    this.retryTimer.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs);
  }
}

function isTransportFailure(error: unknown): boolean {
  const text = errorMessage(error);
  return /fetch failed|could not be reached|ECONNREFUSED|ECONNRESET|EPIPE|Connection closed|Not connected|socket hang up/i.test(text);
}
