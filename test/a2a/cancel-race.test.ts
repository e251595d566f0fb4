/**
 * A CancelTask that arrives while the executor is still recording which input the task's message became:
 * the task then has no input to cancel, so the executor must stop the input itself once it knows it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role, type Message } from '@a2a-js/sdk';
import type { ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { afterEach, expect, it } from 'vitest';
import { GatewayAgentExecutor, textPart } from '../../src/a2a/executor.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

it("a cancel that comes before the task has recorded its input still stops the input's run", async () => {
  const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-a2a-cancel-')), 'test.db') });
  gateway = await startTestGateway(
    `{ agents: { list: [{ id: "slow", model: "scripted/slow" }] }, models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [{ delayMs: 5000, reply: "late" }] } } } } } }`,
    {},
    store,
  );
  const tasks = store.a2aTasks;
  // Hold the executor inside attachInput until the cancel has come.
  let attaching!: (inputId: string) => void;
  const attachStarted = new Promise<string>((resolve) => (attaching = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const attach = tasks.attachInput.bind(tasks);
  tasks.attachInput = async (task, sessionKey, inputId, executor, now) => {
    attaching(inputId);
    await released;
    return attach(task, sessionKey, inputId, executor, now);
  };

  const executor = new GatewayAgentExecutor(gateway, 'slow', tasks, { now: () => Date.now() }, 60_000);
  const bus = { publish: () => {}, finished: () => {} } as unknown as ExecutionEventBus;
  const message: Message = {
    messageId: 'm-1',
    contextId: 'c-1',
    taskId: 't-1',
    role: Role.ROLE_USER,
    parts: [textPart('take your time')],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
  const context = { taskId: 't-1', contextId: 'c-1', userMessage: message, context: {}, task: undefined } as unknown as RequestContext;
  const executing = executor.execute(context, bus);

  const inputId = await attachStarted;
  const runId = await waitUntil("the input's run is running", async () => {
    const input = await store.inputs.get(inputId);
    return input?.runId && (await store.runs.get(input.runId))?.status === 'running' ? input.runId : undefined;
  });
  await executor.cancelTask('t-1', bus);
  release();
  await executing;

  // Without the fix the run went on for its 5 seconds and succeeded.
  expect((await store.runs.get(runId))?.status).toBe('cancelled');
  // Done executing, but the SDK may not have saved the final state yet: the task watch must still leave it alone.
  expect(executor.active.has('t-1')).toBe(false);
  expect(executor.handles('t-1')).toBe(true);
});
