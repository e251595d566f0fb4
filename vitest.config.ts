import { defineConfig } from 'vitest/config';
import { OWN_DATABASE_ENV, testDatabase } from './test/helpers/test-database.js';

// A PostgreSQL database of this run's own, made by the global setup and dropped at the end (test/helpers/test-database.ts).
const database = testDatabase(process.env);
if (database[OWN_DATABASE_ENV]) process.env[OWN_DATABASE_ENV] = database[OWN_DATABASE_ENV];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/helpers/test-database.ts'],
    env: database,
  },
});
