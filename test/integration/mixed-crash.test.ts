/**
 * SIGKILL a real gateway at random moments while every front is busy at once: control API sends (half of them a
 * hop to another agent with sessions_send, from a model that passes no idempotency key), A2A SendMessage calls that
 * return at once, and a process writing mailbox files. Clients retry what got no answer, as they would. After a last
 * restart and a drain: every acknowledged input was consumed by exactly one succeeded run and is in its session's
 * transcript once, each A2A messageId names one task and it completed, each mailbox message is one input, and
 * nothing is left queued, running, pending or dead.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'mixed-peer-token-0123456789';
const API_SENDS = 60;
const A2A_SENDS = 60;
const MAIL = 300;
const KILLS = 4;
const { dir, configPath } = tempConfig(`{
  recovery: { retryInterrupted: 10 },
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${TOKEN}", maxRequestsPerMinute: 100000 }] } },
  mailbox: { enabled: true, dir: "mailbox", scanIntervalMs: 200 },
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  agents: { list: [
    { id: "front", model: "scripted/front", mailbox: { name: "Front" } },
    { id: "back", model: "scripted/back" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    front: { rules: [
      { match: "the reply to your sessions_send", reply: "late: {{input}}" },
      { match: "^ask (\\\\d+)", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "back", message: "question {{match.1}}", timeoutSeconds: 20 } }] },
        { text: "answer: {{tool.sessions_send.reply}}" },
      ] },
      { delayMs: 30, reply: "front: {{input}}" },
    ] },
    back: { rules: [{ delayMs: 60, steps: [{ toolCalls: [{ tool: "time_now" }] }, { text: "back: {{input}}" }] }] },
  } } } },
}`);
const mailbox = join(dir, 'mailbox');
const frontInbox = join(mailbox, 'inbox', 'Front');
const jsonFiles = (path: string) =>
  existsSync(path) ? readdirSync(path).filter((file) => file.endsWith('.json') && !file.startsWith('.')) : [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes its messages into Front's inbox in place, paced over a few seconds, as pi-messenger does. */
const WRITER = `
const fs = require('node:fs'), path = require('node:path');
const [dir, count] = [process.argv[1], Number(process.argv[2])];
fs.mkdirSync(path.join(dir, 'inbox', 'Writer'), { recursive: true });
fs.mkdirSync(path.join(dir, 'inbox', 'Front'), { recursive: true });
for (let i = 0; i < count; i++) {
  const message = { id: 'mail-' + i, from: 'Writer', to: 'Front', text: 'mail ' + i, timestamp: new Date().toISOString(), replyTo: null };
  fs.writeFileSync(path.join(dir, 'inbox', 'Front', 'w-' + i + '.json'), JSON.stringify(message));
  if (i % 20 === 19) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
}`;

/** A JSON-RPC A2A call as the configured peer; undefined when the gateway did not answer (it was killed). */
async function a2a(gw: GatewayProcess, method: string, params: unknown): Promise<Record<string, unknown> | undefined> {
  try {
    const response = await fetch(`${gw.url}/a2a/back/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await response.json()) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const sendMessage = (n: number) => ({
  message: { messageId: `a2a-${n}`, role: 'ROLE_USER', parts: [{ text: `remote ${n}` }] },
  configuration: { returnImmediately: true },
});

describe('mixed load crash', () => {
  it(`SIGKILL ${KILLS} times while the control API, A2A and the mailbox all send: nothing lost, nothing twice`, async () => {
    mkdirSync(mailbox, { recursive: true });
    let gw: GatewayProcess = await startGatewayProcess(configPath);
    const apiAcked = new Map<string, string>(); // idempotency key -> input id
    const a2aAcked = new Map<string, string>(); // messageId -> task id
    const changed: string[] = [];
    let nextApi = 0;
    let nextA2a = 0;

    const sendApi = async (i: number) => {
      const key = `api-${i}`;
      try {
        const response = await gw.request<{ inputId: string }>('POST', '/v1/send', {
          target: 'front',
          message: i % 2 === 0 ? `ask ${i}` : `job ${i}`,
          idempotencyKey: key,
        });
        if (response.status !== 200) return;
        if (apiAcked.has(key) && apiAcked.get(key) !== response.body.inputId) changed.push(key);
        apiAcked.set(key, response.body.inputId);
      } catch {
        // Killed mid-request: sent again with the same key.
      }
    };
    const sendA2a = async (i: number) => {
      const answer = await a2a(gw, 'SendMessage', sendMessage(i));
      const task = (answer?.result as { task?: { id: string } } | undefined)?.task;
      if (!task) return;
      const id = `a2a-${i}`;
      if (a2aAcked.has(id) && a2aAcked.get(id) !== task.id) changed.push(id);
      a2aAcked.set(id, task.id);
    };
    const sendSome = async () => {
      await Promise.all([
        ...Array.from({ length: Math.min(3, API_SENDS - nextApi) }, (_, k) => sendApi(nextApi + k)),
        ...Array.from({ length: Math.min(3, A2A_SENDS - nextA2a) }, (_, k) => sendA2a(nextA2a + k)),
      ]);
      while (nextApi < API_SENDS && apiAcked.has(`api-${nextApi}`)) nextApi += 1;
      while (nextA2a < A2A_SENDS && a2aAcked.has(`a2a-${nextA2a}`)) nextA2a += 1;
    };

    const writer = spawn(process.execPath, ['-e', WRITER, mailbox, String(MAIL)], { stdio: 'inherit' });
    const written = once(writer, 'exit');
    for (let kill = 0; kill < KILLS; kill += 1) {
      const killAt = Date.now() + 300 + Math.floor(Math.random() * 500);
      while (Date.now() < killAt) {
        await sendSome();
        await sleep(10);
      }
      await stopGatewayProcess(gw, 'SIGKILL');
      gw = await startGatewayProcess(configPath);
    }
    while (nextApi < API_SENDS || nextA2a < A2A_SENDS) await sendSome();
    expect(await written).toEqual([0, null]);
    expect(changed).toEqual([]);

    // The drain: every control API send waited for with its key (the same input), every task read until it ends.
    for (let i = 0; i < API_SENDS; i += 1) {
      const again = await gw.request<{ inputId: string; status: string; runStatus: string }>('POST', '/v1/send', {
        target: 'front',
        message: i % 2 === 0 ? `ask ${i}` : `job ${i}`,
        idempotencyKey: `api-${i}`,
        wait: true,
        timeoutSeconds: 60,
      });
      expect(again.body.inputId).toBe(apiAcked.get(`api-${i}`));
      expect(again.body).toMatchObject({ status: 'ok', runStatus: 'succeeded' });
    }
    for (let i = 0; i < A2A_SENDS; i += 1) {
      // A retry of a first message after everything: the same task, no second one.
      const retried = (await a2a(gw, 'SendMessage', sendMessage(i)))?.result as { task?: { id: string } } | undefined;
      expect(retried?.task?.id).toBe(a2aAcked.get(`a2a-${i}`));
      // Read until it ends; what it ended as (or where it stands) is in the failure.
      const taskId = a2aAcked.get(`a2a-${i}`);
      let task: { status?: { state?: string } } | undefined;
      const ended = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && !ended.includes(task?.status?.state ?? ''); await sleep(100))
        task = (await a2a(gw, 'GetTask', { id: taskId }))?.result as typeof task;
      const detail = task?.status?.state === 'TASK_STATE_COMPLETED' ? [] : (await gw.request('GET', `/v1/a2a/tasks/${taskId}`)).body;
      expect({ task: `a2a-${i}`, state: task?.status?.state, detail }).toEqual({
        task: `a2a-${i}`,
        state: 'TASK_STATE_COMPLETED',
        detail: [],
      });
    }
    await waitUntil(
      'the inbox is drained and the lanes are quiet',
      async () => {
        const status = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
        return (
          jsonFiles(frontInbox).length === 0 &&
          jsonFiles(join(frontInbox, '.processing')).length === 0 &&
          status.body.activeRuns.length === 0
        );
      },
      60_000,
    );
    // Replies that were on their way (a late sessions_send reply comes as a message) settle.
    await sleep(2000);
    expect(await stopGatewayProcess(gw)).toBe(0);
    expect(jsonFiles(join(frontInbox, '.rejected'))).toEqual([]);

    const store = await SqliteStore.open({ path: join(dir, '.switchboard', 'switchboard.db') });
    try {
      const inputs = await store.inputs.list({ limit: 100_000 });
      expect(inputs.filter((input) => input.status !== 'consumed').map((input) => `${input.id} ${input.status}`)).toEqual([]);
      const mail = inputs.filter((input) => input.sessionKey === 'agent:front:mailbox:direct:Writer');
      expect(new Set(mail.map((input) => input.provenance.messageId)).size).toBe(MAIL);
      expect(mail).toHaveLength(MAIL);
      // Each question of a hop reached back once: a rerun of the asking run sends nothing new.
      const questions = inputs.filter((input) => input.sessionKey === 'agent:back:main' && input.text.startsWith('question '));
      expect(questions.map((input) => input.text).sort()).toEqual(
        Array.from({ length: API_SENDS / 2 }, (_, k) => `question ${2 * k}`).sort(),
      );
      for (const input of inputs) expect((await store.runs.get(input.runId!))?.status).toBe('succeeded');
      // Each input is in its session's transcript exactly once: its run committed once.
      const seen = new Map<string, number>();
      for (const sessionKey of new Set(inputs.map((input) => input.sessionKey)))
        for (const entry of await store.transcript.list(sessionKey, { limit: 100_000 }))
          if (entry.role === 'user' && entry.inputId) seen.set(entry.inputId, (seen.get(entry.inputId) ?? 0) + 1);
      expect(
        inputs.filter((input) => seen.get(input.id) !== 1).map((input) => `${input.sessionKey} ${input.text}: ${seen.get(input.id)}`),
      ).toEqual([]);
      expect(await store.runs.list({ status: 'running' })).toEqual([]);
      expect(await store.outbox.list({ status: 'pending' })).toEqual([]);
      expect(await store.outbox.list({ status: 'dead' })).toEqual([]);
      // The kills landed on runs at work: otherwise this proves nothing about recovery.
      expect((await store.runs.list({ status: 'interrupted', limit: 1000 })).length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  }, 300_000);
});
