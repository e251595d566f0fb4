/**
 * Aborts across two gateway processes on one PostgreSQL schema: a cancel sent to one gateway stops a run on the other,
 * and so does an `interrupt` message for its session, which then runs; each is journalled as run.abort_requested and
 * done by the gateway running the run, within moments, not when the run would have ended.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { twoGatewaysForSuite } from '../helpers/cluster.js';
import type { GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const schema = `sb_aborts_${process.pid}`;
const configText = `{
  store: { driver: "postgres", url: "${POSTGRES_URL}", schema: "${schema}" },
  agents: { list: [{ id: "slow", model: "scripted/slow" }] },
  models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [
    { match: "^now", reply: "answered at once" },
    { delayMs: 20000, reply: "too late" },
  ] } } } } },
}`;

if (process.env.CI || (await postgresReachable())) {
  describe('aborts reach a run on another gateway', () => {
    const suite = twoGatewaysForSuite(configText, schema);
    const { db } = suite;
    let a: GatewayProcess;
    let b: GatewayProcess;
    beforeAll(() => {
      ({ a, b } = suite);
    });

    /** Sends to A and waits until A runs it; answers the run's id and session. */
    async function slowRunOnA(peer: string): Promise<{ runId: string; sessionKey: string }> {
      const sent = await a.request<{ inputId: string; sessionKey: string }>('POST', '/v1/send', { target: 'slow', message: 'think', peer });
      const runId = await waitUntil(
        'A runs it',
        async () =>
          (await db.query(`SELECT run_id FROM inputs WHERE id = $1 AND status = 'claimed'`, [sent.body.inputId])).rows[0]?.run_id as string,
        10_000,
      );
      return { runId, sessionKey: sent.body.sessionKey };
    }

    it('a cancel sent to B stops the run on A: recorded cancelled, long before it would have ended', async () => {
      const { runId } = await slowRunOnA('c1');
      const started = Date.now();
      const cancelled = await b.request<{ cancelled: boolean }>('POST', `/v1/runs/${runId}/cancel`);
      expect(cancelled.body).toEqual({ cancelled: true });
      await waitUntil(
        'the run ended cancelled',
        async () => (await a.request<{ run: { status: string } }>('GET', `/v1/runs/${runId}`)).body.run.status === 'cancelled',
        5000,
      );
      expect(Date.now() - started).toBeLessThan(5000);
      const events = await db.query(`SELECT payload FROM events WHERE type = 'run.abort_requested' AND run_id = $1`, [runId]);
      expect(JSON.parse(events.rows[0].payload)).toMatchObject({ reason: 'cancel' });
    });

    it('an interrupt message sent to B for the session stops its run on A, and then runs', async () => {
      const { runId, sessionKey } = await slowRunOnA('i1');
      const sent = await b.request<{ inputId: string }>('POST', '/v1/send', {
        target: 'slow',
        message: 'now, please',
        peer: 'i1',
        mode: 'interrupt',
      });
      await waitUntil(
        'the first run was interrupted',
        async () => (await b.request<{ run: { status: string } }>('GET', `/v1/runs/${runId}`)).body.run.status === 'interrupted',
        5000,
      );
      const outcome = await waitUntil(
        'the interrupting message was answered',
        async () => {
          const { rows } = await db.query(`SELECT status FROM inputs WHERE id = $1`, [sent.body.inputId]);
          return rows[0]?.status === 'consumed' && rows[0];
        },
        10_000,
      );
      expect(outcome.status).toBe('consumed');
      const history = await a.request<{ entries: { role: string; content: unknown }[] }>(
        'GET',
        `/v1/sessions/${encodeURIComponent(sessionKey)}/history`,
      );
      expect(history.body.entries.some((entry) => JSON.stringify(entry.content).includes('answered at once'))).toBe(true);
    });
  });
} else {
  describe('aborts across gateways', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
