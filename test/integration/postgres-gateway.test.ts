/**
 * A gateway process on PostgreSQL (`--store`, $SWITCHBOARD_STORE_URL): it serves, survives a SIGKILL with its
 * session intact, and a bad URL stops it at start with one line. Two gateways on one schema both serve.
 */
import { dropSchemas } from '../helpers/postgres.js';
import { afterAll, describe, expect, it } from 'vitest';
import { cliWith, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';

const url = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `sb_gw_${process.pid}`;
const config = `{
  store: { driver: "postgres", schema: "${schema}" },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } },
}`;

describe('a gateway on PostgreSQL', () => {
  afterAll(async () => {
    await dropSchemas(schema);
  });

  it('serves with the URL from the environment, and after a SIGKILL the session is still there', async () => {
    const { configPath } = tempConfig(config);
    let gw = await startGatewayProcess(configPath, { SWITCHBOARD_STORE_URL: url });
    const sent = await gw.request<{ reply: string }>('POST', '/v1/send', { target: 'echo', message: 'one', wait: true });
    expect(sent.status).toBe(200);
    expect(sent.body.reply).toBe('echo: one');
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = await startGatewayProcess(configPath, { SWITCHBOARD_STORE_URL: url });
    const again = await gw.request<{ reply: string; sessionKey: string }>('POST', '/v1/send', {
      target: 'echo',
      message: 'two',
      wait: true,
    });
    expect(again.body.reply).toBe('echo: two');
    const transcript = await gw.request<{ entries: { role: string }[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(again.body.sessionKey)}/history`,
    );
    expect(transcript.body.entries.map((entry) => entry.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(await stopGatewayProcess(gw)).toBe(0);
  });

  it('a second gateway on the same schema serves too', async () => {
    const firstConfig = tempConfig(config).configPath;
    const first = await startGatewayProcess(firstConfig, { SWITCHBOARD_STORE_URL: url });
    const second = await startGatewayProcess(tempConfig(config).configPath, { SWITCHBOARD_STORE_URL: url });
    const [a, b] = await Promise.all([
      first.request<{ reply: string }>('POST', '/v1/send', { target: 'echo', message: 'from a', wait: true, peer: 'a' }),
      second.request<{ reply: string }>('POST', '/v1/send', { target: 'echo', message: 'from b', wait: true, peer: 'b' }),
    ]);
    expect([a.body.reply, b.body.reply]).toEqual(['echo: from a', 'echo: from b']);
    // One control token for the store: a client behind a load balancer needs one.
    expect(second.token).toBe(first.token);
    // Each lists both, alive, with where they listen.
    const { body } = await second.request<{ gatewayId: string; gateways: { id: string; alive: boolean; url: string }[] }>(
      'GET',
      '/v1/status',
    );
    expect(
      body.gateways
        .filter((gateway) => gateway.alive)
        .map((gateway) => gateway.url)
        .sort(),
    ).toEqual([first.url, second.url].sort());
    const cli = await cliWith(firstConfig)('status');
    expect(cli.stdout).toMatch(/gateways on this database:\n {2}gw-\S+ alive \(heartbeat \d+\.\ds ago\): \d+ session\(s\) held/);
    expect(await stopGatewayProcess(first)).toBe(0);
    const after = await second.request<{ gateways: { url: string; stoppedAt: number | null; alive: boolean }[] }>('GET', '/v1/status');
    expect(after.body.gateways.find((gateway) => gateway.url === first.url)).toMatchObject({ alive: false, stoppedAt: expect.any(Number) });
    expect(await stopGatewayProcess(second)).toBe(0);
  });

  it('an unreachable server stops the gateway at start with one line; migrate reports the version', async () => {
    const { configPath } = tempConfig(config);
    const cli = cliWith(configPath);
    const refused = await cli('gateway', '--store', 'postgres://postgres:pw@127.0.0.1:1/test');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'switchboard: cannot reach PostgreSQL at 127.0.0.1:1 (ECONNREFUSED): is the server running, and is --store right?\n',
    );
    const migrated = await cli('--json', 'migrate', '--store', url);
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ driver: 'postgres', store: `${url} (schema ${schema})` });
  });
});
