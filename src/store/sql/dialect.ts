/**
 * What differs between the engines, behind one object: the shared stores and migrations call these methods and never
 * ask which engine they run on. SQLite has one writer, so its transactions already take turns and its locks are
 * no-ops; PostgreSQL runs many writers at once (several gateways on one database), so it locks what they race on.
 * The adapters hand theirs in: sqlite/sqlite-dialect.ts and postgres/postgres-dialect.ts.
 */
import type { CreateTableBuilder, Kysely, RawBuilder, SelectQueryBuilder } from 'kysely';
import type { Database } from '../schema/database.js';
import type { Db } from './rows.js';

/** Contract: how far a sequence-numbered log can be read without skipping a row that commits late (settled-point.ts). */
export interface SettledPoint {
  read(): Promise<{ seq: number; unsettled: boolean }>;
}

/** One hit of a memory search, as the engine's full-text query answers it. */
export interface MemoryHitRow {
  agent_id: string;
  path: string;
  start_line: number;
  end_line: number;
  text: string;
  modified_at: number;
  source: string;
  score: number;
}

export interface SqlDialect {
  /** The engine's name, for messages only: behaviour goes through the methods below. */
  readonly name: 'sqlite' | 'postgres';
  /** The database clock in epoch milliseconds, as an SQL expression (lease time comes from the database). */
  nowMs(): RawBuilder<number>;
  /** Adds an auto-incrementing integer primary key. */
  serialKey<T extends string>(table: CreateTableBuilder<T, never>, column: string): CreateTableBuilder<T, never>;
  /** The part of migration `name` that is this engine's alone, run after its shared part (nothing where it has none). */
  migrationStep(name: string, db: Kysely<unknown>): Promise<void>;
  /** The read, holding the rows it selects until the transaction ends (FOR UPDATE), so racing writers take turns. */
  lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** As lockRows, passing over rows another transaction holds, so concurrent claimers take different rows. */
  lockRowsSkipLocked<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** The read, keeping the rows it selects from changing until the transaction ends (FOR SHARE). */
  shareRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** Serialises the transactions that take `name` until the current one ends (an advisory lock). */
  lockName(db: Db, name: string): Promise<void>;
  /** A lock the current transaction waits for longer than `ms` fails it with LOCK_NOT_AVAILABLE (55P03). */
  limitLockWait(db: Db, ms: number): Promise<void>;
  /** How far the log numbered by `sequence` is settled; `latest` reads its newest number. */
  settledPoint(db: Kysely<Database>, sequence: string, latest: () => Promise<number>): SettledPoint;
  /** After rows were copied in with their numbers: the table's next number comes after them. */
  continueNumbering(db: Kysely<Database>, table: string): Promise<void>;
  /** The memory chunks that match any of `words`, best first, among the rows `scopes` lets through. */
  searchMemory(db: Kysely<Database>, words: string[], scopes: RawBuilder<unknown>, limit: number): Promise<MemoryHitRow[]>;
}
