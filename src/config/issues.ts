/**
 * A schema problem as one line for a person: `<path>: <what was expected>, got <value>`, with a "did you mean" for
 * an unknown key, and a secret described (its length), never shown.
 */
import type { z } from 'zod';
import { isSecret, schemasAt, unwrap, type PathPart } from './schema-walk.js';

export function formatPath(path: readonly PathPart[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

export function valueAt(root: unknown, path: readonly PathPart[]): unknown {
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

export function formatIssue(issue: z.core.$ZodIssue, root: unknown): string {
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
  // A bad key is named by the path; the value under it (an account holding its token, say) is not shown.
  if (issue.code === 'custom' || issue.code === 'invalid_key') return `${where}: ${expected}`;
  return `${where}: ${expected}, got ${isSecret(issue.path) ? secretShown(got) : show(got)}`;
}

/** A secret is described, never shown, not even in part. */
function secretShown(value: unknown): string {
  return typeof value === 'string'
    ? `a secret of ${value.length} characters (not shown)`
    : `a ${Array.isArray(value) ? 'list' : typeof value} (not shown)`;
}

/** The candidate nearest to `word` (a typo of it), or undefined when none is near: for "did you mean" hints. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
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
