/**
 * Metrics for Prometheus (docs/observability.md): Debian's own `prometheus` server scrapes a gateway's /metrics on the
 * control port, with the control token as its bearer token, and a PromQL query returns the runs the gateway made.
 * A scrape without the token is refused; a gateway with metrics off answers 404 saying how to turn them on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const PROMETHEUS = '/usr/bin/prometheus';
const AGENTS = `agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } }`;

let gateway: GatewayProcess | undefined;
let prometheus: ChildProcess | undefined;
afterAll(async () => {
  prometheus?.kill('SIGKILL');
  if (gateway) await stopGatewayProcess(gateway);
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.skipIf(!existsSync(PROMETHEUS))('a Prometheus scrape', () => {
  it('reads the run count from /metrics behind the control token', async () => {
    gateway = await startGatewayProcess(tempConfig(`{ telemetry: { metrics: { enabled: true } }, ${AGENTS} }`).configPath);
    const gw = gateway;
    for (let i = 0; i < 3; i += 1) {
      const sent = await gw.request<{ status: string }>('POST', '/v1/send', { target: 'echo', message: `hi ${i}`, wait: true });
      expect(sent.status).toBe(200);
    }
    const refused = await fetch(`${gw.url}/metrics`);
    expect(refused.status).toBe(401);

    const dir = mkdtempSync(join(tmpdir(), 'sb-prometheus-'));
    writeFileSync(join(dir, 'token'), gw.token);
    const target = new URL(gw.url);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'scrape_configs:',
        '  - job_name: switchboard',
        `    authorization: { credentials_file: ${join(dir, 'token')} }`,
        `    static_configs: [{ targets: ["${target.host}"] }]`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    const query = async (promql: string) => {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`).catch(() => undefined);
      if (!response?.ok) return undefined;
      const body = (await response.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      return body.data.result;
    };
    // The scrape itself succeeds (up is 1 only when the token was accepted and the text parsed).
    const up = await waitUntil('prometheus scraped the gateway', async () => (await query('up{job="switchboard"}'))?.[0], 30_000, 200);
    expect(up.value[1]).toBe('1');
    const runs = await waitUntil(
      'the run count',
      async () => (await query('sum(switchboard_runs_total{agent="echo",status="succeeded"})'))?.[0],
      30_000,
      200,
    );
    expect(Number(runs.value[1])).toBe(3);
    const tokens = await query('sum by (type) (switchboard_tokens_total{agent="echo"})');
    expect(tokens?.map((row) => row.metric.type).sort()).toEqual(['input', 'output']);
    const lanes = await query('switchboard_lane_active{lane="main"}');
    expect(lanes?.[0]?.value[1]).toBe('0');
  }, 90_000);

  it('with telemetry.metrics.listen, serves /metrics on a listener of its own without a token', async () => {
    const port = await freePort();
    const own = await startGatewayProcess(
      tempConfig(`{ telemetry: { metrics: { enabled: true, listen: "127.0.0.1:${port}" } }, ${AGENTS} }`).configPath,
    );
    try {
      expect((await own.request('POST', '/v1/send', { target: 'echo', message: 'hi', wait: true })).status).toBe(200);
      const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^switchboard_runs_total\{agent="echo",status="succeeded",.*\} 1$/m);
      // Not on the control port as well.
      expect((await fetch(`${own.url}/metrics`, { headers: { authorization: `Bearer ${own.token}` } })).status).toBe(404);
    } finally {
      await stopGatewayProcess(own);
    }
  }, 30_000);

  it('refuses to start when the metrics listener cannot be opened, saying which key and why', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      const started = startGatewayProcess(
        tempConfig(`{ telemetry: { metrics: { enabled: true, listen: "127.0.0.1:${port}" } }, ${AGENTS} }`).configPath,
      );
      await expect(started).rejects.toThrow(`telemetry.metrics.listen: cannot serve metrics on 127.0.0.1:${port}: the port is in use`);
    } finally {
      holder.close();
    }
  }, 30_000);

  it('answers 404 with how to turn metrics on when they are off', async () => {
    const off = await startGatewayProcess(tempConfig(`{ ${AGENTS} }`).configPath);
    try {
      const response = await fetch(`${off.url}/metrics`, { headers: { authorization: `Bearer ${off.token}` } });
      expect(response.status).toBe(404);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('NOT_FOUND');
      expect(body.error.message).toContain('telemetry.metrics.enabled: true');
    } finally {
      await stopGatewayProcess(off);
    }
  }, 30_000);
});
