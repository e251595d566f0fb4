/**
 * The store contract against PostgreSQL, each test in a fresh schema. Needs a server at
 * SWITCHBOARD_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/test); .ci/run starts one. Outside CI
 * the suite is skipped, with a note, when no server answers; in CI (CI=true) it always runs.
 */
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { afterAll, describe, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { describeStoreContract } from './store-contract.js';
import { describeBoardContract } from './board-contract.js';
import { describeMemoryContract } from './memory-contract.js';
import { describeMailboxContract } from './mailbox-contract.js';
import { describeChannelsContract } from './channels-contract.js';
import { describeStepsContract } from './steps-contract.js';
import { describeGatesContract } from './gates-contract.js';
import { describeSchedulesContract } from './schedules-contract.js';

const url = POSTGRES_URL;

if (process.env.CI || (await postgresReachable())) {
  const schemas: string[] = [];
  let counter = 0;
  const open = () => {
    const schema = `sb_test_${process.pid}_${++counter}`;
    schemas.push(schema);
    return PostgresStore.open({ connectionString: url, schema, maxConnections: 4 });
  };
  describeStoreContract('postgres', open);
  describeBoardContract('postgres', open);
  describeMemoryContract('postgres', open);
  describeMailboxContract('postgres', open);
  describeChannelsContract('postgres', open);
  describeStepsContract('postgres', open);
  describeGatesContract('postgres', open);
  describeSchedulesContract('postgres', open);
  afterAll(async () => {
    await dropSchemas(...schemas);
  });
} else {
  describe('store contract: postgres', () => {
    it.skip(`no PostgreSQL server at ${url} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
