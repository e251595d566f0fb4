/**
 * Loading the configuration: JSON5, `${ENV}` substitution, validation with zod, and cross-checks.
 * Contract: either a fully typed config comes back, or a CONFIG_INVALID error whose message lists each
 * problem as `<path>: <what was expected>, got <value>`. Nothing is guessed.
 */
import { readFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import JSON5 from 'json5';
import type { z } from 'zod';
import { Json5Document } from './edit.js';
import { SwitchboardError } from '../core/errors.js';
import { crossCheck } from './cross-check.js';
import { formatIssue, formatPath, valueAt } from './issues.js';
import { configSchema, DEFAULT_DATA_DIR, type SwitchboardConfig } from './schema.js';
import type { PathPart } from './schema-walk.js';
import { markFromEnv } from './secret-schema.js';

export { formatPath } from './issues.js';

export interface LoadedConfig {
  config: SwitchboardConfig;
  /** Absolute path of the file it came from. */
  path: string;
  /** The data directory, resolved against the config file's folder. */
  dataDir: string;
}

/**
 * The config file: --config, else $SWITCHBOARD_CONFIG, else ./switchboard.json5, else the file the
 * gateway running from this folder was started with (recorded in ./.switchboard/gateway.json).
 */
export function resolveConfigPath(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit ?? env.SWITCHBOARD_CONFIG) return resolve((explicit ?? env.SWITCHBOARD_CONFIG)!);
  const local = resolve('switchboard.json5');
  if (existsSync(local)) return local;
  const runtime = resolve(DEFAULT_DATA_DIR, 'gateway.json');
  if (existsSync(runtime)) {
    try {
      const recorded = (JSON.parse(readFileSync(runtime, 'utf8')) as { configPath?: string }).configPath;
      if (recorded && existsSync(recorded)) return recorded;
    } catch {
      // An unreadable runtime file is no reason to fail: fall through to the plain default.
    }
  }
  return local;
}

export interface ParseOptions {
  /**
   * `error` (the gateway): an unset variable without a `:-default` is a problem. `allow` (the CLI, which
   * edits the file or only needs to find the gateway): it stands for a placeholder that is a valid URL
   * and a long string, and a problem at its key is not reported; the gateway checks it when it starts.
   */
  unsetEnv?: 'error' | 'allow';
}

/** What an unset variable stands for under `unsetEnv: 'allow'`: a URL and a string of 16 characters or more. */
const unsetPlaceholder = (name: string) => `http://unset.invalid/${name}/not-set`;

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): LoadedConfig {
  if (!existsSync(path)) {
    throw new SwitchboardError(
      'CONFIG_NOT_FOUND',
      `config file not found: ${path} (pass --config <file>, set SWITCHBOARD_CONFIG, or create switchboard.json5; examples/demo.json5 is a starting point)`,
    );
  }
  return parseConfigText(readFileSync(path, 'utf8'), path, env, options);
}

function duplicateKeys(text: string): ReturnType<Json5Document['duplicateKeys']> {
  try {
    return new Json5Document(text).duplicateKeys();
  } catch {
    return []; // The editor's scanner does not know every JSON5 form; JSON5 itself accepted the text.
  }
}

export function parseConfigText(
  text: string,
  path: string,
  env: NodeJS.ProcessEnv = process.env,
  options: ParseOptions = {},
): LoadedConfig {
  let raw: unknown;
  try {
    raw = JSON5.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^JSON5: /, '') : String(error);
    throw new SwitchboardError('CONFIG_INVALID', `${path}: not valid JSON5: ${message}`);
  }
  // Every problem is reported at once: duplicates, unset variables, the schema's, and the cross-checks of
  // what the schema accepted (the rejected values are left out, so that their defaults stand in).
  const problems: string[] = duplicateKeys(text).map(
    (dup) =>
      `${dup.path}: appears twice (lines ${dup.firstLine} and ${dup.line}); JSON5 would silently keep only the last, so merge them into one`,
  );
  const unset = new Map<string, string>();
  const envProblems = new Map<string, string>();
  const fromEnv: EnvGiven[] = [];
  const substituted = substituteEnv(raw, [], unset, env, fromEnv);
  if (options.unsetEnv !== 'allow')
    for (const [where, name] of unset)
      envProblems.set(where, `${where}: environment variable ${name} is not set (set it, or write \${${name}:-default})`);
  problems.push(...envProblems.values());
  const reported = (issuePath: readonly PathPart[]) => !unset.has(formatPath(issuePath));
  let parsed = configSchema.safeParse(substituted);
  if (!parsed.success) {
    const issues = parsed.error.issues.filter((issue) => reported(issue.path));
    problems.push(...issues.map((issue) => formatIssue(issue, substituted)));
    if (problems.length === 0) problems.push(...[...unset.keys()].map((where) => `${where}: its environment variable is not set`));
    parsed = configSchema.safeParse(without(substituted, parsed.error.issues));
  }
  if (parsed.success) {
    const reportedAt = new Set(problems.map((problem) => problem.slice(0, problem.indexOf(':'))));
    problems.push(...crossCheck(parsed.data).filter((problem) => !reportedAt.has(problem.slice(0, problem.indexOf(':')))));
  }
  if (problems.length > 0 || !parsed.success) throw invalid(path, problems);
  const config = parsed.data;
  // The redactor's secrets include what ${ENV} gave a map's value (secret-schema.ts, secrets.ts).
  for (const { path: at, values } of fromEnv) {
    const parent = valueAt(config, at.slice(0, -1));
    if (parent && typeof parent === 'object' && typeof at.at(-1) === 'string') markFromEnv(parent, at.at(-1) as string, values);
  }
  const base = dirname(resolve(path));
  const absolute = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  for (const agent of config.agents.list) if (agent.workspace) agent.workspace = absolute(agent.workspace);
  if (config.agents.defaults.workspace) config.agents.defaults.workspace = absolute(config.agents.defaults.workspace);
  for (const server of Object.values(config.mcp.servers)) if (server.cwd) server.cwd = absolute(server.cwd);
  if (config.mailbox.dir) config.mailbox.dir = absolute(config.mailbox.dir);
  for (const team of config.teams) if (team.claudeDir) team.claudeDir = absolute(team.claudeDir.replace(/^~(?=$|\/)/, homedir()));
  if (config.store.sqlite.path && config.store.sqlite.path !== ':memory:') config.store.sqlite.path = absolute(config.store.sqlite.path);
  return { config, path: resolve(path), dataDir: absolute(config.gateway.dataDir) };
}

function invalid(path: string, problems: string[]): SwitchboardError {
  return new SwitchboardError('CONFIG_INVALID', `invalid config ${path}:\n  ${problems.join('\n  ')}`, { problems });
}

/** The values `${ENV}` references gave the string at `path`. */
interface EnvGiven {
  path: PathPart[];
  values: string[];
}

/**
 * `${NAME}` and `${NAME:-default}` replaced (`$${` writes a literal `${`). An unset variable without a default
 * is noted in `unset` (path -> name) and stands for a placeholder that is a valid URL and a long string. What each
 * reference gave is noted in `given`.
 */
function substituteEnv(value: unknown, path: PathPart[], unset: Map<string, string>, env: NodeJS.ProcessEnv, given: EnvGiven[]): unknown {
  if (typeof value === 'string') {
    const values: string[] = [];
    const out = value.replace(/\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (whole, name: string, fallback: string | undefined) => {
      if (whole.startsWith('$$')) return whole.slice(1);
      const found = env[name];
      if (found !== undefined && found !== '') {
        values.push(found);
        return found;
      }
      if (fallback !== undefined) {
        values.push(fallback);
        return fallback;
      }
      unset.set(formatPath(path), name);
      return unsetPlaceholder(name);
    });
    if (values.length > 0) given.push({ path, values });
    return out;
  }
  if (Array.isArray(value)) return value.map((item, index) => substituteEnv(item, [...path, index], unset, env, given));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteEnv(item, [...path, key], unset, env, given)]));
  }
  return value;
}

/** A copy of the raw config without the values the schema rejected (and without unknown keys). */
function without(root: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  const copy = structuredClone(root);
  for (const issue of issues) {
    const drops = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key]) : [issue.path];
    for (const drop of drops) {
      const parent = valueAt(copy, drop.slice(0, -1));
      if (parent && typeof parent === 'object') delete (parent as Record<PathPart, unknown>)[drop.at(-1) as PathPart];
    }
  }
  return copy;
}
