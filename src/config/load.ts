/**
 * Loading the configuration: JSON5, `${ENV}` substitution, validation with zod, and cross-checks.
 * Contract: either a fully typed config comes back, or a CONFIG_INVALID error whose message lists each
 * problem as `<path>: <what was expected>, got <value>`. Nothing is guessed.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import JSON5 from 'json5';
import { z } from 'zod';
import { Json5Document } from './edit.js';
import { SwitchboardError } from '../core/errors.js';
import { configSchema, DEFAULT_DATA_DIR, type SwitchboardConfig } from './schema.js';

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

export function parseConfigText(text: string, path: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): LoadedConfig {
  let raw: unknown;
  try {
    raw = JSON5.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^JSON5: /, '') : String(error);
    throw new SwitchboardError('CONFIG_INVALID', `${path}: not valid JSON5: ${message}`);
  }
  const problems: string[] = duplicateKeys(text).map((dup) => `${dup.path}: appears twice (lines ${dup.firstLine} and ${dup.line}); JSON5 would silently keep only the last, so merge them into one`);
  const unset = new Set<string>();
  const substituted = substituteEnv(raw, [], options.unsetEnv === 'allow' ? unset : problems, env);
  if (problems.length > 0) throw invalid(path, problems);
  const reported = (issuePath: readonly PathPart[]) => !unset.has(formatPath(issuePath));
  const parsed = configSchema.safeParse(substituted);
  if (!parsed.success) {
    const issues = parsed.error.issues.filter((issue) => reported(issue.path));
    throw invalid(path, issues.length > 0 ? issues.map((issue) => formatIssue(issue, substituted)) : [...unset].map((where) => `${where}: its environment variable is not set`));
  }
  const config = parsed.data;
  problems.push(...crossCheck(config));
  if (problems.length > 0) throw invalid(path, problems);
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

/** `${NAME}` and `${NAME:-fallback}` in string values; `$${` writes a literal `${`. */
/** `${NAME}` and `${NAME:-default}` replaced; an unset one is a problem, or with a Set (allow mode) noted there and a placeholder. */
function substituteEnv(value: unknown, path: PathPart[], unset: string[] | Set<string>, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (whole, name: string, fallback: string | undefined) => {
      if (whole.startsWith('$$')) return whole.slice(1);
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      if (unset instanceof Set) {
        unset.add(formatPath(path));
        return unsetPlaceholder(name);
      }
      unset.push(`${formatPath(path)}: environment variable ${name} is not set (set it, or write \${${name}:-default})`);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => substituteEnv(item, [...path, index], unset, env));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteEnv(item, [...path, key], unset, env)]));
  }
  return value;
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
    const known = knownKeys(configSchema, issue.path);
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
  if (issue.code === 'invalid_value' && 'values' in issue) expected = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  if (issue.code === 'invalid_union' && issue.path.at(-1) !== 'type') {
    const type = (got as { type?: unknown } | undefined)?.type;
    if (type !== undefined) expected = 'expected "type" to be one of "openai", "anthropic", "openai-compatible", "scripted"';
  }
  expected = expected.replace(/^Invalid input: /, '').replace(/^Too small: /, '').replace(/^Too big: /, '');
  return `${where}: ${expected}, got ${show(got)}`;
}

/** The keys an object schema knows at `path`, for "did you mean" hints. */
function knownKeys(schema: z.ZodType, path: readonly PathPart[]): string[] {
  let current: unknown = schema;
  const unwrap = (s: any): any => {
    while (s && (s.def?.type === 'optional' || s.def?.type === 'default' || s.def?.type === 'nullable')) s = s.def.innerType;
    return s;
  };
  for (const part of path) {
    const s = unwrap(current);
    if (typeof part === 'number') current = s?.def?.element;
    else if (s?.def?.type === 'record') current = s.def.valueType;
    else current = s?.def?.shape?.[part as string];
  }
  const shape = unwrap(current)?.def?.shape;
  return shape ? Object.keys(shape) : [];
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
      problems.push(`${at}: unknown model provider "${providerName}" in "${model}" (configured under models.providers: ${known.length ? known.join(', ') : 'none'})`);
    } else if (provider.type === 'scripted' && !provider.models[modelId]) {
      problems.push(`${at}: scripted model "${modelId}" is not defined under models.providers.${providerName}.models (defined: ${Object.keys(provider.models).join(', ') || 'none'})`);
    }
  });
  const defaults = config.agents.list.filter((agent) => agent.default);
  if (defaults.length > 1) problems.push(`agents.list: more than one agent has "default: true" (${defaults.map((a) => a.id).join(', ')})`);
  config.bindings.forEach((binding, index) => {
    if (!seen.has(binding.agentId)) problems.push(`bindings[${index}].agentId: unknown agent "${binding.agentId}" (agents: ${[...seen.keys()].join(', ')})`);
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
  if (server.enabled && server.requireAuth && server.peers.length === 0) {
    problems.push('a2a.server.peers: the A2A server requires credentials and has no peers; add peers, or set a2a.server.requireAuth: false to let anyone in');
  }
  return problems;
}
