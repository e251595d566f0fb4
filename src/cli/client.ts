/** The CLI's client for the control API. */
import { createParser } from 'eventsource-parser';
import { existsSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { loadConfigFile } from '../config/load.js';
import { SwitchboardError, type ErrorCode } from '../core/errors.js';
import { DataDir } from '../kit/data-dir.js';

/** The CLI command for the gateway of `configPath`, which it names, so that a hint is right for any config. */
export function cliCommand(command: string, configPath?: string): string {
  if (!configPath) return `switchboard ${command}`;
  const near = relative(process.cwd(), configPath);
  const shown = near && !near.startsWith('..') && !isAbsolute(near) ? near : configPath;
  return `switchboard --config ${/^[\w./-]+$/.test(shown) ? shown : JSON.stringify(shown)} ${command}`;
}

export interface ClientTarget {
  url: string;
  token: string;
  /** The config the target came from, for hints; absent with --url and SWITCHBOARD_TOKEN. */
  configPath?: string;
}

/** Where the gateway is: --url / SWITCHBOARD_URL, else what the running gateway wrote, else the config. */
export function resolveClientTarget(configPath: string, explicitUrl?: string): ClientTarget {
  // A variable set to the empty string is unset, as shells mean it.
  const envToken = process.env.SWITCHBOARD_TOKEN || undefined;
  const url = explicitUrl ?? (process.env.SWITCHBOARD_URL || undefined);
  if (url && envToken) return { url, token: envToken };
  if (!existsSync(configPath)) {
    throw new SwitchboardError(
      'CONFIG_NOT_FOUND',
      `config file not found: ${configPath} (pass --config <file>, or --url with SWITCHBOARD_TOKEN set)`,
    );
  }
  // Only where the gateway is: a variable set for the gateway alone (an API key) is no reason to fail here.
  const { config, dataDir } = loadConfigFile(configPath, process.env, { unsetEnv: 'allow' });
  const dir = new DataDir(dataDir);
  const runtime = dir.readRuntime();
  const token = envToken ?? dir.readToken();
  if (!token) {
    throw new SwitchboardError(
      'UNAUTHORIZED',
      `no token in ${dataDir} yet: start the gateway once ("${cliCommand('gateway', configPath)}"), or set SWITCHBOARD_TOKEN`,
    );
  }
  return { url: url ?? runtime?.url ?? `http://${config.gateway.host}:${config.gateway.port}`, token, configPath };
}

export class ControlClient {
  constructor(readonly target: ClientTarget) {}

  /**
   * The gateway's refusal. A token refusal's hint names the config this CLI found the token with; an unknown agent
   * that the config file defines says that the gateway runs an older config, and how to reload it.
   */
  private refusal(code: ErrorCode, message: string, details?: Record<string, unknown>): SwitchboardError {
    const { configPath } = this.target;
    if (!configPath) return new SwitchboardError(code, message, details);
    if (code === 'UNAUTHORIZED') {
      const reason = message.replace(/ \(print it with .*\)$/, '');
      return new SwitchboardError(
        code,
        `${reason} from the gateway at ${this.target.url} (print its token with "${cliCommand('token', configPath)}", or pass the --config it was started with)`,
      );
    }
    if (code === 'AGENT_NOT_FOUND' && typeof details?.agentId === 'string' && definedInFile(configPath, details.agentId)) {
      return new SwitchboardError(
        code,
        `${message}; ${configPath} defines "${details.agentId}", so the gateway runs an older version of the file: apply it with "${cliCommand('config reload', configPath)}"`,
        details,
      );
    }
    return new SwitchboardError(code, message, details);
  }

  private unreachable(): string {
    const start = this.target.configPath ? ` (start it with "${cliCommand('gateway', this.target.configPath)}")` : '';
    return `cannot reach the gateway at ${this.target.url}${start}`;
  }

  async request<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.target.url}${path}`, {
        method,
        signal,
        headers: { authorization: `Bearer ${this.target.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      // A refused connection sent nothing; any other failure may have lost the answer to a request that arrived.
      const refused = (error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
      throw new SwitchboardError('GATEWAY_UNREACHABLE', this.unreachable(), {
        maybeDelivered: !refused,
      });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SwitchboardError('INTERNAL', `gateway answered HTTP ${response.status} with a body that is not JSON`);
    }
    if (!response.ok) {
      const error = (parsed as { error?: { code?: ErrorCode; message?: string; details?: Record<string, unknown> } }).error;
      throw this.refusal(error?.code ?? 'INTERNAL', error?.message ?? `HTTP ${response.status}`, error?.details);
    }
    return parsed as T;
  }

  /** Follows the SSE stream; resolves when the stream ends or `signal` aborts. */
  async stream(
    path: string,
    onEvent: (event: { event: string; id?: string; data: string }) => void,
    signal?: AbortSignal,
    /** Called once the gateway accepted the stream: nothing it journals from then on is missed. */
    onOpen?: () => void,
  ): Promise<void> {
    let response: Response;
    try {
      response = await fetch(`${this.target.url}${path}`, { headers: { authorization: `Bearer ${this.target.token}` }, signal });
    } catch (_error) {
      if (signal?.aborted) return;
      throw new SwitchboardError('GATEWAY_UNREACHABLE', this.unreachable());
    }
    if (!response.ok || !response.body) {
      const body = (await response.json().catch(() => ({}))) as { error?: { code?: ErrorCode; message?: string } };
      throw this.refusal(body.error?.code ?? 'INTERNAL', body.error?.message ?? `HTTP ${response.status}`);
    }
    onOpen?.();
    // The SSE format in full (multi-line data, CRLF, comments, retry) is eventsource-parser's job.
    const parser = createParser({ onEvent: (event) => onEvent({ event: event.event ?? 'message', id: event.id, data: event.data }) });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (_error) {
      // A stream cut off mid-way (the gateway was killed, the network dropped: undici says "terminated") is a gateway
      // that went away, as one that closed the stream is: a follower reconnects.
      if (!signal?.aborted)
        throw new SwitchboardError('GATEWAY_UNREACHABLE', `the connection to the gateway at ${this.target.url} dropped`);
    }
  }
}

/** Whether the config file as it is now defines this agent (a file that does not load defines nothing). */
function definedInFile(configPath: string, agentId: string): boolean {
  try {
    return loadConfigFile(configPath, process.env, { unsetEnv: 'allow' }).config.agents.list.some((agent) => agent.id === agentId);
  } catch {
    return false;
  }
}
