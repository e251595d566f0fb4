/**
 * A waited send (`wait: true`) is acknowledged by its reply, so its input is stored without a WAL sync of its own;
 * one that answers before the reply (a timeout that says "delivered") makes the input durable first.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { ControlApi } from '../../src/http/control-api.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const TOKEN = 'control-token-for-the-test';
let gateway: Gateway | undefined;
let api: ControlApi | undefined;
afterEach(async () => {
  await gateway?.stop();
  await api?.close();
  await gateway?.store.close();
  gateway = undefined;
  api = undefined;
});

/** A gateway on a new SQLite file (synchronous FULL) with one scripted agent. */
async function gatewayWith(agent: string, rule: string): Promise<{ gateway: Gateway; store: SqliteStore }> {
  const { config } = parseConfigText(
    `{ agents: { list: [{ id: "${agent}", model: "scripted/${agent}" }] }, models: { providers: { scripted: { type: "scripted", models: { ${agent}: { rules: [${rule}] } } } } } }`,
    '/test.json5',
    {},
  );
  const store = await SqliteStore.open({ path: join(mkdtempSync(join(tmpdir(), 'sb-waited-')), 'test.db') });
  return { gateway: await startGateway({ config, store, gatewayId: 'gw-waited' }), store };
}

describe('waited sends and durability (synchronous FULL)', () => {
  it('the input of a waited send is not synced on its own; a timeout syncs it before it says delivered', async () => {
    const started = await gatewayWith('slow', '{ delayMs: 2000, reply: "late" }');
    gateway = started.gateway;
    const store = started.store;
    api = new ControlApi(gateway, { host: '127.0.0.1', port: 0, token: TOKEN });
    const url = await api.listen();
    const wal = store.wal!;

    // In process: a waited send's accept starts no sync.
    const before = wal.syncs;
    const sent = await gateway.send({ target: 'slow', message: 'in process', waiting: true });
    expect(sent.created).toBe(true);
    expect(wal.syncs).toBe(before);

    // Through the API: the timeout's "delivered" comes after a sync that covers the input.
    const answer = await fetch(`${url}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'agent:slow:api:direct:p', message: 'over http', wait: true, timeoutSeconds: 0.3 }),
    });
    expect(await answer.json()).toMatchObject({ status: 'timeout', delivered: true });
    expect(wal.syncs).toBe(before + 1);
  });

  it('a waited notify send says stored only after a sync that covers its input and its storing', async () => {
    const started = await gatewayWith('quiet', '{ reply: "unused" }');
    gateway = started.gateway;
    api = new ControlApi(gateway, { host: '127.0.0.1', port: 0, token: TOKEN });
    const url = await api.listen();
    const wal = started.store.wal!;
    let synced = 0;
    const durable = wal.durable.bind(wal);
    wal.durable = () => durable().then(() => void (synced += 1));
    const answer = await fetch(`${url}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'agent:quiet:api:direct:p', message: 'fyi', mode: 'notify', wait: true }),
    });
    const syncedAtAnswer = synced;
    expect(await answer.json()).toMatchObject({ status: 'stored' });
    expect(syncedAtAnswer).toBe(1);
    // Nothing the answer told of is left unsynced: the transaction that stored it was committed and synced.
    expect(started.store.raw.inTransaction).toBe(false);
  });
});

/** Counts the store's reads of inputs and runs by id; `runsGet` reads a run without being counted. */
function countReads(store: SqliteStore) {
  const reads = { inputs: 0, runs: 0 };
  const inputsGet = store.inputs.get.bind(store.inputs);
  const runsGet = store.runs.get.bind(store.runs);
  store.inputs.get = (id) => ((reads.inputs += 1), inputsGet(id));
  store.runs.get = (id) => ((reads.runs += 1), runsGet(id));
  return { reads, runsGet };
}

describe('a wait on an input', () => {
  it('is answered by the commit that consumed it: no read of the run, and no read of the input after the first', async () => {
    const started = await gatewayWith('echo', '{ delayMs: 50, reply: "echo: {{input}}" }');
    gateway = started.gateway;
    const { reads, runsGet } = countReads(started.store);

    const sent = await gateway.send({ target: 'echo', message: 'hi', waiting: true });
    const result = await gateway.waitForInput(sent.input.id, 10_000);
    expect(result).toMatchObject({ status: 'completed', reply: 'echo: hi' });
    if (result.status !== 'completed') throw new Error('not completed');
    // What the waiter was handed is the run as stored.
    expect(result.run).toEqual(await runsGet(result.run.id));
    expect(reads).toEqual({ inputs: 1, runs: 0 });
  });

  it('of a waited send that just created its input (fresh) reads nothing: the commit answers it', async () => {
    const started = await gatewayWith('echo', '{ reply: "echo: {{input}}" }');
    gateway = started.gateway;
    const { reads } = countReads(started.store);

    const began = Date.now();
    for (let i = 0; i < 10; i += 1) {
      const sent = await gateway.send({ target: `agent:echo:test:direct:p${i}`, message: `m${i}`, waiting: true });
      expect(await gateway.waitForInput(sent.input.id, 10_000, sent.created)).toMatchObject({ status: 'completed', reply: `echo: m${i}` });
    }
    expect(reads).toEqual({ inputs: 0, runs: 0 });
    // Woken by their commits, not by the once-a-second backstop.
    expect(Date.now() - began).toBeLessThan(5_000);
  });

  it('called fresh on an input that has already ended still answers it, at its next look', async () => {
    const started = await gatewayWith('echo', '{ reply: "echo: {{input}}" }');
    gateway = started.gateway;
    const sent = await gateway.send({ target: 'echo', message: 'early', waiting: true });
    expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed' });
    expect(await gateway.waitForInput(sent.input.id, 10_000, true)).toMatchObject({ status: 'completed', reply: 'echo: early' });
  });

  it("wakes on its commit's event, not on the once-a-second look that is the backstop", async () => {
    const started = await gatewayWith('echo', '{ reply: "echo: {{input}}" }');
    gateway = started.gateway;
    // Woken by the events about their inputs, ten sends take milliseconds each; left to the backstop, a second each.
    const began = Date.now();
    for (let i = 0; i < 10; i += 1) {
      const sent = await gateway.send({ target: `agent:echo:test:direct:p${i}`, message: `m${i}`, waiting: true });
      expect(await gateway.waitForInput(sent.input.id, 10_000)).toMatchObject({ status: 'completed', reply: `echo: m${i}` });
    }
    expect(Date.now() - began).toBeLessThan(5_000);
  });
});
