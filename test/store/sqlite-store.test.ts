import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { describeStoreContract } from './store-contract.js';

describeStoreContract('sqlite (file, WAL)', () => SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-store-')), 'test.db') }));
describeStoreContract('sqlite (memory)', () => SqliteStore.open({ path: ':memory:' }));
