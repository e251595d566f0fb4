/**
 * The store's door for the composition root (ARCHITECTURE.md section 3): opens the store the config names: SQLite (the embedded default) or PostgreSQL (docs/deploy.md). A URL that does
 * not parse, a server that does not answer, a wrong password or a missing database is one line saying which and
 * what to check, never a stack; the URL's password never appears in it.
 */
import { SwitchboardError } from '../../core/errors.js';
import type { Clock, Store } from '../../ports/index.js';
import type { AnalyzeMode } from '../postgres/table-statistics.js';
import type { SqliteStoreOptions } from '../sqlite/sqlite-store.js';

export interface StoreSelection {
  driver: 'sqlite' | 'postgres';
  /** PostgreSQL's connection URL; a postgres:// URL also selects the driver. */
  url?: string;
  schema: string;
  maxConnections: number;
  /** PostgreSQL: how long a transaction may sit idle before the server ends it (half a lease's lifetime). */
  idleTransactionTimeoutMs?: number;
  /** PostgreSQL: server-side prepared statements for the store's repeated queries (default true). */
  preparedStatements?: boolean;
  /** PostgreSQL: analyze the store's tables when the server's autovacuum is off (`auto`, the default) or never. */
  analyze?: AnalyzeMode;
  /** PostgreSQL: where a failure of the store's background work goes (signals, statistics: the gateway's log). */
  onBackgroundError?: (error: unknown) => void;
  sqlite: SqliteStoreOptions;
  /** SQLite: run the store on the gateway's thread (`main`, the default) or on a worker thread of its own (`worker`). */
  sqliteThread?: 'worker' | 'main';
  /** SQLite on a worker thread: the thread died (a crash in the store's code), so nothing more can be stored. */
  onStoreStopped?: (error: Error) => void;
  /** Where the URL came from, for the error lines: `store.url`, `SWITCHBOARD_STORE_URL` or `--store`. */
  urlSource?: string;
}

export interface OpenedStore {
  store: Store;
  driver: 'sqlite' | 'postgres';
  /** The database's clock on PostgreSQL (several gateways keep one time); undefined on SQLite. */
  clock?: Clock;
  /** PostgreSQL: the gateway analyzes the store's tables itself, the server's autovacuum being off. */
  analyzing?: boolean;
}

export class StoreOpenError extends Error {
  override readonly name = 'StoreOpenError';
}

export const isPostgresUrl = (url: string) => /^postgres(ql)?:\/\//i.test(url);

export async function openStore(selection: StoreSelection): Promise<OpenedStore> {
  const driver = selection.url && isPostgresUrl(selection.url) ? 'postgres' : selection.driver;
  if (driver === 'sqlite') {
    if (selection.url)
      throw new StoreOpenError(
        `${selection.urlSource ?? 'store.url'}: "${safeUrl(selection.url)}" is not a PostgreSQL URL (expected postgres://user:password@host:5432/database)`,
      );
    // The store's modules load where it runs: on a worker thread, they load there, beside the gateway's own.
    if (selection.sqliteThread !== 'worker') {
      const { SqliteStore } = await import('../sqlite/sqlite-store.js');
      return { store: await SqliteStore.open(selection.sqlite), driver };
    }
    const { openWorkerStore } = await import('../worker/worker-store.js');
    return { store: await openWorkerStore(selection.sqlite, selection.onStoreStopped), driver };
  }
  const source = selection.urlSource ?? 'store.url';
  if (!selection.url)
    throw new StoreOpenError(
      'store.driver is postgres but no URL is set: set store.url, $SWITCHBOARD_STORE_URL or --store (postgres://user:password@host:5432/database)',
    );
  let parsed: URL;
  try {
    parsed = new URL(selection.url);
  } catch {
    throw new StoreOpenError(`${source}: not a valid URL (expected postgres://user:password@host:5432/database)`);
  }
  // pg is loaded only for PostgreSQL: the embedded default starts without it.
  const { PostgresStore } = await import('../postgres/postgres-store.js');
  try {
    const store = await PostgresStore.open({
      connectionString: selection.url,
      schema: selection.schema,
      maxConnections: selection.maxConnections,
      idleTransactionTimeoutMs: selection.idleTransactionTimeoutMs,
      preparedStatements: selection.preparedStatements,
      analyze: selection.analyze,
      onBackgroundError: selection.onBackgroundError,
    });
    return { store, driver, clock: store.clock, analyzing: store.statistics.running };
  } catch (error) {
    throw new StoreOpenError(describePostgresFailure(error, parsed, source));
  }
}

/** One line for why PostgreSQL could not be opened. */
function describePostgresFailure(failure: unknown, url: URL, source: string): string {
  // A failure to connect comes as STORE_FAILED (connect-failures.ts), the driver's error as its cause.
  const error = SwitchboardError.isInstance(failure) && failure.code === 'STORE_FAILED' && failure.cause ? failure.cause : failure;
  const { code, message } = error as { code?: string; message?: string };
  const where = `PostgreSQL at ${url.hostname}:${url.port || 5432}`;
  const database = decodeURIComponent(url.pathname.slice(1)) || '(default)';
  const user = decodeURIComponent(url.username) || '(default)';
  switch (code) {
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return `cannot reach ${where} (${code}): is the server running, and is ${source} right?`;
    case '28P01':
    case '28000':
      return `${where} refused user "${user}" (${code}: ${message}): check the user and password in ${source}`;
    case '3D000':
      return `${where} has no database "${database}": create it (createdb ${database}) or fix ${source}`;
    case '42501':
      return `${where}: user "${user}" may not create or use the store's schema (${message}): grant it, or set store.schema`;
  }
  if (error instanceof Error && error.name === 'StoreSchemaTooNew') return error.message;
  if (/timeout/i.test(message ?? '')) return `cannot reach ${where}: the connection timed out; is ${source} right?`;
  return `could not open the store on ${where}: ${message ?? String(error)}`;
}

/** The URL without its password, for messages. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
