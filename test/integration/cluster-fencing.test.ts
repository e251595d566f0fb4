/**
 * Fencing with two gateway processes on one PostgreSQL schema: gateway A is paused with SIGSTOP past its leases while
 * it works, gateway B takes over, and A is resumed. A cannot commit the run B took over, cannot change the board task
 * it was working on, and cannot mark the outbox row B delivered; each effect happens once, B's.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { twoGatewaysForSuite } from '../helpers/cluster.js';
import type { GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const schema = `sb_fencing_${process.pid}`;
const PEER_TOKEN = 'fencing-peer-token-0123456789';
const configText = `{
  store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },
  lanes: { leaseTtlSeconds: 3 },
  recovery: { retryInterrupted: 10 },
  outbox: { baseDelayMs: 50, maxDelayMs: 500 },
  board: { sweepIntervalMs: 200, agentClaimTtlSeconds: 3 },
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${PEER_TOKEN}" }] }, push: { allowPrivateTargets: true, timeoutMs: 60000 } },
  agents: { list: [{ id: "slow", model: "scripted/slow" }, { id: "worker", model: "scripted/worker" }, { id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    slow: { rules: [{ delayMs: 4000, reply: "slow answer to {{input}}" }] },
    worker: { rules: [{ delayMs: 4000, steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "done" } }] }, { text: "completed" }] }] },
    echo: { rules: [{ reply: "echo: {{input}}" }] },
  } } } },
}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

if (process.env.CI || (await postgresReachable())) {
  describe('a gateway paused past its leases, then resumed', () => {
    const suite = twoGatewaysForSuite(configText, schema);
    const { db } = suite;
    let a: GatewayProcess;
    let b: GatewayProcess;
    beforeAll(() => {
      ({ a, b } = suite);
    });

    const query = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await db.query<T>(text, values)).rows;
    const gatewayIdOf = async (gateway: GatewayProcess) =>
      (await gateway.request<{ gatewayId: string }>('GET', '/v1/status')).body.gatewayId;

    /** Pauses a gateway until `taken` holds (the other took over), resumes it, and gives it time to try what it was doing. */
    async function pauseUntil(what: string, taken: () => Promise<boolean>, paused = a): Promise<void> {
      paused.child.kill('SIGSTOP');
      try {
        await waitUntil(what, taken, 30_000, 100);
      } finally {
        paused.child.kill('SIGCONT');
      }
      await sleep(5000);
    }

    it('cannot commit the run another gateway took over: the input is answered once, by the rerun there', async () => {
      const [idA, idB] = [await gatewayIdOf(a), await gatewayIdOf(b)];
      const sent = await a.request<{ inputId: string; sessionKey: string }>('POST', '/v1/send', {
        target: 'slow',
        message: 'work',
        idempotencyKey: 'fence-run',
      });
      await waitUntil(
        'A runs it',
        async () => (await query(`SELECT 1 FROM runs WHERE owner = $1 AND status = 'running'`, [idA])).length > 0,
        5000,
      );
      await pauseUntil(
        'B ran the input again and committed',
        async () => (await query(`SELECT 1 FROM inputs WHERE id = $1 AND status = 'consumed'`, [sent.body.inputId])).length > 0,
      );
      const runs = await query<{ owner: string; status: string }>(
        `SELECT owner, status FROM runs WHERE session_key = $1 ORDER BY started_at`,
        [sent.body.sessionKey],
      );
      expect(runs).toEqual([
        { owner: idA, status: 'interrupted' },
        { owner: idB, status: 'succeeded' },
      ]);
      const transcript = await query<{ role: string }>(`SELECT role FROM transcript WHERE session_key = $1 ORDER BY seq`, [
        sent.body.sessionKey,
      ]);
      expect(transcript.map((entry) => entry.role)).toEqual(['user', 'assistant']);
      // A's late commit was refused (its lease lost): nothing of its run is in the store, and A's log says so.
      expect(a.stderr()).not.toMatch(/TypeError|INTERNAL/);
      // Its renewal or its commit was refused, whichever came first after the pause: one warning line says which.
      await waitUntil(
        'A logs that its run lost its lease',
        () =>
          a
            .stderr()
            .split('\n')
            .some((line) => line.includes('"level":40') && line.includes('lost its lease') && line.includes(sent.body.sessionKey)),
        10_000,
      );
    }, 60_000);

    it('cannot change the board task it was working on: the task is completed once', async () => {
      const created = await a.request<{ task: { id: string } }>('POST', '/v1/board/tasks', {
        title: 'fenced',
        assignee: 'worker',
        idempotencyKey: 'fence-board',
      });
      const taskId = created.body.task.id;
      // Whichever gateway's dispatcher handed it out, the gateway whose agent works on it is the one paused.
      const [running] = await waitUntil(
        'an agent works on it',
        async () => {
          const rows = await query<{ owner: string }>(`SELECT owner FROM runs WHERE status = 'running' AND session_key = $1`, [
            `agent:worker:board:${taskId}`,
          ]);
          return rows.length > 0 && rows;
        },
        10_000,
      );
      const working = running!.owner === (await gatewayIdOf(a)) ? a : b;
      await pauseUntil(
        'the task was completed without the paused gateway',
        async () => (await query(`SELECT 1 FROM board_tasks WHERE id = $1 AND state = 'done'`, [taskId])).length > 0,
        working,
      );
      const completed = await query(`SELECT attempt FROM board_attempts WHERE task_id = $1 AND outcome = 'completed'`, [taskId]);
      expect(completed).toHaveLength(1);
      expect(await query(`SELECT type FROM board_events WHERE task_id = $1 AND type = 'completed'`, [taskId])).toHaveLength(1);
      expect((await query<{ state: string }>(`SELECT state FROM board_tasks WHERE id = $1`, [taskId]))[0]!.state).toBe('done');
    }, 60_000);

    it('cannot mark the outbox row another gateway delivered: its late mark changes nothing', async () => {
      // A webhook that holds the first request it gets (A's attempt) and answers every other.
      const held: ServerResponse[] = [];
      const keys: string[] = [];
      const receiver = createServer((request, response) => {
        keys.push(String(request.headers['idempotency-key']));
        request.resume();
        request.on('end', () => (keys.length === 1 ? held.push(response) : response.writeHead(200).end()));
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      try {
        const sent = await fetch(`${a.url}/a2a/echo/jsonrpc`, {
          method: 'POST',
          headers: { authorization: `Bearer ${PEER_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'SendMessage',
            params: {
              message: { messageId: 'fence-push', role: 'ROLE_USER', parts: [{ text: 'notify me' }] },
              configuration: { returnImmediately: true, taskPushNotificationConfig: { id: 'hook', url: hook, token: 'hook-token' } },
            },
          }),
        });
        expect(sent.status).toBe(200);
        await waitUntil('a gateway is delivering the first notification', () => held.length === 1, 10_000);
        // Either gateway's outbox may have claimed it: the one delivering it is paused.
        const [row] = await query<{ claimed_by: string }>(`SELECT claimed_by FROM outbox WHERE idempotency_key = $1`, [keys[0]]);
        const delivering = row!.claimed_by === (await gatewayIdOf(a)) ? a : b;
        await pauseUntil(
          'the other gateway delivered every notification',
          async () => {
            const rows = await query<{ status: string }>(`SELECT status FROM outbox WHERE kind = 'a2a.push'`);
            return rows.length > 0 && rows.every((row) => row.status === 'delivered');
          },
          delivering,
        );
        // The paused gateway's attempt now gets its answer; its mark comes after the other's claim and changes nothing.
        held[0]!.writeHead(200).end();
        await sleep(1000);
        const first = await query<{ status: string; attempts: number; claim_token: string }>(
          `SELECT status, attempts, claim_token FROM outbox WHERE idempotency_key = $1`,
          [keys[0]],
        );
        expect(first).toEqual([{ status: 'delivered', attempts: 1, claim_token: '2' }]);
        // At least once: the receiver saw that notification twice, under one key to dedupe by.
        expect(keys.filter((key) => key === keys[0])).toHaveLength(2);
        // The paused gateway says its mark was refused, naming the claim it held.
        await waitUntil(
          'the paused gateway logs the refused mark',
          () =>
            /outbox row \S+ \(a2a\.push to [^)]+\): its delivery was not recorded: this gateway's claim on it \(token 1\)/.test(
              delivering.stderr(),
            ),
          10_000,
        );
      } finally {
        for (const response of held) if (!response.headersSent) response.writeHead(200).end();
        receiver.close();
      }
    }, 60_000);
  });
} else {
  describe('a gateway paused past its leases', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
