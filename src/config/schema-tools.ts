/**
 * The configuration of what agents work with: the exec tool, MCP tool servers and memory (docs/tools.md,
 * docs/memory.md). Part of the config schema (schema.ts); every key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';
import { headers, namedSecretMap } from './secret-schema.js';
import { CHILD_ENV_ALLOWLIST } from '../processes.js';

/** `exec`: off unless an agent turns it on; never in sandboxed sessions. Unset keys fall back to agents.defaults.exec. */
export const execPolicy = z.strictObject({
  enabled: z.boolean().optional(),
  timeoutSeconds: z.number().int().min(1).max(3600).optional(),
  maxOutputBytes: z.number().int().min(1024).max(10_000_000).optional(),
  /** Names of the gateway's environment variables the command sees; no others. */
  env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name' })).optional(),
});

export const EXEC_DEFAULTS = { enabled: false, timeoutSeconds: 60, maxOutputBytes: 65_536, env: CHILD_ENV_ALLOWLIST };

const serverName = z
  .string()
  .regex(/^[a-z0-9_-]{1,32}$/, { error: 'expected 1-32 characters [a-z0-9_-] (tool names are mcp__<server>__<tool>)' });

/**
 * A server started as a child process (`command`, `args`, `env`, `cwd`), or reached over Streamable HTTP (`url`,
 * `headers`, `allowPrivate`). One object rather than a union, so that an error names the key at fault and never
 * prints the value (env and headers hold secrets).
 */
const mcpServer = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /**
     * Added to the allowlisted environment every child gets (CHILD_ENV_ALLOWLIST); values may be ${ENV} references. A
     * value is a secret (redacted) when given as ${ENV} or under a name like *KEY*, *TOKEN* (secrets.ts).
     */
    env: namedSecretMap().default({}),
    cwd: z.string().optional(),
    url: z.url().optional(),
    headers: headers(),
    /** Lets the server be on a loopback, private or link-local address (the outbound guard refuses those otherwise). */
    allowPrivate: z.boolean().default(false),
  })
  .superRefine((server, context) => {
    if (!server.command === !server.url)
      context.addIssue({
        code: 'custom',
        message: 'give either command (a process on stdio) or url (Streamable HTTP), not both or neither',
      });
    else if (server.url && (server.args.length || Object.keys(server.env).length || server.cwd))
      context.addIssue({ code: 'custom', message: 'args, env and cwd are for a command; a url server takes headers and allowPrivate' });
    else if (server.command && (server.headers || server.allowPrivate))
      context.addIssue({ code: 'custom', message: 'headers and allowPrivate are for a url; a command server takes args, env and cwd' });
  });

export const mcpSection = z
  .strictObject({
    servers: z.record(serverName, mcpServer).default({}),
    /** A tool's description as the server gives it, cut to this many characters. */
    maxDescriptionChars: z.number().int().min(0).max(10_000).default(300),
    /** How long a run waits for a server that is starting before it goes on without its tools. */
    startTimeoutSeconds: positiveInt.default(30),
    /** How long one tool call may take. */
    callTimeoutSeconds: positiveInt.default(120),
    /** The longest pause between restarts of a server that keeps failing. */
    maxBackoffSeconds: positiveInt.default(60),
  })
  .prefault({});

/** One agent's memory: whose memory it may search, and who may search its own (both sides must agree). */
export const agentMemory = z.strictObject({
  readFrom: z.array(z.strictObject({ agent: z.string().min(1), paths: z.array(z.string().min(1)).optional() })).default([]),
  shareWith: z.array(z.string().min(1)).default([]),
  /** Index the agent's own sessions' transcripts too. */
  transcripts: z.boolean().default(false),
});

export const memorySection = z
  .strictObject({
    enabled: z.boolean().default(true),
    /** Markdown files past this size are indexed up to it. */
    maxFileBytes: positiveInt.default(1_000_000),
    /** Hits memory_search answers at most. */
    maxResults: z.number().int().min(1).max(100).default(8),
    /** How often the memory folders are scanned besides watching them. */
    scanIntervalSeconds: positiveInt.default(60),
  })
  .prefault({});

export type McpServerConfig = z.infer<typeof mcpServer>;
export type McpConfig = z.infer<typeof mcpSection>;
export type AgentMemoryConfig = z.infer<typeof agentMemory>;
