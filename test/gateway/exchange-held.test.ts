/**
 * What the end of a run does with the exchanges it sent without taking the reply (replyState `held` and
 * `reply_held`): it lets go of one with no reply yet, and delivers a kept reply as a message, once, even
 * when the reply comes between the listing and the move, and when the settling is replayed after a crash.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExchangeFlow } from '../../src/gateway/messaging/exchanges.js';
import type { EventRecord, ExchangeReplyState, InputRecord, NewInput } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const A = 'agent:asker:main';
const B = 'agent:fast:main';
const reply = { replyRunId: 'run-b', replyStatus: 'succeeded', replyText: 'the answer' };

let store: SqliteStore;
let accepted: NewInput[];
let events: EventRecord[];
let flow: ExchangeFlow;
let next = 0;

beforeEach(async () => {
  store = await SqliteStore.open({ path: ':memory:' });
  accepted = [];
  events = [];
  flow = new ExchangeFlow({
    store,
    clock: { now: () => 1_000 },
    ids: { next: () => `id-${++next}` },
    accept: async (input) => {
      accepted.push(input);
      return (await store.inputs.enqueue(input, 1_000)).input as InputRecord;
    },
    published: (appended) => void events.push(...appended),
  });
});
afterEach(async () => store.close());

async function open(id: string, replyState: ExchangeReplyState, waiterRunId: string | null, maxTurns = 0) {
  const request: NewInput = {
    id: `in-${id}`,
    sessionKey: B,
    idempotencyKey: `send-${id}`,
    mode: 'followup',
    text: 'q',
    provenance: { kind: 'inter_session', sourceSession: A },
  };
  await store.exchanges.open(
    {
      id,
      conversationId: 'c',
      hop: 1,
      requesterSession: A,
      requesterAgent: 'asker',
      targetSession: B,
      targetAgent: 'fast',
      maxTurns,
      replyState,
      waiterRunId,
    },
    request,
    1_000,
  );
}
const states = async () => (await store.exchanges.list()).map((exchange) => [exchange.id, exchange.replyState, exchange.waiterRunId]);

describe('exchanges held by the run that sent them', () => {
  it('at the run end: one with no reply is let go, a kept reply is delivered as a message; other runs are left alone', async () => {
    await open('x1', 'held', 'run-a');
    await open('x2', 'held', 'run-a');
    await store.exchanges.transition('x2', { replyStates: ['held'] }, { replyState: 'reply_held', ...reply }, 1_000);
    await open('x3', 'held', 'run-other');
    for (const held of await flow.held('run-a')) await held.settle(false);
    expect(await states()).toEqual([
      ['x1', 'detached', null],
      ['x2', 'delivered', null],
      ['x3', 'held', 'run-other'],
    ]);
    expect(accepted.map((input) => [input.sessionKey, input.idempotencyKey, input.text])).toEqual([[A, 'exchange:x2:reply', 'the answer']]);
    // The conversation ends (no turns, no channel to announce to) before the exchange moves to delivered.
    expect(
      events
        .map((event) => event.payload as { exchangeId: string; phase: string; replyState: string })
        .map((payload) => [payload.exchangeId, payload.phase, payload.replyState]),
    ).toEqual([
      ['x2', 'done', 'reply_held'],
      ['x2', 'done', 'delivered'],
    ]);
  });

  it('a reply that comes between the listing and the let-go is delivered, not dropped', async () => {
    await open('x1', 'held', 'run-a');
    const [held] = await flow.held('run-a');
    await store.exchanges.transition('x1', { replyStates: ['held'] }, { replyState: 'reply_held', ...reply }, 1_000);
    await held.settle(false);
    expect(await states()).toEqual([['x1', 'delivered', null]]);
    expect(accepted.map((input) => input.text)).toEqual(['the answer']);
  });

  it('settling again after a crash writes the message once (same idempotency key)', async () => {
    await open('x1', 'reply_held', 'run-a');
    await store.exchanges.transition('x1', { replyStates: ['reply_held'] }, reply, 1_000);
    const [first] = await flow.held();
    // The crash came after the message was accepted, before the exchange moved: recovery settles it again.
    const [again] = await flow.held();
    await first.settle(false);
    await again.settle(false);
    expect(await states()).toEqual([['x1', 'delivered', null]]);
    expect((await store.inputs.list({ sessionKey: A })).map((input) => input.idempotencyKey)).toEqual(['exchange:x1:reply']);
  });

  it('with ping-pong turns: at the run end turn 1 carries the kept reply; a wait that takes it gets turn 1 without the text again', async () => {
    await open('x1', 'held', 'run-a', 3);
    await open('x2', 'held', 'run-a', 3);
    for (const id of ['x1', 'x2'])
      await store.exchanges.transition(id, { replyStates: ['held'] }, { replyState: 'reply_held', ...reply }, 1_000);
    const { exchange: taken, taken: took } = await flow.claim((await store.exchanges.get('x2'))!, 'run-a');
    expect([took, taken.replyState, taken.waiterRunId, taken.replyText]).toEqual([true, 'delivered', 'run-a', 'the answer']);
    // A second wait of the same run finds it taken.
    expect((await flow.claim((await store.exchanges.get('x2'))!, 'run-a')).taken).toBe(false);
    for (const held of await flow.held('run-a')) await held.settle(false);
    expect((await store.exchanges.list()).map((exchange) => [exchange.id, exchange.phase, exchange.turn, exchange.replyState])).toEqual([
      ['x1', 'ping_pong', 1, 'delivered'],
      ['x2', 'ping_pong', 1, 'delivered'],
    ]);
    expect(accepted.map((input) => [input.idempotencyKey, input.text])).toEqual([
      ['exchange:x2:turn:1', "(fast's reply, which your sessions_send returned above)"],
      ['exchange:x1:turn:1', 'the answer'],
    ]);
  });
});
