/**
 * External agent runtimes (docs/runtimes.md): ACP agents (`acp`) and CLI child processes (`runtimes`) that run
 * sub-agents. Part of the config schema (schema.ts); every key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';
import { namedSecretMap } from './secret-schema.js';

/** A runtime's name: it is part of `runtime` patterns (`acp:<name>`) and of log lines. */
const RUNTIME_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const runtimeName = z.string().regex(RUNTIME_NAME, { error: 'expected 1-64 characters [A-Za-z0-9_.-], not starting with "." or "-"' });

/** How the gateway starts a child: the program, its arguments, extra environment and the folder it starts in. */
const command = {
  command: z.string().min(1, { error: 'expected the program to run (a name on PATH, or a path)' }),
  args: z.array(z.string()).default([]),
  /**
   * Added to the allowlisted environment every child gets (CHILD_ENV_ALLOWLIST): the gateway's own is not inherited, so
   * a child's API key is written here, and a value is a secret (redacted) as in `mcp.servers.*.env` (secrets.ts).
   */
  env: namedSecretMap().default({}),
  /** Where the child starts; default: the sub-agent's workdir (its worktree when it has one). */
  cwd: z.string().optional(),
};

export const ACP_TOOL_KINDS = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other'] as const;
export type AcpToolKind = (typeof ACP_TOOL_KINDS)[number];

/**
 * How `session/request_permission` is answered, per ACP tool kind. Unset kinds: `read`, `search`, `think`, `fetch`,
 * `switch_mode` and `other` are allowed; `edit`, `delete` and `move` are allowed inside the workdir only; `execute` is
 * denied. An allowed edit whose locations leave the workdir is still denied; an edit, delete or move naming no location
 * (which cannot be checked) is denied unless its kind is set to `allow` here.
 */
const permissions = z.partialRecord(z.enum(ACP_TOOL_KINDS), z.enum(['allow', 'deny', 'ask'])).default({});

const acpAgent = z.strictObject({ ...command, permissions });

export const acpSection = z
  .strictObject({
    /** ACP agents the gateway may start for `sessions_spawn({ runtime: "acp", agent })`. */
    agents: z.record(runtimeName, acpAgent).default({}),
    /** The ACP lane's cap: external children (ACP and process runtimes) running at once; more wait. */
    maxConcurrentSessions: positiveInt.default(8),
    /** After `session/cancel` (a kill or a timeout), how long the child has to stop before its process group is killed. */
    cancelGraceMs: positiveInt.default(3000),
  })
  .prefault({});

/** CLI agents run as child processes for `sessions_spawn({ runtime: "process", agent })`. */
export const runtimesSection = z
  .record(
    runtimeName,
    z.strictObject({
      ...command,
      /** `json-lines`: each stdout line is a JSON event (pi --mode json, claude stream-json, codex exec --json); `text`: plain text. */
      output: z.enum(['json-lines', 'text']).default('json-lines'),
      /** `last-message`: the last assistant message on stdout; `file`: the file at $SWITCHBOARD_RESULT_FILE. */
      resultFrom: z.enum(['last-message', 'file']).default('last-message'),
      /** `stdin`: the task is written to stdin; `arg`: appended as the last argument (or put where an argument is `{task}`). */
      taskVia: z.enum(['arg', 'stdin']).default('arg'),
    }),
  )
  .default({});

export type AcpAgentConfig = z.infer<typeof acpAgent>;
export type ProcessRuntimeConfig = z.infer<typeof runtimesSection>[string];
