/** The A2A task store answers the store's failures in the SDK's terms, never in the database's words. */
import { expect, it } from 'vitest';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { GatewayTaskStore } from '../../src/a2a/task-store.js';
import type { A2ATaskStore } from '../../src/ports/index.js';

const failingWith = (code: string) =>
  ({
    save: async () => {
      throw Object.assign(new Error('value too long for type character varying(128) in relation a2a_tasks'), { code });
    },
  }) as unknown as A2ATaskStore;

const task = { id: 't', contextId: 'c', status: undefined, artifacts: [], history: [], metadata: {} };

it('a value the store cannot keep is invalid parameters; a store failure is internal, in the gateway words', async () => {
  const tooLong = new GatewayTaskStore(failingWith('22001'), 'echo', { now: () => 0 }, 'gw-test');
  const refused = await tooLong.save(task as never, new ServerCallContext()).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(RequestMalformedError);
  expect((refused as Error).message).toBe(
    'a value in the request is not one the store can keep (22001: too long, out of range or badly encoded); nothing was changed by it',
  );
  const down = new GatewayTaskStore(failingWith('08006'), 'echo', { now: () => 0 }, 'gw-test');
  const failed = (await down.save(task as never, new ServerCallContext()).catch((error: unknown) => error)) as Error;
  expect(failed.message).not.toContain('varchar');
  expect(failed.message).toMatch(/^the store could not take this request \(08006\)/);
});

it('a request the store did not take is told to the listener with its cause (the A2A server logs it); a bad value is not', async () => {
  const heard: unknown[] = [];
  const listener = (failure: { details?: Record<string, unknown> }, error: unknown) =>
    heard.push([failure.details?.cause, (error as Error).message]);
  const down = new GatewayTaskStore(failingWith('57P01'), 'echo', { now: () => 0 }, 'gw-test', async () => {}, listener);
  await down.save(task as never, new ServerCallContext()).catch(() => {});
  const tooLong = new GatewayTaskStore(failingWith('22001'), 'echo', { now: () => 0 }, 'gw-test', async () => {}, listener);
  await tooLong.save(task as never, new ServerCallContext()).catch(() => {});
  expect(heard).toEqual([['57P01', 'value too long for type character varying(128) in relation a2a_tasks']]);
});
