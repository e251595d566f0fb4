/**
 * A2A tasks are durable and never hang: a task whose run outlives a2a.server.taskStallSeconds is failed
 * with a diagnostic, and a task whose gateway was SIGKILLed finishes after the restart, seen by a
 * client that subscribes again.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'durable-token-0123456789';
const config = (extra: string) => `{
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${TOKEN}" }] ${extra} } },
  agents: { list: [{ id: "slow", model: "scripted/slow" }] },
  models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [{ delayMs: 2500, reply: "finally: {{input}}" }] } } } } },
}`;

async function client(gw: GatewayProcess): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${TOKEN}` } });
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(`${gw.url}/a2a/slow/`);
}

const send = (text: string, returnImmediately = false) => ({
  tenant: '',
  message: {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text' as const, value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: {},
});

const runsOf = async (gw: GatewayProcess, sessionKey: string) =>
  (await gw.request<{ runs: { status: string }[] }>('GET', `/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}`)).body.runs;

describe('A2A task durability', () => {
  it('a task whose run takes longer than a2a.server.taskStallSeconds is failed with a diagnostic, and its run stopped', async () => {
    const gw = await startGatewayProcess(tempConfig(config(', taskStallSeconds: 1')).configPath);
    try {
      const a2a = await client(gw);
      const task = (await a2a.sendMessage(send('hurry'))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
      const status = task.status?.message?.parts[0].content;
      expect(status).toEqual({
        $case: 'text',
        value: 'no result within 1s (a2a.server.taskStallSeconds): the run died or stalled, so the task is failed rather than left working',
      });
      await waitUntil(
        'the run is stopped',
        async () => (await runsOf(gw, `agent:slow:a2a:peer:${task.contextId}`))[0]?.status === 'cancelled',
      );
    } finally {
      await stopGatewayProcess(gw);
    }
  });

  it.each(['SIGKILL', 'SIGTERM'] as const)(
    '%s while a task is working: after the restart the task completes, and a client that subscribes again sees it finish',
    async (signal) => {
      const { configPath } = tempConfig(config(''));
      let gw = await startGatewayProcess(configPath);
      const started = (await (await client(gw)).sendMessage(send('survive this', true))) as Task;
      const sessionKey = `agent:slow:a2a:peer:${started.contextId}`;
      await waitUntil('the run is active', async () => (await runsOf(gw, sessionKey)).some((run) => run.status === 'running'));
      // The SDK stores the task's working state as it handles the executor's event, which may come just after the run started.
      await waitUntil(
        'the task is stored working',
        async () =>
          (await gw.request<{ task: { state: string } }>('GET', `/v1/a2a/tasks/${started.id}`)).body.task?.state === 'TASK_STATE_WORKING',
      );
      await stopGatewayProcess(gw, signal);

      gw = await startGatewayProcess(configPath);
      try {
        const a2a = await client(gw);
        const seen: string[] = [];
        for await (const event of a2a.resubscribeTask({ tenant: '', id: started.id })) {
          const payload = (event as { payload?: { $case: string; value: { status?: { state: TaskState } } } }).payload;
          if (payload?.$case === 'task') seen.push(`task ${TaskState[payload.value.status!.state]}`);
          if (payload?.$case === 'statusUpdate') seen.push(`status ${TaskState[payload.value.status!.state]}`);
          if (payload?.$case === 'artifactUpdate') seen.push('artifact');
        }
        expect(seen).toEqual(['task TASK_STATE_WORKING', 'artifact', 'status TASK_STATE_COMPLETED']);
        const done = await a2a.getTask({ tenant: '', id: started.id, historyLength: undefined });
        expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(done.artifacts[0].parts[0].content).toEqual({ $case: 'text', value: 'finally: survive this' });
        // Finished by the task watch (no live executor after the restart): its status time is stored, so a filter on it finds it.
        const since = await a2a.listTasks({
          tenant: '',
          contextId: '',
          status: TaskState.TASK_STATE_UNSPECIFIED,
          pageSize: 100,
          pageToken: '',
          historyLength: 0,
          statusTimestampAfter: done.status!.timestamp,
          includeArtifacts: false,
        });
        expect(since.tasks.map((task) => task.id)).toContain(started.id);
        expect((await runsOf(gw, sessionKey)).map((run) => run.status).sort()).toEqual(['interrupted', 'succeeded']);
      } finally {
        await stopGatewayProcess(gw);
      }
    },
    60_000,
  );
});
