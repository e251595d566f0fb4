/**
 * Queries compiled once. Kysely builds and compiles a query anew on every call, which on SQLite costs more
 * than running most of ours. A hot query of a fixed shape is built and compiled the first time for each
 * dialect, with a marker in place of each parameter; later calls only bind the parameters.
 */
import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './kysely-rows.js';

const MARK = '\u0000sb-param:';

interface Compiled<R> {
  query: CompiledQuery<R>;
  /** For each of the query's parameters, the name it is bound from, or undefined for a constant. */
  slots: (string | undefined)[];
}

/**
 * A query run as `run(db, { name: value })`, where `build` made it with `param('name')` in place of each
 * value. A value used twice is bound twice. `build` must give the same shape for every call: no
 * conditions that depend on a parameter, and no lists whose length varies.
 */
export function prepared<P extends string, R>(build: (db: Db, param: (name: P) => never) => Compilable<R>) {
  const byDialect = new WeakMap<object, Compiled<R>>();
  return async (db: Db, params: Record<P, unknown>): Promise<R[]> => {
    const adapter = db.getExecutor().adapter;
    let compiled = byDialect.get(adapter);
    if (!compiled) {
      compiled = compile(db, build);
      byDialect.set(adapter, compiled);
    }
    const { query, slots } = compiled;
    const parameters = slots.map((slot, i) => (slot === undefined ? query.parameters[i] : params[slot as P]));
    return (await db.executeQuery<R>({ ...query, parameters })).rows;
  };
}

function compile<P extends string, R>(db: Db, build: (db: Db, param: (name: P) => never) => Compilable<R>): Compiled<R> {
  const query = build(db, (name) => `${MARK}${name}` as never).compile();
  if (query.sql.includes(MARK)) throw new Error(`a prepared query must not inline its parameters: ${query.sql}`);
  const slots = query.parameters.map((value) => (typeof value === 'string' && value.startsWith(MARK) ? value.slice(MARK.length) : undefined));
  return { query, slots };
}
