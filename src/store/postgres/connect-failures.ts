/**
 * A failure of the store's connection to its database is always the store failing, never the request: failing to get
 * a connection (the server down or restarting, a refused login, the pool exhausted past its timeout), and a query
 * that fails without a SQLSTATE (node-postgres's own errors, and the socket's: ECONNRESET, EPIPE when a connection a
 * pause left behind is used). Each is reported as STORE_FAILED with the driver's code or message, the original error
 * as its `cause`. Done here because a socket's code (ECONNREFUSED, ECONNRESET) is also what a remote agent's refusal
 * carries, so the edge cannot tell the two apart (docs/control-api.md, errors). Errors with a SQLSTATE pass as they
 * are: the store and the edge read their codes.
 */
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { storeFailed, type SwitchboardError } from '../../core/errors.js';

function asStoreFailure(error: unknown): SwitchboardError {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const failure = storeFailed(typeof code === 'string' ? code : typeof message === 'string' ? message : String(error));
  failure.cause = error;
  return failure;
}

export function connectFailuresAsStoreFailures(pool: PostgresPool): PostgresPool {
  const wrapped = new WeakMap<PostgresPoolClient, PostgresPoolClient>();
  const wrap = (client: PostgresPoolClient): PostgresPoolClient => ({
    // One function for both of Kysely's overloads (a query, or a cursor, which goes through as it is).
    query: ((...args: unknown[]) => {
      const result = (client.query as (...parameters: unknown[]) => unknown)(...args);
      if (!(result instanceof Promise)) return result;
      // The server's answer (a DatabaseError, with its SQLSTATE) goes on as it is, and so does a programming error (a
      // value the driver cannot send is a TypeError or RangeError: a bug, 500 INTERNAL, not a retryable 503); anything
      // else is the connection's.
      return result.catch((error: unknown) => {
        const asItIs = error instanceof pg.DatabaseError || error instanceof TypeError || error instanceof RangeError;
        throw asItIs ? error : asStoreFailure(error);
      });
    }) as unknown as PostgresPoolClient['query'],
    release: (destroy?: boolean) => client.release(destroy),
  });
  return {
    async connect() {
      let client: PostgresPoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw asStoreFailure(error);
      }
      let connection = wrapped.get(client);
      if (!connection) wrapped.set(client, (connection = wrap(client)));
      return connection;
    },
    end: () => pool.end(),
  };
}
