/** Schemas whose values are secrets: no error message shows them (load.ts), and the redactor takes them out (secrets.ts). */
import { z } from 'zod';

export const secretSchemas = new WeakSet<z.ZodType>();

export const secret = <T extends z.ZodType>(schema: T): T => {
  secretSchemas.add(schema);
  return schema;
};

export const secretString = () => secret(z.string());

/**
 * Maps (an MCP server's `env`, `headers`) whose values are never shown in a config error, but are secrets for the
 * redactor only when their key is named like one, or when they are given as `${ENV}` (secrets.ts): `MODE:
 * "production"` is not a secret, `API_KEY: "..."` and `MODE: "${MODE}"` are.
 */
export const namedSecretMaps = new WeakSet<z.ZodType>();

export const namedSecretMap = () => {
  const schema = z.record(z.string(), secretString());
  namedSecretMaps.add(schema);
  return schema;
};

/** Header values carry credentials as often as not. */
export const headers = () => namedSecretMap().optional();

/**
 * What `${ENV}` references put into a config's maps: the object, then its key, then the values the variables gave.
 * Kept beside the parsed config (load.ts writes it) so that a reload moving a section keeps its marks.
 */
const fromEnv = new WeakMap<object, Map<string, string[]>>();

export function markFromEnv(parent: object, key: string, values: readonly string[]): void {
  const marks = fromEnv.get(parent) ?? new Map<string, string[]>();
  marks.set(key, [...(marks.get(key) ?? []), ...values]);
  fromEnv.set(parent, marks);
}

/** The values `${ENV}` references gave to `parent[key]`, if any. */
export function envValuesAt(parent: object, key: string): readonly string[] {
  return fromEnv.get(parent)?.get(key) ?? [];
}
