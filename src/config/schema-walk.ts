/** Walking the config's zod schema by path: for "did you mean" hints and to find the fields marked secret. */
import { configSchema, secretSchemas } from './schema.js';

export type PathPart = string | number | symbol;

// biome-ignore lint/suspicious/noExplicitAny: zod's internal definitions are walked by shape.
export type AnySchema = any;

const WRAPPERS = ['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch'];

/** The schema inside optional, default, prefault and nullable wrappers. */
export function unwrap(schema: AnySchema): AnySchema {
  let inner = schema;
  while (inner && WRAPPERS.includes(inner.def?.type)) inner = inner.def.innerType;
  return inner;
}

/** The wrappers and the schema itself, outermost first. */
export function layers(schema: AnySchema): AnySchema[] {
  const found: AnySchema[] = [];
  let inner = schema;
  while (inner) {
    found.push(inner);
    inner = WRAPPERS.includes(inner.def?.type) ? inner.def.innerType : undefined;
  }
  return found;
}

/** The schemas the config schema has at `path` (more than one under a union), for hints and secrets. */
export function schemasAt(path: readonly PathPart[]): AnySchema[] {
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
export function isSecret(path: readonly PathPart[]): boolean {
  return path.some((_, index) =>
    schemasAt(path.slice(0, index + 1)).some((schema) => layers(schema).some((layer) => secretSchemas.has(layer))),
  );
}
