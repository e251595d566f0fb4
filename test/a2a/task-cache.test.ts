/**
 * The A2A task cache: one store write per task state change, loads and push configs read from the copy
 * while the task is active, and what is read after the task left the active states comes from the store.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActiveTaskCache, LINGER_MS } from '../../src/a2a/task-cache.js';
import type { A2ATaskStore } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

let store: SqliteStore;
let calls: Record<string, number>;
let cache: ActiveTaskCache;
let now: number;

/** The store's A2A tasks, counting the calls that reach them. */
function counted(tasks: A2ATaskStore): A2ATaskStore {
  return new Proxy(tasks, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls[String(name)] = (calls[String(name)] ?? 0) + 1;
        return value.apply(target, args);
      };
    },
  });
}

const task = (state: string, chunks: string[] = []) => ({
  id: 't1',
  agentId: 'echo',
  contextId: 'c1',
  owner: 'peer',
  state,
  task: { id: 't1', contextId: 'c1', status: { state }, artifacts: chunks.map((text) => ({ artifactId: 'a', parts: [{ text }] })) },
});

beforeEach(async () => {
  store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-task-cache-')), 'db.sqlite') });
  calls = {};
  now = 1_000_000;
  cache = new ActiveTaskCache(counted(store.a2aTasks), { now: () => now });
});
afterEach(async () => {
  await store.close();
});

describe('A2A task cache', () => {
  it('a working task streaming chunks is written once per state; loads and push configs come from the copy', async () => {
    await cache.save(task('TASK_STATE_SUBMITTED'), 1);
    await cache.save(task('TASK_STATE_WORKING'), 2);
    for (let i = 1; i <= 5; i += 1)
      await cache.save(
        task(
          'TASK_STATE_WORKING',
          Array.from({ length: i }, (_, n) => `chunk ${n}`),
        ),
        2 + i,
      );
    for (let i = 0; i < 5; i += 1) {
      expect(await cache.get('t1')).toMatchObject({ state: 'TASK_STATE_WORKING', task: { artifacts: { length: 5 } } });
      expect(await cache.listPushConfigs('t1')).toEqual([]);
    }
    expect(calls.save).toBe(2);
    // The store has the last state change, not the chunks streamed since.
    expect(await store.a2aTasks.get('t1')).toMatchObject({ state: 'TASK_STATE_WORKING', task: { artifacts: [] } });
    expect(calls.listPushConfigs).toBe(1);

    await cache.save(task('TASK_STATE_COMPLETED', ['the answer']), 10);
    expect(calls.save).toBe(3);
    expect(await store.a2aTasks.get('t1')).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
      task: { artifacts: [{ parts: [{ text: 'the answer' }] }] },
    });
    // The loads that follow the last event (the task, its push configs) still come from here...
    expect(await cache.get('t1')).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
      task: { artifacts: [{ parts: [{ text: 'the answer' }] }] },
    });
    expect(await cache.listPushConfigs('t1')).toEqual([]);
    expect(calls.get ?? 0).toBe(0);
    expect(calls.listPushConfigs).toBe(1);
    // ...and once it has lingered, from the store.
    now += LINGER_MS;
    expect(await cache.get('t1')).toMatchObject({ state: 'TASK_STATE_COMPLETED' });
    expect(await cache.listPushConfigs('t1')).toEqual([]);
    expect(calls).toMatchObject({ get: 1, listPushConfigs: 2 });
  });

  it('a push config saved or deleted through the cache is seen at once', async () => {
    await cache.save(task('TASK_STATE_WORKING'), 1);
    expect(await cache.listPushConfigs('t1')).toEqual([]);
    await cache.savePushConfig(
      { taskId: 't1', configId: 'p1', owner: 'peer', config: { url: 'http://127.0.0.1:9/hook' }, wireVersion: '1.0' },
      2,
    );
    expect((await cache.listPushConfigs('t1')).map((config) => config.configId)).toEqual(['p1']);
    await cache.deletePushConfig('t1', 'p1');
    expect(await cache.listPushConfigs('t1')).toEqual([]);
  });

  it('flush writes the chunks not yet in the store (at shutdown)', async () => {
    await cache.save(task('TASK_STATE_WORKING'), 1);
    await cache.save(task('TASK_STATE_WORKING', ['partial']), 2);
    expect(await store.a2aTasks.get('t1')).toMatchObject({ task: { artifacts: [] } });
    await cache.flush();
    expect(await store.a2aTasks.get('t1')).toMatchObject({
      state: 'TASK_STATE_WORKING',
      task: { artifacts: [{ parts: [{ text: 'partial' }] }] },
    });
  });

  it('the session and input a task became are seen on the cached copy', async () => {
    await cache.save(task('TASK_STATE_WORKING'), 1);
    await cache.attachInput({ id: 't1', agentId: 'echo', contextId: 'c1', owner: 'peer' }, 'agent:echo:a2a:peer:c1', 'in-1', 'gw-1', 2);
    expect(await cache.get('t1')).toMatchObject({ sessionKey: 'agent:echo:a2a:peer:c1', inputId: 'in-1' });
    expect(await store.a2aTasks.get('t1')).toMatchObject({ sessionKey: 'agent:echo:a2a:peer:c1', inputId: 'in-1' });
  });
});
