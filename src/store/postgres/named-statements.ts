/**
 * Server-side prepared statements for the store's queries on PostgreSQL (`store.preparedStatements`).
 *
 * Kysely sends every query as an unnamed statement, which PostgreSQL parses and plans anew each time; for the
 * store's short lookups that is half the backend's work (measured in BENCHMARKS.md). The store's queries come from a
 * small set of SQL texts, so a text with parameters seen a second time gets a name of its own, and each connection
 * parses it once under that name and then only binds and executes it. Names are never given to another text, and at
 * most `maxNames` texts are named (each is kept by every connection of the pool, in the server's memory); the rest go
 * unnamed, as before.
 *
 * A named statement's result columns are fixed when it is parsed. A migration that changes a table under a running
 * gateway (a newer gateway migrating the shared schema) makes PostgreSQL refuse such a statement ("cached plan must not
 * change result type"): the statement that meets it fails once, and every text is named afresh from then on.
 */
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/** PostgreSQL's feature_not_supported, which is what a prepared statement whose result type changed fails with. */
const STALE_PLAN = '0A000';

export class StatementNames {
  private readonly names = new Map<string, string>();
  /** Texts seen once so far: named at their second sighting, so that one-off statements (migrations) never are. */
  private readonly seenOnce = new Set<string>();
  /** Bumped when a named statement went stale: later names are new, so every connection parses them again. */
  private generation = 0;
  private next = 0;

  constructor(private readonly maxNames = 500) {}

  /** The name to send `text` under, or undefined to send it unnamed. */
  nameOf(text: string, parameters: number): string | undefined {
    if (parameters === 0) return undefined;
    const name = this.names.get(text);
    if (name !== undefined || this.names.size >= this.maxNames) return name;
    if (!this.seenOnce.has(text)) {
      // Bounded like the names: past that many one-off texts, start counting afresh.
      if (this.seenOnce.size >= this.maxNames * 4) this.seenOnce.clear();
      this.seenOnce.add(text);
      return undefined;
    }
    this.seenOnce.delete(text);
    const named = `sb_${this.generation}_${this.next++}`;
    this.names.set(text, named);
    return named;
  }

  /** A query under a name failed: when its plan went stale, every text is named afresh. */
  failed(error: unknown): void {
    const { code, message } = error as { code?: string; message?: string };
    if (code === STALE_PLAN && message?.includes('cached plan')) {
      this.names.clear();
      this.generation += 1;
    }
  }

  get size(): number {
    return this.names.size;
  }
}

/** `pool` as Kysely's PostgresDialect takes it, its queries sent under the names `names` gives them. */
export function withNamedStatements(pool: pg.Pool, names: StatementNames): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    // One function for both of Kysely's overloads (a query, or a cursor), so typed as neither.
    query: ((text: unknown, parameters?: readonly unknown[]) => {
      // A cursor (Kysely's streaming) goes through as it is.
      if (typeof text !== 'string') return client.query(text as never);
      const values = parameters ? [...parameters] : [];
      const name = names.nameOf(text, values.length);
      if (name === undefined) return client.query(text, values);
      return client.query({ name, text, values }).catch((error: unknown) => {
        names.failed(error);
        throw error;
      });
    }) as unknown as PostgresPoolClient['query'],
    release: (destroy?: boolean) => client.release(destroy),
  });
  return {
    async connect() {
      const client = await pool.connect();
      let connection = wrapped.get(client);
      if (!connection) wrapped.set(client, (connection = wrap(client)));
      return connection;
    },
    end: () => pool.end(),
  };
}
