/**
 * Budgets (docs/gates.md): 20 runs at once under one cap of N tokens, on a fake OpenAI-compatible model that reports
 * 28 tokens a call. Each model call reserves before it is sent and settles after, so what they spend ends within one
 * call of the cap per run (a call waits while the cap is full only with what calls under way reserved); the spend the
 * budget counted is what the runs say they used; the next run is refused with the cap's key. The same on PostgreSQL
 * with two gateways drawing on the one cap.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { RunRecord } from '../../src/ports/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { FakeProviderServer } from '../helpers/fake-provider.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

/** What the fake provider reports for every call (fake-provider.ts OPENAI_USAGE). */
const PER_CALL = 28;
/** Model calls a run makes when nothing stops it: three time_now steps and the answer. */
const CALLS = 4;
const RUNS = 20;
const CAP = 1000;

function config(providerUrl: string, store = ''): string {
  return `{
    ${store}
    lanes: { main: { maxConcurrent: ${RUNS} } },
    budgets: { agents: { worker: { tokens: ${CAP} } }, reserveOutputTokens: 50 },
    agents: { list: [{ id: "worker", model: "fake/m" }] },
    models: { providers: { fake: { type: "openai-compatible", baseURL: "${providerUrl}/v1" } } },
  }`;
}

/** A run's model: time_now until three tools have answered, then the answer. */
function provider(): FakeProviderServer {
  const server = new FakeProviderServer();
  server.responder = (body: { messages: { role: string }[] }) => {
    const tools = body.messages.filter((message) => message.role === 'tool').length;
    return tools < CALLS - 1 ? { toolCall: { id: `call_${tools}`, name: 'time_now', args: {} } } : { text: 'done' };
  };
  server.delayMs = 5;
  return server;
}

async function runAll(gateways: Gateway[], count: number): Promise<RunRecord[]> {
  const sent = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      gateways[i % gateways.length]!.send({ target: 'worker', message: `go ${i}`, inbound: { channel: 'api', peer: `p${i}` } }),
    ),
  );
  return Promise.all(
    sent.map(async ({ input }, i) => {
      const outcome = await gateways[i % gateways.length]!.waitForInput(input.id, 60_000);
      if (outcome.status !== 'completed') throw new Error(`run ${i} did not end: ${outcome.status}`);
      return outcome.run;
    }),
  );
}

async function checkSpend(gateways: Gateway[]): Promise<void> {
  const runs = await runAll(gateways, RUNS);
  const day = new Date(Date.now()).toISOString().slice(0, 10);
  const [budget] = await gateways[0]!.budgetStatus();
  expect(budget).toMatchObject({ key: `agent:worker:${day}`, source: 'budgets.agents.worker', limit: { tokens: CAP } });
  const used = runs.reduce((sum, run) => sum + run.usage.inputTokens + run.usage.outputTokens, 0);
  // What the budget counted is what the runs used, and nothing is left reserved.
  expect(budget!.spent.tokens).toBe(used);
  expect(budget!.reserved.tokens).toBe(0);
  // The cap was used up (no run was refused while it had room), and passed by at most one call per run.
  expect(budget!.spent.tokens).toBeGreaterThanOrEqual(CAP);
  expect(budget!.spent.tokens).toBeLessThanOrEqual(CAP + RUNS * PER_CALL);
  const refused = runs.filter((run) => run.status === 'failed');
  expect(refused.length).toBeGreaterThan(0);
  for (const run of refused) expect(run.errorCode).toBe('BUDGET_EXCEEDED');
  const [next] = await runAll(gateways, 1);
  expect(next).toMatchObject({ status: 'failed', errorCode: 'BUDGET_EXCEEDED' });
  expect(next!.errorMessage).toContain(`budget agent:worker:${day} (budgets.agents.worker) is used up`);
  expect(next!.usage.modelCalls).toBe(0);
}

describe('a budget under 20 parallel runs', () => {
  let gateway: Gateway | undefined;
  const server = provider();
  afterEach(async () => {
    if (gateway) await stopTestGateway(gateway);
    gateway = undefined;
  });
  afterAll(() => server.close());

  it('ends within one call per run of the cap, counts what the runs used, and refuses the next run naming the key', async () => {
    await server.start();
    gateway = await startTestGateway(config(server.url));
    await checkSpend([gateway]);
  }, 120_000);
});

const schema = `sb_budgets_${process.pid}`;
if (process.env.CI || (await postgresReachable())) {
  describe('a budget across two gateways on PostgreSQL', () => {
    const gateways: Gateway[] = [];
    const server = provider();
    afterAll(async () => {
      for (const gateway of gateways) await stopTestGateway(gateway);
      await server.close();
      await dropSchemas(schema);
    });

    it('holds the cap for both: the same bounds with the runs split between them', async () => {
      await server.start();
      for (const id of ['gw-a', 'gw-b']) {
        const store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
        const gateway = await startTestGateway(config(server.url), {}, store);
        (gateway as { gatewayId: string }).gatewayId = id;
        gateways.push(gateway);
      }
      await checkSpend(gateways);
    }, 120_000);
  });
}

/** An agent whose second model call finds its cap of 10 tokens used up, under onLimit ask. */
const ASKING = `{
  budgets: { onLimit: "ask", agents: { worker: { tokens: 10 } } },
  agents: { list: [{ id: "worker", model: "scripted/worker" }] },
  models: { providers: { scripted: { type: "scripted", models: { worker: { rules: [{ steps: [
    { toolCalls: [{ tool: "time_now" }] },
    { text: "it is {{tool.time_now}}" },
  ] }] } } } } },
}`;

describe('budgets.onLimit: ask', () => {
  let gateway: Gateway | undefined;
  afterEach(async () => {
    if (gateway) await stopTestGateway(gateway);
    gateway = undefined;
  });

  it('suspends the run at the cap with a request to raise it; approving raises the cap and the run goes on', async () => {
    gateway = await startTestGateway(ASKING);
    const gw = gateway;
    const { input } = await gw.send({ target: 'worker', message: 'what time is it' });
    const day = new Date().toISOString().slice(0, 10);
    const asked = await waitUntil('a request to raise the cap', async () => (await gw.listApprovals({ status: 'pending' }))[0], 10_000, 10);
    expect(asked).toMatchObject({
      kind: 'budget',
      subject: `agent:worker:${day}`,
      editable: true,
      details: { source: 'budgets.agents.worker', limit: { tokens: 10 } },
    });
    const spent = (asked.details as { spent: { tokens: number } }).spent.tokens;
    expect(spent).toBeGreaterThanOrEqual(10);
    expect((asked.args as { tokens: number }).tokens).toBeGreaterThan(spent);
    await waitUntil('the run suspends', async () => (await gw.getRun(asked.runId)).run.status === 'suspended', 10_000, 10);
    await expect(gw.decideApproval(asked.id, { approve: true, by: 'x', editedArgs: { tokens: -1 } })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
    });
    // A raise that gives no room is refused, so that the run is never woken to be refused again.
    for (const editedArgs of [{}, { tokens: 10 }, { tokens: spent }, { costMicros: 5_000_000 }]) {
      await expect(gw.decideApproval(asked.id, { approve: true, by: 'x', editedArgs })).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringContaining(`tokens must be above ${spent} (the cap, or what it spent and holds)`),
      });
    }
    await gw.decideApproval(asked.id, { approve: true, by: 'cli:ann', editedArgs: { tokens: 100_000 } });
    const outcome = await gw.waitForInput(input.id, 20_000);
    expect(outcome).toMatchObject({ status: 'completed', run: { status: 'succeeded', attempt: 2 } });
    const [budget] = await gw.budgetStatus();
    expect(budget).toMatchObject({ key: `agent:worker:${day}`, limit: { tokens: 100_000 } });
  }, 30_000);

  it('fails the run with BUDGET_EXCEEDED when the raise is denied', async () => {
    gateway = await startTestGateway(ASKING);
    const gw = gateway;
    const { input } = await gw.send({ target: 'worker', message: 'what time is it' });
    const asked = await waitUntil('a request to raise the cap', async () => (await gw.listApprovals({ status: 'pending' }))[0], 10_000, 10);
    await gw.decideApproval(asked.id, { approve: false, by: 'cli:ann', note: 'enough for today' });
    const outcome = await gw.waitForInput(input.id, 20_000);
    expect(outcome).toMatchObject({ status: 'completed', run: { status: 'failed', errorCode: 'BUDGET_EXCEEDED' } });
  }, 30_000);

  it("lets every run waiting on a cap go on once one request's raise gives it room", async () => {
    gateway = await startTestGateway(ASKING);
    const gw = gateway;
    const sent = await Promise.all(
      ['p1', 'p2'].map((peer) => gw.send({ target: 'worker', message: 'what time is it', inbound: { channel: 'api', peer } })),
    );
    const asked = await waitUntil(
      'both runs ask',
      async () => {
        const pending = await gw.listApprovals({ status: 'pending' });
        return pending.length === 2 && pending;
      },
      10_000,
      10,
    );
    await gw.decideApproval(asked[0]!.id, { approve: true, by: 'cli:ann', editedArgs: { tokens: 100_000 } });
    for (const { input } of sent) {
      expect(await gw.waitForInput(input.id, 20_000)).toMatchObject({ status: 'completed', run: { status: 'succeeded' } });
    }
    // The other request was never answered; its run ended without it.
    expect(await gw.getApproval(asked[1]!.id)).toMatchObject({ status: 'closed' });
  }, 30_000);
});
