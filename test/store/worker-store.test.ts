import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../../src/core/errors.js';
import { openWorkerStore } from '../../src/store/worker/worker-store.js';
import { fromWire, toWire } from '../../src/store/worker/wire.js';
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

  it('close settles every call: one in flight is answered or refused, never left waiting; one made after it, even in the same turn, is refused with GATEWAY_STOPPING', async () => {
    const store = await openWorkerStore({ path: ':memory:' });
    await store.sessions.ensure({ key: 'agent:a:x:direct:p', agentId: 'a' }, 1);
    const settled = (call: Promise<unknown>) =>
      call.then(
        () => 'answered',
        (error: unknown) => error,
      );
    const inFlight = settled(store.sessions.get('agent:a:x:direct:p'));
    const closed = store.close();
    const after = [store.sessions.get('agent:a:x:direct:p'), store.durable()].map(settled);
    await closed;
    after.push(settled(store.sessions.get('agent:a:x:direct:p')));
    expect(await inFlight).toBeDefined();
    for (const refused of await Promise.all(after))
      expect(SwitchboardError.isInstance(refused) && refused.toJSON()).toEqual({
        code: 'GATEWAY_STOPPING',
        message: 'the store is closed: the gateway is stopping',
      });
  });

  it("an error crosses with its code, details and cause; a cause's own cause too", () => {
    const driver = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    const failed = new SwitchboardError('STORE_FAILED', 'could not make the commit durable', { attempt: 1 });
    failed.cause = Object.assign(new Error('fdatasync failed'), { cause: driver });
    const crossed = fromWire(toWire(failed));
    expect(crossed).toBeInstanceOf(SwitchboardError);
    expect((crossed as SwitchboardError).toJSON()).toEqual(failed.toJSON());
    expect((crossed.cause as Error).message).toBe('fdatasync failed');
    expect(((crossed.cause as Error).cause as Error & { code: string }).code).toBe('SQLITE_IOERR');
  });
});
