/**
 * What a gateway process loads at startup: the A2A server's stack (express and the SDK's server) only
 * when the A2A server is on, undici only with the first guarded outbound call, the OpenTelemetry SDK and its
 * exporters only when telemetry is on (docs/observability.md), and a chat platform's library only for an account of it. Loading them is about
 * a fifth of the cold start (BENCHMARKS.md, Cold start), so a static import of them creeping back is a
 * regression. express and undici are CommonJS, so a loaded one shows in require.cache.
 */
import { describe, expect, it } from 'vitest';
import { ROOT, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

/** The chat platforms' libraries (CommonJS all three), loaded only for a configured account of theirs. */
const CHAT = ['grammy', '@slack/bolt', 'discord.js'];

const OTEL = [
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/exporter-prometheus',
];

/** Printed to stderr as the process exits: which of these packages it had loaded. */
const REPORT = `data:text/javascript,${encodeURIComponent(`
import { createRequire } from 'node:module';
const cache = createRequire(${JSON.stringify(`${ROOT}/package.json`)}).cache;
process.on('exit', () => {
  const loaded = ['express', 'undici', ...${JSON.stringify(OTEL)}, ...${JSON.stringify(CHAT)}].filter((name) => Object.keys(cache).some((path) => path.includes('/node_modules/' + name + '/')));
  process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n');
});`)}`;

async function loadedAtStartup(config: string): Promise<string[]> {
  const gateway = await startGatewayProcess(tempConfig(config).configPath, { NODE_OPTIONS: `--import ${REPORT}` });
  await stopGatewayProcess(gateway);
  const line = gateway
    .stderr()
    .split('\n')
    .find((text) => text.startsWith('LOADED '));
  expect(line, gateway.stderr()).toBeDefined();
  return JSON.parse(line!.slice('LOADED '.length)) as string[];
}

const AGENTS = `agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo" }] } } } } }`;

describe('startup', () => {
  it('loads neither the A2A server stack, undici nor any telemetry exporter when the A2A server and telemetry are off', async () => {
    expect(await loadedAtStartup(`{ ${AGENTS} }`)).toEqual([]);
  });

  it("loads a chat platform's library only for an account of it", async () => {
    const loaded = await loadedAtStartup(
      `{ ${AGENTS}, channels: { telegram: { accounts: { main: { token: "1:x", apiRoot: "http://127.0.0.1:9" } } } } }`,
    );
    expect(loaded.filter((name) => CHAT.includes(name))).toEqual(['grammy']);
  });

  it('loads the A2A server stack when the A2A server is on', async () => {
    expect(await loadedAtStartup(`{ ${AGENTS}, a2a: { server: { enabled: true, requireAuth: false } } }`)).toContain('express');
  });

  it('loads the trace exporter only with telemetry.traces, and the metrics SDK only with telemetry.metrics', async () => {
    const traces = await loadedAtStartup(`{ ${AGENTS}, telemetry: { traces: { endpoint: "http://127.0.0.1:9/v1/traces" } } }`);
    // The OTLP transformer brings the metrics SDK's types along; the Prometheus exporter stays out.
    expect(traces).toEqual(expect.arrayContaining(['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/sdk-trace-base']));
    expect(traces).not.toContain('@opentelemetry/exporter-prometheus');
    const metrics = await loadedAtStartup(`{ ${AGENTS}, telemetry: { metrics: { enabled: true } } }`);
    expect(metrics.filter((name) => OTEL.includes(name)).sort()).toEqual([
      '@opentelemetry/exporter-prometheus',
      '@opentelemetry/sdk-metrics',
    ]);
  });
});
