/**
 * The gates' store contract (src/ports/gates.ts), run unchanged on SQLite and PostgreSQL: a request is written once per
 * id with one event; an answer and an expiry are compare-and-sets on `pending` (the first wins, on the database's clock
 * for the expiry); a budget reservation is all-or-none over its caps, refused once a cap has no room, and settled once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BudgetCap, NewApproval, Store } from '../../src/ports/index.js';

const request = (id: string, ttlMs = 3_600_000): NewApproval => ({
  id,
  kind: 'tool',
  agentId: 'coder',
  sessionKey: 'agent:coder:main',
  runId: 'run-1',
  step: 2,
  index: 0,
  toolCallId: 'call-1',
  subject: 'exec',
  args: { command: 'git', args: ['push'] },
  details: { command: 'git', cwd: '/w' },
  reason: 'tools.ask has "exec"',
  editable: true,
  ttlMs,
  onExpiry: 'deny',
});

const cap = (key: string, tokens: number): BudgetCap => ({ key, source: `budgets.${key}`, tokens });

export function describeGatesContract(name: string, open: () => Promise<Store>): void {
  describe(`gates store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it('writes a request once per id, with one approval.requested event, and answers the same row again', async () => {
      const first = await store.approvals.request(request('apr_1'), 1000);
      expect(first.approval).toMatchObject({
        id: 'apr_1',
        status: 'pending',
        subject: 'exec',
        editable: true,
        decidedBy: null,
        editedArgs: null,
      });
      expect(first.approval.expiresAt - first.approval.requestedAt).toBe(3_600_000);
      expect(first.event).toMatchObject({ type: 'approval.requested', sessionKey: 'agent:coder:main', runId: 'run-1' });
      expect(first.event?.payload).toMatchObject({ approvalId: 'apr_1', kind: 'tool', subject: 'exec' });
      const again = await store.approvals.request({ ...request('apr_1'), args: { command: 'rm' } }, 2000);
      expect(again.event).toBeUndefined();
      expect(again.approval).toEqual(first.approval);
      expect((await store.events.list({ runId: 'run-1' })).filter((event) => event.type === 'approval.requested')).toHaveLength(1);
    });

    it('takes the first answer only: a second answer and a later expiry find it answered', async () => {
      await store.approvals.request(request('apr_2'), 1000);
      const approved = await store.approvals.decide(
        'apr_2',
        { approve: true, by: 'cli:ann', note: 'ok', editedArgs: { command: 'git', args: ['status'] } },
        1500,
      );
      expect(approved?.approval).toMatchObject({
        status: 'approved',
        decidedBy: 'cli:ann',
        note: 'ok',
        editedArgs: { command: 'git', args: ['status'] },
      });
      expect(approved?.event).toMatchObject({
        type: 'approval.decided',
        payload: { approvalId: 'apr_2', status: 'approved', decidedBy: 'cli:ann', edited: true },
      });
      expect(await store.approvals.decide('apr_2', { approve: false, by: 'cli:bob' }, 1600)).toBeUndefined();
      expect(await store.approvals.expire('apr_2', 1700)).toBeUndefined();
      expect(await store.approvals.get('apr_2')).toMatchObject({ status: 'approved', decidedBy: 'cli:ann' });
      expect(await store.approvals.decide('missing', { approve: true, by: 'x' }, 1)).toBeUndefined();
    });

    it('a deny keeps no edited arguments', async () => {
      await store.approvals.request(request('apr_3'), 1000);
      const denied = await store.approvals.decide('apr_3', { approve: false, by: 'console', editedArgs: { command: 'x' } }, 1100);
      expect(denied?.approval).toMatchObject({ status: 'denied', editedArgs: null, decidedBy: 'console' });
    });

    it('expires a request only once its time has passed on the database clock, and then no answer takes effect', async () => {
      await store.approvals.request(request('apr_4', 3_600_000), 1000);
      expect(await store.approvals.expire('apr_4', Number.MAX_SAFE_INTEGER)).toBeUndefined();
      await store.approvals.request(request('apr_5', 0), 1000);
      const expired = await store.approvals.expire('apr_5', 2000);
      expect(expired?.approval).toMatchObject({ status: 'expired', decidedBy: 'expiry' });
      expect(expired?.event).toMatchObject({ type: 'approval.decided', payload: { approvalId: 'apr_5', status: 'expired' } });
      expect(await store.approvals.decide('apr_5', { approve: true, by: 'late' }, 3000)).toBeUndefined();
    });

    it('takes no answer past the expiry, even before anything marked the request expired', async () => {
      await store.approvals.request(request('apr_6', 0), 1000);
      expect(await store.approvals.decide('apr_6', { approve: true, by: 'late' }, 2000)).toBeUndefined();
      expect(await store.approvals.get('apr_6')).toMatchObject({ status: 'pending', decidedBy: null });
      expect((await store.approvals.expire('apr_6', 2000))?.approval).toMatchObject({ status: 'expired' });
    });

    it('raises a cap with an approved budget request, in its transaction, and never with a refusal or a late answer', async () => {
      const raise = { key: 'agent:r', limit: { tokens: 500 } };
      await store.approvals.request({ ...request('apr_r1'), kind: 'budget', subject: 'agent:r' }, 1000);
      await store.approvals.decide('apr_r1', { approve: false, by: 'x' }, 1100, raise);
      expect(await store.budgets.spend(['agent:r'])).toEqual([]);
      await store.approvals.request({ ...request('apr_r2', 0), kind: 'budget', subject: 'agent:r' }, 1000);
      expect(await store.approvals.decide('apr_r2', { approve: true, by: 'late' }, 1100, raise)).toBeUndefined();
      expect(await store.budgets.spend(['agent:r'])).toEqual([]);
      await store.approvals.request({ ...request('apr_r3'), kind: 'budget', subject: 'agent:r' }, 1000);
      const approved = await store.approvals.decide('apr_r3', { approve: true, by: 'ann' }, 1200, raise);
      expect(approved?.event.payload).toMatchObject({ approvalId: 'apr_r3', budgetKey: 'agent:r' });
      expect(await store.budgets.spend(['agent:r'])).toMatchObject([{ raised: { tokens: 500 } }]);
    });

    it('withdraws a pending request whatever the clock, once', async () => {
      await store.approvals.request(request('apr_w'), 1000);
      const withdrawn = await store.approvals.withdraw('apr_w', 'another request raised the cap', 1500);
      expect(withdrawn?.approval).toMatchObject({ status: 'expired', decidedBy: 'withdrawn', note: 'another request raised the cap' });
      expect(withdrawn?.event).toMatchObject({ type: 'approval.decided', payload: { status: 'expired', decidedBy: 'withdrawn' } });
      expect(await store.approvals.withdraw('apr_w', 'again', 1600)).toBeUndefined();
      expect(await store.approvals.decide('apr_w', { approve: true, by: 'late' }, 1700)).toBeUndefined();
    });

    it('lists by status and session, newest first, and counts the pending ones', async () => {
      await store.approvals.request(request('apr_a'), 1000);
      await store.approvals.request({ ...request('apr_b'), sessionKey: 'agent:coder:other' }, 1000);
      await store.approvals.request(request('apr_c'), 1000);
      await store.approvals.decide('apr_c', { approve: false, by: 'x' }, 1000);
      expect(await store.approvals.pendingCount()).toBe(2);
      expect((await store.approvals.list({ status: 'pending' })).map((row) => row.id).sort()).toEqual(['apr_a', 'apr_b']);
      expect((await store.approvals.list({ sessionKey: 'agent:coder:other' })).map((row) => row.id)).toEqual(['apr_b']);
      expect((await store.approvals.list({ status: 'denied' })).map((row) => row.id)).toEqual(['apr_c']);
      expect(await store.approvals.list({ limit: 1 })).toHaveLength(1);
    });

    it('reserves on every cap or none, and refuses once a cap has no room left, naming it with its figures', async () => {
      const caps = [cap('agent:a', 100), cap('session:s', 1000)];
      expect(await store.budgets.reserve('r1', 'run-1', caps, { tokens: 60, costMicros: 0 }, 60_000)).toEqual({ ok: true });
      // 60 reserved of 100: room left, so admitted (a run overshoots by at most its own reservation).
      expect(await store.budgets.reserve('r2', 'run-2', caps, { tokens: 60, costMicros: 0 }, 60_000)).toEqual({ ok: true });
      const refused = await store.budgets.reserve('r3', 'run-3', caps, { tokens: 1, costMicros: 0 }, 60_000);
      expect(refused).toMatchObject({
        ok: false,
        cap: { key: 'agent:a', source: 'budgets.agent:a' },
        spent: { tokens: 0 },
        reserved: { tokens: 120 },
        limit: { tokens: 100 },
      });
      // Nothing of the refused one was held on the cap that had room.
      expect(await store.budgets.spend(['session:s'])).toMatchObject([{ key: 'session:s', reserved: { tokens: 120 } }]);
      await store.budgets.settle('r1', { tokens: 30, costMicros: 5 }, 1000);
      await store.budgets.settle('r1', { tokens: 30, costMicros: 5 }, 1000);
      expect(await store.budgets.spend(['agent:a'])).toMatchObject([{ spent: { tokens: 30, costMicros: 5 }, reserved: { tokens: 60 } }]);
      await store.budgets.settle('r2', { tokens: 80, costMicros: 0 }, 1000);
      expect(await store.budgets.spend(['agent:a', 'session:s'])).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ key: 'agent:a', spent: { tokens: 110, costMicros: 5 }, reserved: { tokens: 0, costMicros: 0 } }),
          expect.objectContaining({ key: 'session:s', spent: { tokens: 110, costMicros: 5 } }),
        ]),
      );
      expect((await store.budgets.reserve('r4', 'run-4', caps, { tokens: 1, costMicros: 0 }, 60_000)).ok).toBe(false);
    });

    it('lets a hold whose call never settled lapse at its expiry, and still counts a late settle', async () => {
      const caps = [cap('agent:b', 10)];
      expect(await store.budgets.reserve('h1', 'run-1', caps, { tokens: 50, costMicros: 0 }, 0)).toEqual({ ok: true });
      expect(await store.budgets.reserve('h2', 'run-2', caps, { tokens: 5, costMicros: 0 }, 60_000)).toEqual({ ok: true });
      await store.budgets.settle('h1', { tokens: 7, costMicros: 0 }, 1000);
      expect(await store.budgets.spend(['agent:b'])).toMatchObject([{ spent: { tokens: 7 }, reserved: { tokens: 5 } }]);
    });

    it('raises a cap, never lowers it, and a raised cap admits again', async () => {
      const caps = [cap('agent:c', 10)];
      await store.budgets.reserve('c1', 'run-1', caps, { tokens: 10, costMicros: 0 }, 60_000);
      await store.budgets.settle('c1', { tokens: 12, costMicros: 0 }, 1000);
      expect((await store.budgets.reserve('c2', 'run-1', caps, { tokens: 1, costMicros: 0 }, 60_000)).ok).toBe(false);
      await store.budgets.raise('agent:c', { tokens: 30 }, 2000);
      await store.budgets.raise('agent:c', { tokens: 20 }, 3000);
      expect(await store.budgets.spend(['agent:c'])).toMatchObject([{ raised: { tokens: 30 }, spent: { tokens: 12 } }]);
      expect(await store.budgets.reserve('c3', 'run-1', caps, { tokens: 1, costMicros: 0 }, 60_000)).toEqual({ ok: true });
      expect((await store.budgets.spendLike('agent:', 10)).map((row) => row.key)).toEqual(['agent:c']);
    });
  });
}
