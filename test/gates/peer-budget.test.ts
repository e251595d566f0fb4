/**
 * What a remote caller can make the gateway spend (docs/gates.md): an A2A peer with a budget gets its first task
 * answered while the cap has room, and then its tasks fail with the reason, without a model call; another peer, with
 * no cap of its own under `*`'s, is not held back by the first one's spend.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import type { RunRecord } from '../../src/ports/index.js';
import { userMessage } from '../helpers/a2a-front.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';

const TOKENS = { greedy: 'tok-0123456789abcdef', other: 'tok-fedcba9876543210' };

async function client(gw: GatewayProcess, token: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` } });
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(`${gw.url}/a2a/helper/`);
}

const send = (text: string) => ({
  tenant: '',
  message: userMessage(text),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: {},
});

const statusText = (task: Task) => {
  const content = task.status?.message?.parts[0]?.content;
  return content?.$case === 'text' ? content.value : '';
};

describe('an A2A peer with a budget', () => {
  let gw: GatewayProcess | undefined;
  afterAll(async () => {
    if (gw) await stopGatewayProcess(gw);
  });

  it('cannot make the gateway spend past it: its tasks fail with the reason once the cap is used up', async () => {
    gw = await startGatewayProcess(
      tempConfig(`{
        a2a: { server: { enabled: true, peers: [{ id: "greedy", token: "${TOKENS.greedy}" }, { id: "other", token: "${TOKENS.other}" }] } },
        budgets: { peers: { greedy: { tokens: 50 }, "*": { tokens: 100000 } } },
        agents: { list: [{ id: "helper", model: "scripted/helper" }] },
        models: { providers: { scripted: { type: "scripted", models: { helper: { rules: [{ reply: "answered: {{input}}" }] } } } } },
      }`).configPath,
    );
    const greedy = await client(gw, TOKENS.greedy);
    const first = (await greedy.sendMessage(send('first question'))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const second = (await greedy.sendMessage(send('second question'))) as Task;
    expect(second.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const day = new Date().toISOString().slice(0, 10);
    expect(statusText(second)).toContain(`budget peer:greedy:${day} (budgets.peers.greedy) is used up`);
    const { body } = await gw.request<{ runs: RunRecord[] }>(
      'GET',
      `/v1/runs?sessionKey=${encodeURIComponent(`agent:helper:a2a:greedy:${second.contextId}`)}`,
    );
    expect(body.runs[0]).toMatchObject({ status: 'failed', errorCode: 'BUDGET_EXCEEDED' });
    expect(body.runs[0]!.usage.modelCalls).toBe(0);
    // Another peer draws on its own cap.
    const other = (await (await client(gw, TOKENS.other)).sendMessage(send('a question'))) as Task;
    expect(other.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const budgets = (await gw.request<{ budgets: { key: string; spent: { tokens: number } }[] }>('GET', '/v1/budgets')).body.budgets;
    expect(budgets.map((budget) => budget.key).sort()).toEqual([`peer:greedy:${day}`, `peer:other:${day}`]);
  }, 60_000);
});
