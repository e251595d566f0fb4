/**
 * Tool arguments are defined once, with zod: the same schema gives the JSON Schema the model is shown
 * and validates what the model sent. A bad argument is refused with one line naming it ("timeoutSeconds
 * must be a number from 0 to 3600"), as data the model can read and correct.
 */
import { z } from 'zod';

const expected = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`);

export const text = () => z.string({ error: expected('a string') });

export const number = (min: number, max: number) => {
  const range = `a number from ${min} to ${max}`;
  return z.number({ error: expected(range) }).min(min, { error: `must be ${range}` }).max(max, { error: `must be ${range}` });
};

export const textList = (min: number, max: number, what = 'strings') => {
  const list = `a list of ${min} to ${max} ${what}`;
  return z.array(z.string({ error: `must be ${list}` }), { error: expected(list) }).min(min, { error: `must be ${list}` }).max(max, { error: `must be ${list}` });
};

export const choice = <T extends string>(values: readonly [T, ...T[]]) => z.enum(values, { error: expected(`one of ${values.join(', ')}`) });

export const flag = () => z.boolean({ error: expected('true or false') });

export type ToolArgs = z.ZodObject;

/** JSON Schema keywords left out of what the model is shown: they are checked, and a breach is explained. */
const UNSHOWN = new Set(['$schema', 'minimum', 'maximum', 'minItems', 'maxItems', 'additionalProperties', 'propertyNames']);

function shown(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shown);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !UNSHOWN.has(key)).map(([key, inner]) => [key, key === 'properties' ? mapValues(inner, shown) : shown(inner)]));
}

const mapValues = (object: unknown, map: (value: unknown) => unknown) => Object.fromEntries(Object.entries(object as Record<string, unknown>).map(([key, value]) => [key, map(value)]));

/**
 * What the model is shown: names, types, enums and descriptions. Ranges and sizes are left out, because
 * every character is sent again with every model call; they are checked, and a breach is explained.
 */
export function toolJsonSchema(schema: ToolArgs): Record<string, unknown> {
  return shown(z.toJSONSchema(schema)) as Record<string, unknown>;
}

/**
 * The model's arguments checked against the schema. Models send `null` or `""` for an argument they
 * mean to leave out, so those count as absent.
 */
export function parseToolArgs<T extends ToolArgs>(schema: T, args: unknown): { ok: true; value: z.infer<T> } | { ok: false; error: string } {
  const given = args && typeof args === 'object' && !Array.isArray(args) ? Object.fromEntries(Object.entries(args).filter(([, value]) => value !== null && value !== '')) : {};
  const parsed = schema.safeParse(given);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  const path = issue.path.join('.');
  return { ok: false, error: path ? `${path} ${issue.message}` : issue.message };
}
