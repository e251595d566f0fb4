/**
 * Gates on PostgreSQL, where two gateways (or one gateway's pool) answer and reserve at once: two stores on one schema
 * race in a loop. Of two answers to one request, or an answer and the expiry, exactly one takes effect (the status in
 * the UPDATE's WHERE); two reservations racing for a budget's last room cannot both see it free (the key's lock), so
 * what is reserved stays within one reservation of the cap.
 */
import { describe, expect, it } from 'vitest';
import type { NewApproval, Store } from '../../src/ports/index.js';
import { postgresReachable, twoStoresOnOneSchema } from '../helpers/postgres.js';

const ROUNDS = 40;

const request = (id: string, ttlMs: number): NewApproval => ({
  id,
  kind: 'tool',
  agentId: 'a',
  sessionKey: 'agent:a:main',
  runId: `run-${id}`,
  step: 0,
  index: 0,
  toolCallId: 'c',
  subject: 'exec',
  args: {},
  details: {},
  reason: 'tools.ask has "exec"',
  editable: false,
  ttlMs,
  onExpiry: 'deny',
});

if (process.env.CI || (await postgresReachable())) {
  describe('postgres gate races (two stores, one schema)', () => {
    let a: Store;
    let b: Store;
    twoStoresOnOneSchema('sb_gaterace', (first, second) => {
      a = first;
      b = second;
    });

    it('two answers at once: one takes effect, with one approval.decided event', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const id = `apr_r${round}`;
        await a.approvals.request(request(id, 3_600_000), 1000);
        const answers = await Promise.all([
          a.approvals.decide(id, { approve: true, by: 'on-a' }, 2000),
          b.approvals.decide(id, { approve: false, by: 'on-b' }, 2000),
        ]);
        expect(answers.filter(Boolean)).toHaveLength(1);
        const winner = answers.find(Boolean)!.approval;
        expect(await b.approvals.get(id)).toMatchObject({ status: winner.status, decidedBy: winner.decidedBy });
        const events = await a.events.list({ runId: `run-${id}` });
        expect(events.filter((event) => event.type === 'approval.decided')).toHaveLength(1);
      }
    });

    it('an answer racing the expiry: one of them takes effect', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const id = `apr_x${round}`;
        await a.approvals.request(request(id, 0), 1000);
        const [answered, expired] = await Promise.all([
          a.approvals.decide(id, { approve: true, by: 'on-a' }, 2000),
          b.approvals.expire(id, 2000),
        ]);
        expect([answered, expired].filter(Boolean)).toHaveLength(1);
        expect((await a.approvals.get(id))!.status).toBe(answered ? 'approved' : 'expired');
      }
    });

    it('reservations racing for a cap: what is held never passes the cap by more than one reservation', async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const caps = [{ key: `agent:r${round}`, source: 'budgets.agents.r', tokens: 100 }];
        // 60 reserved already: 40 of room, so exactly one of two racing 60s may take it.
        expect((await a.budgets.reserve(`h${round}-0`, 'run', caps, { tokens: 60, costMicros: 0 }, 60_000)).ok).toBe(true);
        const outcomes = await Promise.all([
          a.budgets.reserve(`h${round}-a`, 'run', caps, { tokens: 60, costMicros: 0 }, 60_000),
          b.budgets.reserve(`h${round}-b`, 'run', caps, { tokens: 60, costMicros: 0 }, 60_000),
        ]);
        expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1);
        expect(await a.budgets.spend([caps[0]!.key])).toMatchObject([{ reserved: { tokens: 120 } }]);
      }
    });
  });
}
