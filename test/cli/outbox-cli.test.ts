/** `switchboard outbox list|retry|drop` against a real gateway whose push notifications cannot be delivered. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cliWith, tempConfig, gatewayForSuite } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'outbox-peer-token-0123456789';
const { configPath } = tempConfig(`{
  outbox: { maxAttempts: 1 },
  a2a: { server: { enabled: true, peers: [{ id: "peer", token: "${TOKEN}" }] }, push: { allowPrivateTargets: true, timeoutMs: 1000 } },
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo" }] } } } } },
}`);
const cli = cliWith(configPath);
const suite = gatewayForSuite(configPath);

interface Row {
  id: string;
  kind: string;
  status: string;
  attempts: number;
}

describe('switchboard outbox', () => {
  it('lists dead rows, retries one from its first attempt, drops one for good, and refuses a row that is not dead', async () => {
    const rpc = (method: string, params: unknown) =>
      fetch(`${suite.gw.url}/a2a/echo/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'A2A-Version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      }).then((response) => response.json());
    // Nothing listens on port 9: every notification for this task fails and, with maxAttempts 1, goes dead.
    await rpc('SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1:9/hook' } },
    });
    const dead = await waitUntil('a dead push row', async () => {
      const listed = await cli('--json', 'outbox', 'list');
      const rows = (JSON.parse(listed.stdout) as { rows: Row[] }).rows;
      return rows.length >= 2 && rows;
    });
    expect(dead.every((row) => row.kind === 'a2a.push' && row.status === 'dead' && row.attempts === 1)).toBe(true);
    const human = await cli('outbox', 'list');
    expect(human.stdout).toContain('a2a.push');
    expect(human.stdout).toContain('http://127.0.0.1:9/hook');

    const retried = await cli('outbox', 'retry', dead[0].id);
    expect(retried).toMatchObject({ code: 0, stdout: `retrying a2a.push ${dead[0].id} (to http://127.0.0.1:9/hook)\n` });
    await waitUntil('it went dead again after one more attempt', async () => {
      const { body } = await suite.gw.request<{ rows: Row[] }>('GET', '/v1/outbox?status=dead');
      return body.rows.some((row) => row.id === dead[0].id);
    });
    const dropped = await cli('outbox', 'drop', dead[1].id);
    expect(dropped.stdout).toBe(`dropped a2a.push ${dead[1].id} (to http://127.0.0.1:9/hook)\n`);
    const again = await cli('outbox', 'retry', dead[1].id);
    expect(again).toMatchObject({
      code: 1,
      stderr: `switchboard: outbox row ${dead[1].id} is dropped, not dead; only dead rows can be retried or dropped\n`,
    });
    const unknown = await cli('outbox', 'drop', 'no-such-row');
    expect(unknown.stderr).toBe('switchboard: no outbox row "no-such-row" (switchboard outbox list --status dead shows the dead ones)\n');
    expect((await suite.gw.request('GET', '/v1/outbox?status=lost')).body).toEqual({
      error: { code: 'INVALID_REQUEST', message: 'status: expected one of pending, delivered, dead, dropped, got "lost"' },
    });
  }, 30_000);
});
