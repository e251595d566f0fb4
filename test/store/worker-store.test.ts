import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../../src/core/errors.js';
import { openWorkerStore } from '../../src/store/worker/worker-store.js';
import { describeBoardContract } from './board-contract.js';
import { describeChannelsContract } from './channels-contract.js';
import { describeGatesContract } from './gates-contract.js';
import { describeMailboxContract } from './mailbox-contract.js';
import { describeMemoryContract } from './memory-contract.js';
import { describeSchedulesContract } from './schedules-contract.js';
import { describeStepsContract } from './steps-contract.js';
import { describeStoreContract } from './store-contract.js';

const file = (name: string) => join(mkdtempSync(join(tmpdir(), `sb-worker-${name}-`)), 'test.db');

// The same contracts as SqliteStore's, through the worker thread: every port method, its errors and its callbacks.
describeStoreContract('sqlite on a worker thread', () => openWorkerStore({ path: file('store') }));
describeMemoryContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeMailboxContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeChannelsContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeStepsContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeGatesContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeSchedulesContract('sqlite on a worker thread', () => openWorkerStore({ path: ':memory:' }));
describeBoardContract('sqlite on a worker thread', () => openWorkerStore({ path: file('board') }));

describe('sqlite on a worker thread: what only the thread adds', () => {
  it('a file another gateway holds is refused with GATEWAY_LOCKED, as on the event loop', async () => {
    const path = file('locked');
    const first = await openWorkerStore({ path, exclusive: true });
    try {
      const refused = await openWorkerStore({ path, exclusive: true }).catch((error: unknown) => error);
      expect(SwitchboardError.isInstance(refused) && refused.code).toBe('GATEWAY_LOCKED');
      expect((refused as Error).message).toContain(`another gateway is already using the database ${path}`);
    } finally {
      await first.close();
    }
  });

  it('the calls of one turn are answered each with its own result or error, in any order they finish', async () => {
    const store = await openWorkerStore({ path: ':memory:' });
    try {
      const [session, missing, lost] = await Promise.allSettled([
        store.sessions.ensure({ key: 'agent:a:x:direct:p', agentId: 'a' }, 1),
        store.sessions.get('agent:a:x:direct:nobody'),
        store.backup('relative.db'),
      ]);
      expect(session.status === 'fulfilled' && session.value).toMatchObject({ key: 'agent:a:x:direct:p', agentId: 'a' });
      expect(missing).toEqual({ status: 'fulfilled', value: undefined });
      expect(lost.status === 'rejected' && lost.reason).toBeInstanceOf(SwitchboardError);
      expect(lost.status === 'rejected' && lost.reason.toJSON()).toEqual({
        code: 'INVALID_REQUEST',
        message: 'backup path "relative.db" is not absolute',
      });
    } finally {
      await store.close();
    }
  });

  it('after close, a call is refused with GATEWAY_STOPPING instead of waiting for a thread that is gone', async () => {
    const store = await openWorkerStore({ path: ':memory:' });
    await store.close();
    const refused = await store.sessions.get('agent:a:x:direct:p').catch((error: unknown) => error);
    expect(SwitchboardError.isInstance(refused) && refused.code).toBe('GATEWAY_STOPPING');
  });
});
