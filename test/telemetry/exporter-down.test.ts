/**
 * A collector that is down or hangs (docs/observability.md): the gateway keeps working, every run completes as it
 * would without telemetry, and the spans that could not be sent are dropped and counted; none waits for the network.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startGateway } from '../../src/app.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
let telemetry: Telemetry | undefined;
let server: Server | undefined;
afterEach(async () => {
  await gateway?.stop();
  await gateway?.store.close();
  await telemetry?.shutdown();
  server?.closeAllConnections();
  server?.close();
  gateway = telemetry = server = undefined;
});

/** A gateway exporting to `endpoint`, its queue small, its exports given up after `timeoutMs`. */
async function start(endpoint: string, timeoutMs = 300): Promise<{ gateway: Gateway; telemetry: Telemetry }> {
  const { config } = parseConfigText(
    `{
      telemetry: { traces: { endpoint: "${endpoint}", exportIntervalMs: 20, timeoutMs: ${timeoutMs}, maxQueueSize: 16 } },
      agents: { list: [{ id: "echo", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
    }`,
    '/test/switchboard.json5',
    {},
  );
  const warnings: string[] = [];
  telemetry = await openTelemetry(config.telemetry, { gatewayId: 'gw-test', warn: (message) => warnings.push(message) });
  gateway = await startGateway({
    config,
    store: await SqliteStore.open({ path: ':memory:' }),
    gatewayId: 'gw-test',
    tracing: telemetry.tracing,
  });
  return { gateway, telemetry };
}

async function sendMany(gw: Gateway, count: number): Promise<string[]> {
  const replies: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const sent = await gw.send({ target: 'echo', message: `m${i}`, inbound: { channel: 'api', peer: `p${i}` } });
    const result = await gw.waitForInput(sent.input.id, 10_000);
    expect(result.status).toBe('completed');
    replies.push((result as { reply: string }).reply);
  }
  return replies;
}

describe('the trace exporter', () => {
  it('with nothing listening at the endpoint: every run completes, and the spans are dropped and counted', async () => {
    // A port that was free a moment ago: the connection is refused.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const { gateway, telemetry } = await start(`http://127.0.0.1:${port}/v1/traces`);
    expect(await sendMany(gateway, 40)).toEqual(Array.from({ length: 40 }, (_, i) => `echo m${i}`));
    // 40 runs made 80 spans (a run and its model call each): none was sent; past the queue they were dropped at once.
    await waitUntil('the spans are counted as dropped', () => telemetry.spans().dropped >= 80, 20_000, 20);
    expect(telemetry.spans()).toEqual({ exported: 0, dropped: 80 });
  });

  it('with a collector that never answers: runs do not wait for it, and what is held past the queue is dropped', async () => {
    const held: unknown[] = [];
    server = createServer((request) => held.push(request));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    // An export is given up only after a minute, longer than any of these runs may take (sendMany waits 10 s each):
    // a run that waited on an export would fail the test.
    const { gateway, telemetry } = await start(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, 60_000);
    await waitUntil(
      'the first export is held by the collector',
      async () => {
        await sendMany(gateway, 1);
        return held.length > 0;
      },
      10_000,
      20,
    );
    expect(await sendMany(gateway, 20)).toHaveLength(20);
    // The export in flight holds at most a batch; past the queue of 16 the rest were dropped and counted.
    expect(telemetry.spans().dropped).toBeGreaterThan(0);
    expect(telemetry.spans().exported).toBe(0);
  });
});
