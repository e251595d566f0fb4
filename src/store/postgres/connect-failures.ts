/**
 * A failure to get a connection from the pool (the server down or restarting, a refused login, the pool exhausted
 * past its timeout) is always the store failing, never the request: reported as STORE_FAILED with the driver's code,
 * the original error as its `cause`. Done here because a refused connection's code (ECONNREFUSED) is also what a
 * remote agent's refusal carries, so the edge cannot tell the two apart (docs/control-api.md, errors).
 */
import type { PostgresPool } from 'kysely';
import { storeFailed } from '../../core/errors.js';

export function connectFailuresAsStoreFailures(pool: PostgresPool): PostgresPool {
  return {
    async connect() {
      try {
        return await pool.connect();
      } catch (error) {
        const { code, message } = error as { code?: unknown; message?: unknown };
        const failure = storeFailed(typeof code === 'string' ? code : typeof message === 'string' ? message : String(error));
        failure.cause = error;
        throw failure;
      }
    },
    end: () => pool.end(),
  };
}
