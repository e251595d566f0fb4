/**
 * Loading the configuration: JSON5, `${ENV}` substitution, validation with zod, and cross-checks.
 * Contract: either a fully typed config comes back, or a CONFIG_INVALID error whose message lists each
 * problem as `<path>: <what was expected>, got <value>`. Nothing is guessed.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import JSON5 from 'json5';
import type { z } from 'zod';
import { Json5Document } from './edit.js';
import { SwitchboardError } from '../core/errors.js';
import { configSchema, DEFAULT_DATA_DIR, secretSchemas, type SwitchboardConfig } from './schema.js';

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
  const substituted = substituteEnv(raw, [], unset, env);
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
  const base = dirname(resolve(path));
  const absolute = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  for (const agent of config.agents.list) if (agent.workspace) agent.workspace = absolute(agent.workspace);
  if (config.agents.defaults.workspace) config.agents.defaults.workspace = absolute(config.agents.defaults.workspace);
  if (config.store.sqlite.path && config.store.sqlite.path !== ':memory:') config.store.sqlite.path = absolute(config.store.sqlite.path);
  return { config, path: resolve(path), dataDir: absolute(config.gateway.dataDir) };
}

function invalid(path: string, problems: string[]): SwitchboardError {
  return new SwitchboardError('CONFIG_INVALID', `invalid config ${path}:\n  ${problems.join('\n  ')}`, { problems });
}

/**
 * `${NAME}` and `${NAME:-default}` replaced (`$${` writes a literal `${`). An unset variable without a default
 * is noted in `unset` (path -> name) and stands for a placeholder that is a valid URL and a long string.
 */
function substituteEnv(value: unknown, path: PathPart[], unset: Map<string, string>, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (whole, name: string, fallback: string | undefined) => {
      if (whole.startsWith('$$')) return whole.slice(1);
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      unset.set(formatPath(path), name);
      return unsetPlaceholder(name);
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => substituteEnv(item, [...path, index], unset, env));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteEnv(item, [...path, key], unset, env)]));
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

type PathPart = string | number | symbol;

export function formatPath(path: readonly PathPart[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

function valueAt(root: unknown, path: readonly PathPart[]): unknown {
  let current = root;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PathPart, unknown>)[part];
  }
  return current;
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function formatIssue(issue: z.core.$ZodIssue, root: unknown): string {
  const where = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = schemasAt(issue.path).flatMap((schema) => Object.keys(unwrap(schema)?.def?.shape ?? {}));
    return issue.keys
      .map((key) => {
        const hint = closest(key, known);
        const at = formatPath([...issue.path, key]);
        return `${at}: unknown key${hint ? ` (did you mean "${hint}"?)` : known.length ? ` (known keys: ${known.join(', ')})` : ''}`;
      })
      .join('\n  ');
  }
  const got = valueAt(root, issue.path);
  let expected = issue.message;
  if (issue.code === 'invalid_type' && got === undefined) return `${where}: required, expected ${issue.expected}`;
  if (issue.code === 'invalid_type') expected = `expected ${issue.expected}`;
  if (issue.code === 'invalid_value' && 'values' in issue)
    expected = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  if (issue.code === 'invalid_union' && issue.path.at(-1) !== 'type') {
    const type = (got as { type?: unknown } | undefined)?.type;
    if (type !== undefined) expected = 'expected "type" to be one of "openai", "anthropic", "openai-compatible", "scripted"';
  }
  expected = expected
    .replace(/^Invalid input: /, '')
    .replace(/^Too small: /, '')
    .replace(/^Too big: /, '');
  if (issue.code === 'custom') return `${where}: ${expected}`;
  return `${where}: ${expected}, got ${isSecret(issue.path) ? secretShown(got) : show(got)}`;
}

/** A secret is described, never shown, not even in part. */
function secretShown(value: unknown): string {
  return typeof value === 'string'
    ? `a secret of ${value.length} characters (not shown)`
    : `a ${Array.isArray(value) ? 'list' : typeof value} (not shown)`;
}

// biome-ignore lint/suspicious/noExplicitAny: zod's internal definitions are walked by shape.
type AnySchema = any;

/** The schema inside optional, default, prefault and nullable wrappers. */
function unwrap(schema: AnySchema): AnySchema {
  let inner = schema;
  while (inner && ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch'].includes(inner.def?.type))
    inner = inner.def.innerType;
  return inner;
}

/** The wrappers and the schema itself, outermost first. */
function layers(schema: AnySchema): AnySchema[] {
  const found: AnySchema[] = [];
  let inner = schema;
  while (inner) {
    found.push(inner);
    inner = ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch'].includes(inner.def?.type)
      ? inner.def.innerType
      : undefined;
  }
  return found;
}

/** The schemas the config schema has at `path` (more than one under a union), for hints and secrets. */
function schemasAt(path: readonly PathPart[]): AnySchema[] {
  let current: AnySchema[] = [configSchema];
  for (const part of path) {
    current = current
      .map(unwrap)
      .flatMap((schema) => (schema?.def?.type === 'union' ? schema.def.options.map(unwrap) : [schema]))
      .map((schema) => {
        if (typeof part === 'number') return schema?.def?.element;
        if (schema?.def?.type === 'record') return schema.def.valueType;
        return schema?.def?.shape?.[part as string];
      })
      .filter(Boolean);
  }
  return current.flatMap((schema) => (unwrap(schema)?.def?.type === 'union' ? [schema, ...unwrap(schema).def.options] : [schema]));
}

/** True when the value at `path` is a secret (schema.ts marks them), or lies inside one. */
function isSecret(path: readonly PathPart[]): boolean {
  return path.some((_, index) =>
    schemasAt(path.slice(0, index + 1)).some((schema) => layers(schema).some((layer) => secretSchemas.has(layer))),
  );
}

function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = levenshtein(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const saved = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = saved;
    }
  }
  return row[b.length];
}

/** Rules zod cannot see one field at a time. */
function crossCheck(config: SwitchboardConfig): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  config.agents.list.forEach((agent, index) => {
    const first = seen.get(agent.id);
    if (first !== undefined) problems.push(`agents.list[${index}].id: duplicate agent id "${agent.id}" (also agents.list[${first}].id)`);
    else seen.set(agent.id, index);
    const model = agent.model ?? config.agents.defaults.model;
    if (!model) {
      problems.push(`agents.list[${index}].model: required (or set agents.defaults.model), expected "<provider>/<model>", got nothing`);
      return;
    }
    const at = agent.model ? `agents.list[${index}].model` : 'agents.defaults.model';
    const [providerName, ...rest] = model.split('/');
    const modelId = rest.join('/');
    const provider = config.models.providers[providerName];
    if (!provider) {
      const known = Object.keys(config.models.providers);
      problems.push(
        `${at}: unknown model provider "${providerName}" in "${model}" (configured under models.providers: ${known.length ? known.join(', ') : 'none'})`,
      );
    } else if (provider.type === 'scripted' && !provider.models[modelId]) {
      problems.push(
        `${at}: scripted model "${modelId}" is not defined under models.providers.${providerName}.models (defined: ${Object.keys(provider.models).join(', ') || 'none'})`,
      );
    }
  });
  const defaults = config.agents.list.filter((agent) => agent.default);
  if (defaults.length > 1) problems.push(`agents.list: more than one agent has "default: true" (${defaults.map((a) => a.id).join(', ')})`);
  config.bindings.forEach((binding, index) => {
    if (!seen.has(binding.agentId))
      problems.push(`bindings[${index}].agentId: unknown agent "${binding.agentId}" (agents: ${[...seen.keys()].join(', ')})`);
  });
  const laneCap = config.lanes.subagent.maxConcurrent;
  if (laneCap !== undefined && laneCap !== config.agents.defaults.subagents.maxConcurrent) {
    problems.push(
      `lanes.subagent.maxConcurrent: ${laneCap} disagrees with agents.defaults.subagents.maxConcurrent (${config.agents.defaults.subagents.maxConcurrent}); both set the subagent lane, so keep one`,
    );
  }
  const server = config.a2a.server;
  const peerIds = new Set<string>();
  server.peers.forEach((peer, index) => {
    if (!peer.token && !peer.apiKey) problems.push(`a2a.server.peers[${index}]: give the peer a token or an apiKey (or both)`);
    if (peerIds.has(peer.id)) problems.push(`a2a.server.peers[${index}].id: duplicate peer id "${peer.id}"`);
    peerIds.add(peer.id);
  });
  if (server.enabled && !server.requireAuth && !server.allowAnonymous && !isLoopbackHost(config.gateway.host)) {
    problems.push(
      `a2a.server.requireAuth: false on gateway.host "${config.gateway.host}" lets anyone who can reach it call your agents, all as one peer that shares its tasks; add peers, listen on 127.0.0.1, or set a2a.server.allowAnonymous: true`,
    );
  }
  if (server.enabled && server.requireAuth && server.peers.length === 0) {
    problems.push(
      'a2a.server.peers: the A2A server requires credentials and has no peers; add peers, or set a2a.server.requireAuth: false to let anyone in',
    );
  }
  return problems;
}

/** A host the gateway can listen on that only this machine reaches. */
function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare) || /^::ffff:127\./.test(bare);
}
