/**
 * The A2A client's background followers with several gateways on one store: a remote task whose waiting run still
 * runs (on another gateway) is that run's, not followed; once that run is interrupted (taken over), one gateway
 * follows the task and its result is handed on once; the other gateway, which also looks, leaves it to the first.
 */
import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Role, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { A2AClientService } from '../../src/a2a/client.js';
import { parseConfigText } from '../../src/config/load.js';
import type { NewOutboxRow } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ReferenceExecutor, referenceServer } from '../helpers/a2a-reference.js';
import { waitUntil } from '../helpers/wait.js';

let ref: { server: Server; url: string };
beforeAll(async () => {
  ref = await referenceServer(false, new ReferenceExecutor());
});
afterAll(() => {
  ref.server.closeAllConnections();
  ref.server.close();
});

it('a task whose waiting run runs elsewhere is not followed; after that run is taken over, one gateway follows it and hands the result on once', async () => {
  // A task the remote has finished: what a follower fetches at once.
  const remote = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(ref.url);
  const task = (await remote.sendMessage({
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: 'quick' }, metadata: {}, filename: '', mediaType: 'text/plain' }],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: {},
  })) as Task;

  const store = await SqliteStore.open({ path: ':memory:' });
  const S = 'agent:caller:main';
  await store.sessions.ensure({ key: S, agentId: 'caller' }, 1);
  const { input } = await store.inputs.enqueue(
    { id: 'in-1', sessionKey: S, idempotencyKey: 'k-1', mode: 'followup', text: 'send it', provenance: { kind: 'user' } },
    1,
  );
  // The run that sent the task and waits for it runs on gw-other, whose lease holds.
  const started = await store.runs.start(
    { id: 'run-1', sessionKey: S, agentId: 'caller', owner: 'gw-other', leaseTtlMs: 60_000, model: 'm', inputIds: [input.id] },
    2,
  );
  expect(typeof started).toBe('object');
  await store.a2aTasks.saveRemoteTask(
    {
      taskId: task.id,
      remote: 'ref',
      contextId: task.contextId,
      sessionKey: S,
      state: 'waiting',
      remoteState: 'TASK_STATE_COMPLETED',
      pushToken: null,
      waiterRunId: 'run-1',
      result: null,
      createdAt: Date.now(),
      updatedAt: Date.now(),
    },
    Date.now(),
  );

  const { config } = parseConfigText(
    `{ agents: { list: [{ id: "caller", model: "scripted/c" }] }, models: { providers: { scripted: { type: "scripted", models: { c: { rules: [{ reply: "x" }] } } } } }, a2a: { remoteAgents: [{ id: "ref", url: "${ref.url}" }] } }`,
    '/t.json5',
  );
  const handedOn = new Map<string, NewOutboxRow[]>([
    ['gw-here', []],
    ['gw-third', []],
  ]);
  const client = (gatewayId: string) =>
    new A2AClientService({
      config,
      tasks: store.a2aTasks,
      runAlive: async (runId) => (await store.runs.get(runId))?.status === 'running',
      clock: { now: () => Date.now() },
      deliver: async () => {},
      enqueue: async (row) => void handedOn.get(gatewayId)!.push(row),
      log: () => {},
      gatewayId,
    });
  const here = client('gw-here');
  const third = client('gw-third');
  const nobodyFollows = async () => store.a2aTasks.claimFollow(task.id, 'probe', Date.now() - 1, Date.now());
  try {
    await here.start();
    await third.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await nobodyFollows()).toBe(true);
    expect([...handedOn.values()].flat()).toEqual([]);

    // gw-other is gone: its run is taken over, and each gateway takes up what the run waited for.
    const report = await store.runs.recoverOrphans(
      { recoverer: 'gw-here', scope: 'own', diagnostic: () => 'gone', maxRetries: 1 },
      Date.now(),
    );
    expect(report.interruptedRuns).toEqual([]);
    await store.runs.recoverOrphans({ recoverer: 'gw-other', scope: 'own', diagnostic: () => 'gone', maxRetries: 1 }, Date.now());
    await Promise.all([here.afterRecovery(), third.afterRecovery()]);
    const rows = await waitUntil(
      'the result was handed on',
      () => [...handedOn.values()].flat().length > 0 && [...handedOn.values()].flat(),
      5000,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect([...handedOn.values()].flat()).toHaveLength(1);
    expect(rows[0]).toMatchObject({ idempotencyKey: `a2a-result:${task.id}`, target: S });
  } finally {
    here.stop();
    third.stop();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await store.close();
  }
});
