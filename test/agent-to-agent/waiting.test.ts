/**
 * sessions_send waiting semantics: a reply that comes in time is the tool's result; one that comes late
 * (or after a fire-and-forget send) arrives in the requester's session as a message, exactly once; a
 * reply taken by a run that then fails is delivered again as a message; sessions_wait collects replies.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
});

const A = 'agent:asker:main';
const B = 'agent:slow:main';

const config = (askerRules: string, extra = '') => `{
  tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
  ${extra}
  agents: { list: [
    { id: "asker", model: "scripted/asker", timeoutSeconds: 2 },
    { id: "slow", model: "scripted/slow" },
    { id: "fast", model: "scripted/fast" },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    asker: { rules: [
      { match: "the reply to your sessions_send", reply: "late reply read: {{input}}" },
      ${askerRules}
    ] },
    slow: { rules: [{ match: "broken", error: "the model is down" }, { delayMs: 400, reply: "slow answer to {{input}}" }] },
    fast: { rules: [{ reply: "fast answer to {{input}}" }] },
  } } } },
}`;

async function ask(message: string): Promise<string> {
  const sent = await gateway.send({ target: 'asker', message });
  const result = await gateway.waitForInput(sent.input.id, 10_000);
  if (result.status !== 'completed') throw new Error(`not completed: ${result.status}`);
  return result.reply ?? '';
}

/**
 * The asker sends `message` to `agent` without waiting, then waits `timeoutMs` for that agent's session: the wait's
 * answer. `store` may be one that forces an ordering; `maxPingPongTurns` is 0 unless given.
 */
async function sendThenWait(agent: string, message: string, timeoutMs: number, store?: SqliteStore, maxPingPongTurns = 0) {
  const script = `{ match: "go", steps: [
    { toolCalls: [{ tool: "sessions_send", args: { agentId: "${agent}", message: "${message}", timeoutSeconds: 0 } }] },
    { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: ["agent:${agent}:main"], timeoutMs: ${timeoutMs} } }] },
    { text: "{{tool.sessions_wait}}" },
  ] },`;
  gateway = await startTestGateway(config(script).replace('maxPingPongTurns: 0', `maxPingPongTurns: ${maxPingPongTurns}`), {}, store);
  return JSON.parse(await ask('go'));
}

/**
 * A store in which `race` runs once, just before the first exchange transition that `when` picks: another
 * party's move landing between a step's read of the exchange and its own compare-and-set.
 */
async function storeWithRace(
  when: (expected: ExchangeExpectation, changes: ExchangeChanges) => boolean,
  race: (exchanges: ExchangeStore, id: string, now: number) => Promise<unknown>,
) {
  const store = await SqliteStore.open({ path: ':memory:' });
  const exchanges = store.exchanges;
  let raced = false;
  const transition: ExchangeStore['transition'] = async (id, expected, changes, now) => {
    if (!raced && when(expected, changes)) {
      raced = true;
      await race(exchanges, id, now);
    }
    return exchanges.transition(id, expected, changes, now);
  };
  Object.defineProperty(store, 'exchanges', { value: Object.assign(Object.create(exchanges), { transition }) });
  return { store, raced: () => raced };
}
type ExchangeStore = SqliteStore['exchanges'];
type ExchangeFilter = NonNullable<Parameters<ExchangeStore['list']>[0]>;

/**
 * A store whose exchanges' `method`, on the first call `when` picks, first waits until every exchange has its
 * reply: the target's reply comes before that step of the requester, however fast the requester is.
 */
async function storeWithReplyBefore(method: 'list' | 'open', when: (args: unknown[]) => boolean) {
  const store = await SqliteStore.open({ path: ':memory:' });
  const exchanges = store.exchanges;
  const real = exchanges[method] as (...args: unknown[]) => Promise<unknown>;
  let paused = false;
  const wrapped = async (...args: unknown[]) => {
    if (!paused && when(args)) {
      paused = true;
      await waitUntil('the target replied', async () => (await exchanges.list()).every((exchange) => exchange.replyRunId !== null));
    }
    return real.apply(exchanges, args);
  };
  Object.defineProperty(store, 'exchanges', { value: Object.assign(Object.create(exchanges), { [method]: wrapped }) });
  return { store, paused: () => paused };
}
const listing = (args: unknown[], has: (filter: ExchangeFilter) => boolean) => {
  const filter = args[0] as ExchangeFilter | undefined;
  return filter?.replyStates !== undefined && has(filter);
};
type ExchangeExpectation = Parameters<ExchangeStore['transition']>[1];
type ExchangeChanges = Parameters<ExchangeStore['transition']>[2];

const replyInputs = async () =>
  (await gateway.store.inputs.list({ sessionKey: A, limit: 100 })).filter((input) => input.provenance.exchange?.step === 'reply');

describe('sessions_send: waiting for the reply', () => {
  it('a reply in time is the tool result: {status: "ok", reply, runId, sessionKey}; nothing is delivered again', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "q1", timeoutSeconds: 5 } }] }, { text: "{{tool.sessions_send}}" }] },`,
      ),
    );
    const result = JSON.parse(await ask('go'));
    const [targetRun] = await gateway.listRuns({ sessionKey: 'agent:fast:main' });
    // All of it: a reply in hand needs no input id, and the conversation id is the gateway's (it is sent with every later call).
    expect(result).toEqual({ status: 'ok', reply: 'fast answer to q1', runId: targetRun.id, sessionKey: 'agent:fast:main' });
    const [exchange] = await gateway.store.exchanges.list();
    await waitUntil('the exchange is settled', async () => (await gateway.store.exchanges.get(exchange.id))?.phase === 'done');
    expect(await gateway.store.exchanges.get(exchange.id)).toMatchObject({ replyState: 'delivered', replyRunId: targetRun.id });
    expect(await replyInputs()).toEqual([]);
  });

  it('on timeout: {status: "timeout", delivered: true}; the late reply reaches the requester once, as a new run', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "slow", message: "q2", timeoutSeconds: 0.1 } }] }, { text: "{{tool.sessions_send}}" }] },`,
      ),
    );
    const result = JSON.parse(await ask('go'));
    expect(result).toMatchObject({ status: 'timeout', delivered: true, sessionKey: B, inputId: expect.any(String) });
    expect(result).not.toHaveProperty('conversationId');
    expect(result.note).toMatch(/will still be processed/);
    const [late] = await waitUntil('the late reply arrived', async () => {
      const inputs = await replyInputs();
      return inputs.length > 0 && inputs.every((input) => input.status === 'consumed') && inputs;
    });
    expect(late.text).toBe('slow answer to q2');
    expect(late.provenance).toMatchObject({
      kind: 'inter_session',
      sourceAgent: 'slow',
      sourceSession: B,
      exchange: { step: 'reply', role: 'requester' },
    });
    const run = await gateway.getRun(late.runId!);
    expect(run.run.finalText).toBe('late reply read: slow answer to q2');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await replyInputs()).toHaveLength(1);
  });

  it('timeoutSeconds 0 returns {status: "accepted"} at once and the reply comes back as a message', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "q3", timeoutSeconds: 0 } }] }, { text: "{{tool.sessions_send.status}}" }] },`,
      ),
    );
    expect(await ask('go')).toBe('accepted');
    const [late] = await waitUntil('the reply arrived', async () => {
      const consumed = (await replyInputs()).filter((input) => input.status === 'consumed');
      return consumed.length > 0 && consumed;
    });
    expect(late.text).toBe('fast answer to q3');
  });

  it('a waiter that takes the exchange just as its reply comes gets the reply; it is not lost', async () => {
    // A waiter takes a fire-and-forget exchange (held by its run, or detached once the run ended) between the reply
    // step's read of it and its move: the step must then hand the reply to the waiter instead of keeping it aside.
    const { store, raced } = await storeWithRace(
      (expected, changes) =>
        ['held', 'detached'].includes(expected.replyStates?.[0] ?? '') && ['reply_held', 'delivered'].includes(changes.replyState ?? ''),
      (exchanges, id, now) =>
        exchanges.transition(id, { replyStates: ['held', 'detached'] }, { replyState: 'awaiting', waiterRunId: 'api:waiter' }, now),
    );
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "q4", timeoutSeconds: 0 } }] }, { text: "{{tool.sessions_send.status}}" }] },`,
      ),
      {},
      store,
    );
    expect(await ask('go')).toBe('accepted');
    const [exchange] = await gateway.store.exchanges.list();
    const settled = await waitUntil('the exchange is done', async () => {
      const current = await gateway.store.exchanges.get(exchange.id);
      return current?.phase === 'done' && current;
    });
    expect(raced()).toBe(true);
    expect(settled).toMatchObject({
      replyState: 'replied',
      waiterRunId: 'api:waiter',
      replyText: 'fast answer to q4',
      replyStatus: 'succeeded',
    });
  });

  it('a failed target run is reported as {status: "error"} naming how it ended', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "slow", message: "broken", timeoutSeconds: 5 } }] }, { text: "{{tool.sessions_send.status}}: {{tool.sessions_send.error}}" }] },`,
      ),
    );
    expect(await ask('go')).toBe('error: the target\'s run ended "failed": the model is down (HTTP 500 from scripted://slow)');
  });

  it('a reply taken by a run that then fails is delivered again, as a message', async () => {
    // The asker takes the fast reply, then waits on the slow one past its own 2 s run timeout.
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "q4", timeoutSeconds: 5 } }] },
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "slow", message: "q5 slow", timeoutSeconds: 30 } }] },
        { text: "never" },
      ] },`).replace('delayMs: 400', 'delayMs: 3000'),
    );
    const sent = await gateway.send({ target: 'asker', message: 'go' });
    const result = await gateway.waitForInput(sent.input.id, 10_000);
    expect(result).toMatchObject({ status: 'completed', run: { status: 'timed_out' } });
    const delivered = await waitUntil(
      'both replies arrived as messages',
      async () => {
        const inputs = await replyInputs();
        return inputs.length === 2 && inputs.every((input) => input.status === 'consumed') && inputs;
      },
      10_000,
    );
    expect(delivered.map((input) => input.text).sort()).toEqual(['fast answer to q4', 'slow answer to q5 slow']);
  });
});

describe('sessions_send: lanes', () => {
  it('with one main slot, held by the waiting requester, the target still answers: it runs in the nested lane', async () => {
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "q6", timeoutSeconds: 5 } }] }, { text: "{{tool.sessions_send.status}} {{tool.sessions_send.reply}}" }] },`,
        'lanes: { main: { maxConcurrent: 1 } },',
      ),
    );
    expect(await ask('go')).toBe('ok fast answer to q6');
  });
});

describe('sessions_send: idempotency', () => {
  it('the same idempotencyKey twice creates one input; the repeat returns the same reply', async () => {
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
      { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "once", idempotencyKey: "k1" } }] },
      { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "once", idempotencyKey: "k1" } }] },
      { text: "{{tool.sessions_send.status}} {{tool.sessions_send.reply}}" },
    ] },`),
    );
    expect(await ask('go')).toBe('ok fast answer to once');
    expect(await gateway.store.inputs.list({ sessionKey: 'agent:fast:main' })).toHaveLength(1);
    expect(await gateway.listRuns({ sessionKey: 'agent:fast:main' })).toHaveLength(1);
  });

  it('a repeated send that waits takes the reply kept for its run; nothing is delivered again', async () => {
    // The repeat is opened only once the reply to the first send is kept for the run.
    let opens = 0;
    const { store, paused } = await storeWithReplyBefore('open', () => ++opens === 2);
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
      { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "twice", idempotencyKey: "k2", timeoutSeconds: 0 } }] },
      { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "twice", idempotencyKey: "k2", timeoutSeconds: 5 } }] },
      { text: "{{tool.sessions_send.status}} {{tool.sessions_send.reply}}" },
    ] },`),
      {},
      store,
    );
    expect(await ask('go')).toBe('ok fast answer to twice');
    expect(paused()).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await replyInputs()).toEqual([]);
    expect(await gateway.store.inputs.list({ sessionKey: 'agent:fast:main' })).toHaveLength(1);
  });

  it('a repeat that does not wait gets no reply once the reply went to the session as a message (it is not given twice)', async () => {
    gateway = await startTestGateway(config(''));
    const request = { agentId: 'fast', message: 'once more', timeoutSeconds: 0, idempotencyKey: 'no-wait' };
    expect(await gateway.sendAs(A, request)).toMatchObject({ status: 'accepted' });
    await waitUntil('the reply came as a message', async () => (await replyInputs()).length === 1);
    const again = await gateway.sendAs(A, request);
    expect(again).toMatchObject({
      status: 'accepted',
      note: 'this message was sent before (same idempotencyKey); its reply was already delivered to this session',
    });
    expect(again).not.toHaveProperty('reply');
  });

  it('send --from with the same key twice stores one message and returns the stored reply to both', async () => {
    gateway = await startTestGateway(config(''));
    const request = { agentId: 'fast', message: 'hello', timeoutSeconds: 5, idempotencyKey: 'same' };
    const first = await gateway.sendAs(A, request);
    const second = await gateway.sendAs(A, request);
    expect(first).toMatchObject({ status: 'ok', reply: 'fast answer to hello' });
    expect(second).toMatchObject({ status: 'ok', reply: 'fast answer to hello', inputId: first.inputId });
    expect(await gateway.store.inputs.list({ sessionKey: 'agent:fast:main' })).toHaveLength(1);
  });
});

describe('sessions_wait', () => {
  it('collects the replies of fire-and-forget sends (mode all); they are not delivered again as messages', async () => {
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
      { toolCalls: [
        { tool: "sessions_send", args: { agentId: "fast", message: "a", timeoutSeconds: 0 } },
        { tool: "sessions_send", args: { agentId: "slow", message: "b", timeoutSeconds: 0 } },
      ] },
      { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: ["agent:fast:main", "agent:slow:main"], timeoutMs: 5000, mode: "all" } }] },
      { text: "{{tool.sessions_wait}}" },
    ] },`),
    );
    const result = JSON.parse(await ask('go'));
    expect(result.timedOut).toBe(false);
    expect(
      result.sessions.map((s: { sessionKey: string; settled: boolean; replies: { reply: string }[] }) => [
        s.sessionKey,
        s.settled,
        s.replies.map((r) => r.reply),
      ]),
    ).toEqual([
      ['agent:fast:main', true, ['fast answer to a']],
      ['agent:slow:main', true, ['slow answer to b']],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await replyInputs()).toEqual([]);
    expect((await gateway.store.exchanges.list()).map((exchange) => exchange.replyState)).toEqual(['delivered', 'delivered']);
  });

  it('a reply that came before sessions_wait began is still its to take, and not delivered again', async () => {
    // The run that sent holds the exchange until it ends, so the reply waits for it instead of becoming a message.
    const { store, paused } = await storeWithReplyBefore('list', (args) =>
      listing(args, (filter) => filter.requesterSession === A && filter.targetSession !== undefined),
    );
    const result = await sendThenWait('fast', 'e', 5000, store);
    expect(paused()).toBe(true);
    expect(result.sessions).toMatchObject([
      { sessionKey: 'agent:fast:main', settled: true, waitingForReplies: 0, replies: [{ reply: 'fast answer to e', status: 'ok' }] },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await replyInputs()).toEqual([]);
    const [run] = await gateway.listRuns({ sessionKey: A });
    expect((await gateway.store.exchanges.list()).map((exchange) => [exchange.replyState, exchange.waiterRunId])).toEqual([
      ['delivered', run.id],
    ]);
  });

  it('with ping-pong turns, a reply that came before sessions_wait is in its answer, and turn 1 does not repeat it', async () => {
    const { store, paused } = await storeWithReplyBefore('list', (args) =>
      listing(args, (filter) => filter.requesterSession === A && filter.targetSession !== undefined),
    );
    const result = await sendThenWait('fast', 'g', 5000, store, 1);
    expect(paused()).toBe(true);
    expect(result.sessions[0].replies).toMatchObject([{ reply: 'fast answer to g', status: 'ok' }]);
    const turn = await waitUntil('turn 1 ran', async () => {
      const inputs = await gateway.store.inputs.list({ sessionKey: A, limit: 100 });
      return inputs.find((input) => input.provenance.exchange?.step === 'turn' && input.status === 'consumed');
    });
    expect(turn.text).toBe("(fast's reply, which your sessions_send returned above)");
    expect(await replyInputs()).toEqual([]);
  });

  it('a reply that comes between sessions_wait reading an exchange and taking it is in its answer', async () => {
    // The reply is kept for the run (held -> reply_held) just before the wait's move held -> awaiting, which then
    // fails: the wait must try again from reply_held and take the reply.
    const { store, raced } = await storeWithRace(
      (expected, changes) => expected.replyStates?.[0] === 'held' && changes.replyState === 'awaiting',
      (exchanges, id, now) =>
        exchanges.transition(
          id,
          { replyStates: ['held'] },
          { replyState: 'reply_held', replyRunId: 'run-raced', replyStatus: 'succeeded', replyText: 'the raced reply' },
          now,
        ),
    );
    const result = await sendThenWait('slow', 'i', 5000, store);
    expect(raced()).toBe(true);
    expect(result.sessions[0]).toMatchObject({
      sessionKey: B,
      settled: true,
      waitingForReplies: 0,
      replies: [{ reply: 'the raced reply', status: 'ok' }],
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await replyInputs()).toEqual([]);
  });

  it('two waits of one run (at once, then another) do not both return a reply: it is in one answer only', async () => {
    const { store, paused } = await storeWithReplyBefore('list', (args) =>
      listing(args, (filter) => filter.requesterSession === A && filter.targetSession !== undefined),
    );
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "h", timeoutSeconds: 0 } }] },
        { toolCalls: [
          { tool: "sessions_wait", args: { sessionKeys: ["agent:fast:main"], timeoutMs: 300 } },
          { tool: "sessions_wait", args: { sessionKeys: ["agent:fast:main"], timeoutMs: 300 } },
        ] },
        { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: ["agent:fast:main"], timeoutMs: 300 } }] },
        { text: "done" },
      ] },`),
      {},
      store,
    );
    expect(await ask('go')).toBe('done');
    expect(paused()).toBe(true);
    const waits = (await gateway.store.transcript.list(A))
      .filter((entry) => entry.role === 'tool')
      .flatMap((entry) => entry.content as { toolName: string; output: { value: { sessions: { replies: { reply: string }[] }[] } } }[])
      .filter((part) => part.toolName === 'sessions_wait');
    expect(waits.map((part) => part.output.value.sessions[0].replies.map((reply) => reply.reply)).sort()).toEqual([
      [],
      [],
      ['fast answer to h'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await replyInputs()).toEqual([]);
  });

  it('a reply kept for the run that sent it, and not taken, arrives as a message once that run ends', async () => {
    // The run ends with the reply already kept for it (reply_held): it is delivered then, once.
    const { store, paused } = await storeWithReplyBefore('list', (args) =>
      listing(args, (filter) => filter.waiterRunId !== undefined && filter.targetSession === undefined),
    );
    gateway = await startTestGateway(
      config(
        `{ match: "go", steps: [{ toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "f", timeoutSeconds: 0 } }] }, { text: "sent" }] },`,
      ),
      {},
      store,
    );
    expect(await ask('go')).toBe('sent');
    const [late] = await waitUntil('the reply arrived', async () => {
      const consumed = (await replyInputs()).filter((input) => input.status === 'consumed');
      return consumed.length > 0 && consumed;
    });
    expect(paused()).toBe(true);
    expect(late.text).toBe('fast answer to f');
    expect((await gateway.getRun(late.runId!)).run.finalText).toBe('late reply read: fast answer to f');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await replyInputs()).toHaveLength(1);
    expect((await gateway.store.exchanges.list()).map((exchange) => [exchange.replyState, exchange.waiterRunId])).toEqual([
      ['delivered', null],
    ]);
  });

  it('a reply that comes just as sessions_wait lets go is in its answer (and so not lost)', async () => {
    // The reply step takes the exchange for the waiter (awaiting -> replied) right before sessions_wait, timing
    // out, lets it go: the reply is then the waiter's, so the answer must carry it.
    const { store, raced } = await storeWithRace(
      (expected, changes) =>
        expected.replyStates?.[0] === 'awaiting' && expected.waiterRunId !== undefined && changes.replyState === 'held',
      (exchanges, id, now) =>
        exchanges.transition(
          id,
          { replyStates: ['awaiting'] },
          { replyState: 'replied', replyRunId: 'run-raced', replyStatus: 'succeeded', replyText: 'the raced reply' },
          now,
        ),
    );
    const result = await sendThenWait('slow', 'd', 50, store);
    expect(raced()).toBe(true);
    expect(result.sessions[0]).toMatchObject({
      sessionKey: B,
      waitingForReplies: 0,
      replies: [{ reply: 'the raced reply', status: 'ok' }],
    });
  });

  it('times out with {timedOut: true}; the reply it did not get still arrives as a message', async () => {
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
      { toolCalls: [{ tool: "sessions_send", args: { agentId: "slow", message: "c", timeoutSeconds: 0 } }] },
      { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: ["agent:slow:main"], timeoutMs: 50 } }] },
      { text: "{{tool.sessions_wait.timedOut}} {{tool.sessions_wait.sessions.0.waitingForReplies}}" },
    ] },`),
    );
    expect(await ask('go')).toBe('true 1');
    const [late] = await waitUntil('the reply arrived', async () => {
      const consumed = (await replyInputs()).filter((input) => input.status === 'consumed');
      return consumed.length > 0 && consumed;
    });
    expect(late.text).toBe('slow answer to c');
  });

  it('refuses bad arguments with the exact error', async () => {
    // sessions_wait is offered once there is something to wait for: here, a message sent first.
    gateway = await startTestGateway(
      config(`{ match: "go", steps: [
        { toolCalls: [{ tool: "sessions_send", args: { agentId: "fast", message: "x", timeoutSeconds: 0 } }] },
        { toolCalls: [{ tool: "sessions_wait", args: { sessionKeys: [], timeoutMs: 5 } }] },
        { text: "{{tool.sessions_wait}}" }] },`),
    );
    expect(JSON.parse(await ask('go'))).toEqual({
      status: 'error',
      code: 'INVALID_REQUEST',
      error: 'sessionKeys must be a list of 1 to 20 session keys',
    });
  });
});
