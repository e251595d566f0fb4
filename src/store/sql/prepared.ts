/**
 * Queries compiled once. Kysely builds and compiles a query anew on every call, which on SQLite costs more
 * than running most of ours. A hot query of a fixed shape is built and compiled the first time for each
 * dialect, with a marker in place of each parameter; later calls only bind the parameters.
 */
import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './rows.js';

const MARK = '\u0000sb-param:';
const INDEX = '\u0001';

interface Compiled<R> {
  query: CompiledQuery<R>;
  /** For each of the query's parameters, where it is bound from (a name, and an index into a list), or undefined for a constant. */
  slots: ({ name: string; index?: number } | undefined)[];
}

/**
 * A query run as `run(db, { name: value })`, where `build` made it with `param('name')` in place of each
 * value. A value used twice is bound twice. `build` must give the same shape for every call: no
 * conditions that depend on a parameter, and no lists whose length varies (see `preparedPerCount`).
 */
export function prepared<P extends string, R>(build: (db: Db, param: (name: P) => never) => Compilable<R>) {
  const run = preparedPerCount<P, never, R>((db, _count, param) => build(db, param), 1);
  return (db: Db, params: Record<P, unknown>): Promise<R[]> => run(db, 1, params as Record<P, unknown> & Record<never, readonly unknown[]>);
}

/**
 * A query whose shape depends on a count (an `IN` list, a multi-row insert), compiled once per count up to
 * `maxCount` (a larger count is built anew, as Kysely would). `build` puts `item('name', i)` for the i-th
 * value of the list `name`, and `param('name')` for a single value; a call gives the lists as arrays of
 * at least `count` values.
 */
export function preparedPerCount<P extends string, L extends string, R>(
  build: (db: Db, count: number, param: (name: P) => never, item: (name: L, index: number) => never) => Compilable<R>,
  maxCount = 8,
) {
  const byDialect = new WeakMap<object, Map<number, Compiled<R>>>();
  return async (db: Db, count: number, params: Record<P, unknown> & Record<L, readonly unknown[]>): Promise<R[]> => {
    const adapter = db.getExecutor().adapter;
    let byCount = byDialect.get(adapter);
    if (!byCount) byDialect.set(adapter, (byCount = new Map()));
    let compiled = byCount.get(count);
    if (!compiled) {
      compiled = compile(db, count, build);
      if (count <= maxCount) byCount.set(count, compiled);
    }
    const { query, slots } = compiled;
    const values = params as Record<string, unknown>;
    const parameters = slots.map((slot, i) =>
      slot === undefined
        ? query.parameters[i]
        : slot.index === undefined
          ? values[slot.name]
          : (values[slot.name] as unknown[])[slot.index],
    );
    return (await db.executeQuery<R>({ ...query, parameters })).rows;
  };
}

function compile<P extends string, L extends string, R>(
  db: Db,
  count: number,
  build: (db: Db, count: number, param: (name: P) => never, item: (name: L, index: number) => never) => Compilable<R>,
): Compiled<R> {
  const query = build(
    db,
    count,
    (name) => `${MARK}${name}` as never,
    (name, index) => `${MARK}${name}${INDEX}${index}` as never,
  ).compile();
  if (query.sql.includes(MARK)) throw new Error(`a prepared query must not inline its parameters: ${query.sql}`);
  const slots = query.parameters.map((value) => {
    if (typeof value !== 'string' || !value.startsWith(MARK)) return undefined;
    const [name, index] = value.slice(MARK.length).split(INDEX);
    return index === undefined ? { name } : { name, index: Number(index) };
  });
  return { query, slots };
}
