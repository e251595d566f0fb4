/** The one dialect difference the portable DDL has: an auto-incrementing integer key. */
import type { CreateTableBuilder } from 'kysely';

export type SqlDialectName = 'sqlite' | 'postgres';

export function serialKey<T extends string>(table: CreateTableBuilder<T, never>, column: string, dialect: SqlDialectName) {
  return dialect === 'sqlite'
    ? table.addColumn(column, 'integer', (col) => col.primaryKey().autoIncrement())
    : table.addColumn(column, 'bigserial', (col) => col.primaryKey());
}
