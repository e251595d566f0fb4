/**
 * What an operator sees of the A2A server in the journal (`switchboard events --type a2a.`), against a real gateway
 * process: each state change of a task as an `a2a.task` event, and refused calls (401, 403, 429) as `a2a.refused`,
 * one per caller, agent and status every 10 s with a count, so that a flood of bad requests does not flood the journal.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RefusalReporter } from '../../src/a2a/refusals.js';
import type { EventRecord } from '../../src/ports/index.js';
import { gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'journal-peer-token-0123456789';
const { configPath } = tempConfig(`{
  a2a: { server: { enabled: true, agents: ["echo"], peers: [
    { id: "peer", token: "${TOKEN}", agents: ["echo"], maxRequestsPerMinute: 3 },
    { id: "other", token: "other-token-0123456789", agents: ["nobody"] },
  ] } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`);

const suite = gatewayForSuite(configPath);

function send(token: string | undefined, text: string) {
  return fetch(`${suite.gw.url}/a2a/echo/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, configuration: { blocking: true } },
    }),
  });
}

async function journal(type: string): Promise<EventRecord[] | undefined> {
  const response = await fetch(`${suite.gw.url}/v1/events?after=0&type=${type}`, {
    headers: { authorization: `Bearer ${suite.gw.token}` },
  });
  // The stream stays open: read what is there within a moment, then stop.
  const reader = response.body!.getReader();
  let text = '';
  const until = Date.now() + 300;
  while (Date.now() < until) {
    const chunk = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(resolve, 100))]);
    if (chunk?.value) text += new TextDecoder().decode(chunk.value);
  }
  await reader.cancel();
  const events = [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]) as EventRecord);
  return events.length > 0 ? events : undefined;
}

describe('the A2A server in the journal', () => {
  it('journals each state change of a task, with the peer and the state it came from', async () => {
    const answer = (await (await send(TOKEN, 'hello')).json()) as { result: { task: { id: string } } };
    const taskId = answer.result.task.id;
    const events = await waitUntil('the task reached its last state in the journal', async () => {
      const found = (await journal('a2a.task'))?.filter((event) => (event.payload as { taskId: string }).taskId === taskId);
      return found?.some((event) => (event.payload as { state: string }).state === 'TASK_STATE_COMPLETED') ? found : undefined;
    });
    const steps = events.map((event) => event.payload as { from: string | null; state: string; peer: string; agentId: string });
    // A blocking send's task is first stored working (its input accepted with it), then completed.
    expect(steps.map((step) => [step.from, step.state])).toEqual([
      [null, 'TASK_STATE_WORKING'],
      ['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'],
    ]);
    expect(steps.every((step) => step.peer === 'peer' && step.agentId === 'echo')).toBe(true);
    expect(events[0].sessionKey).toMatch(/^agent:echo:a2a:peer:/);
  });

  it('journals refusals (401, 403, 429), a flood of one caller as one event', async () => {
    for (let i = 0; i < 20; i += 1) expect((await send('wrong-token-0123456789', 'x')).status).toBe(401);
    expect((await send('other-token-0123456789', 'x')).status).toBe(403);
    const statuses = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await send(TOKEN, `limit ${i}`)).status);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
    const refused = await waitUntil('the refusals are journaled', async () => {
      const events = await journal('a2a.refused');
      return events && events.length >= 3 ? events : undefined;
    });
    const payloads = refused.map(
      (event) => event.payload as { status: number; peer: string | null; count: number; reason: string; address: string },
    );
    expect(payloads.map((payload) => [payload.status, payload.peer, payload.count, payload.reason])).toEqual([
      [401, null, 1, 'UNAUTHENTICATED'],
      [403, 'other', 1, 'PERMISSION_DENIED'],
      [429, 'peer', 1, 'RESOURCE_EXHAUSTED'],
    ]);
    expect(payloads[0].address).toBe('127.0.0.1');
  });
});

describe('RefusalReporter', () => {
  it('reports a caller once per 10 s window, then with the count of refusals since its last report', () => {
    let now = 0;
    const reports: number[] = [];
    const reporter = new RefusalReporter((refusal) => reports.push(refusal.count), { now: () => now });
    const refusal = { agentId: 'echo', status: 401 as const, reason: 'UNAUTHENTICATED', message: 'no', peer: null, address: '10.0.0.1' };
    for (let i = 0; i < 50; i += 1) reporter.refused(refusal);
    reporter.refused({ ...refusal, address: '10.0.0.2' });
    expect(reports).toEqual([1, 1]);
    now = 10_000;
    reporter.refused(refusal);
    expect(reports).toEqual([1, 1, 50]);
  });
});
