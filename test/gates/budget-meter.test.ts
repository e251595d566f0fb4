/**
 * A model call's reservation always ends (docs/gates.md, "How a cap is kept"): settled with the usage a stream reports,
 * with the whole reservation when it reports none or is cut (cancelled, failed), and with nothing when the call failed
 * before an answer. Nothing is left held to keep other runs waiting.
 */
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { BudgetMeter } from '../../src/gateway/gates/budget-meter.js';
import type { Store } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const { config } = parseConfigText(
  `{ budgets: { reserveOutputTokens: 100, agents: { a: { tokens: 100000 } } }, agents: { list: [{ id: "a", model: "scripted/m" }] },
     models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } } }`,
  '/etc/sb.json5',
  {},
);
const KEY = 'agent:a:2026-12-05';

/** A model whose stream gives `parts` and then, if `fail`, errors. */
function model(parts: LanguageModelV3StreamPart[], fail?: Error): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'fake',
    modelId: 'm',
    supportedUrls: {},
    doGenerate: async () => {
      throw new Error('not used');
    },
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          if (fail) controller.error(fail);
          else controller.close();
        },
      }),
    }),
  };
}

const usage = (input: number | undefined, output: number | undefined) => ({
  inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: undefined, reasoning: undefined },
});
const finish = (input: number | undefined, output: number | undefined): LanguageModelV3StreamPart => ({
  type: 'finish',
  usage: usage(input, output),
  finishReason: { unified: 'stop', raw: undefined },
});
const text: LanguageModelV3StreamPart = { type: 'text-delta', id: 't', delta: 'hello' };

describe('a metered stream', () => {
  let store: Store;
  let ids = 0;
  beforeEach(async () => {
    store = await SqliteStore.open({ path: ':memory:' });
  });
  afterEach(() => store.close());

  const meter = () =>
    new BudgetMeter(
      { config, store: store.budgets, clock: { now: () => Date.now() }, journal: async () => ({}) as never, newId: () => `c${ids++}` },
      { runId: 'run-1', sessionKey: 's', agentId: 'a', model: 'scripted/m', timeoutMs: 600_000, signal: new AbortController().signal },
      [{ key: KEY, source: 'budgets.agents.a', tokens: 100000 }],
    );
  const stream = async (wrapped: LanguageModelV3) =>
    (await wrapped.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] })).stream;
  const drain = async (readable: ReadableStream<LanguageModelV3StreamPart>) => {
    const reader = readable.getReader();
    for (;;) if ((await reader.read()).done) return;
  };
  const spend = async () => (await store.budgets.spend([KEY]))[0];

  it('settles what the finish reports', async () => {
    await drain(await stream(meter().wrap(model([text, finish(30, 12)]))));
    expect(await spend()).toMatchObject({ spent: { tokens: 42 }, reserved: { tokens: 0 } });
  });

  it('counts the whole reservation when the provider reports no usage, or the stream ends without a finish', async () => {
    await drain(await stream(meter().wrap(model([text, finish(undefined, undefined)]))));
    const reservation = (await spend())!.spent.tokens;
    // The prompt's estimate and reserveOutputTokens.
    expect(reservation).toBeGreaterThan(100);
    await drain(await stream(meter().wrap(model([text]))));
    expect(await spend()).toMatchObject({ spent: { tokens: 2 * reservation }, reserved: { tokens: 0 } });
  });

  it('ends the reservation of a stream that is cancelled or fails, counting it whole', async () => {
    const cut = (await stream(meter().wrap(model([text, text])))).getReader();
    await cut.read();
    await cut.cancel('the run was stopped');
    const after = (await spend())!;
    expect(after.reserved.tokens).toBe(0);
    expect(after.spent.tokens).toBeGreaterThan(100);
    await expect(drain(await stream(meter().wrap(model([text], new Error('connection reset')))))).rejects.toThrow('connection reset');
    expect(await spend()).toMatchObject({ spent: { tokens: 2 * after.spent.tokens }, reserved: { tokens: 0 } });
  });
});
