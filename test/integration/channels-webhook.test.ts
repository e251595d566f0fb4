/**
 * The generic webhook channel on a real gateway process (docs/channels.md, "Webhooks"): an inbound POST is let in only
 * with a good signature, a retried one is the same input, and the reply is POSTed signed to the account's url, again
 * after a 429's Retry-After, with the same id each time.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, signature, TIMESTAMP_HEADER } from '../../src/channels/webhook/webhook-account.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const SECRET = 'webhook-secret-for-tests';
let gw: GatewayProcess | undefined;
let receiver: Server | undefined;
afterEach(async () => {
  if (gw) await stopGatewayProcess(gw, 'SIGKILL');
  receiver?.closeAllConnections();
  receiver?.close();
  gw = receiver = undefined;
});

interface Received {
  headers: Record<string, string | string[] | undefined>;
  body: string;
  status: number;
}

/** A receiver that answers each POST 429 (Retry-After: 2) until it is opened, then 200, recording each. */
async function startReceiver(): Promise<{ url: string; received: Received[]; open: () => void }> {
  const received: Received[] = [];
  let opened = false;
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = opened ? 200 : 429;
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      response.writeHead(status, status === 429 ? { 'retry-after': '2' } : {}).end(status === 200 ? '{"id":"r-1"}' : 'slow down');
    });
  });
  await new Promise<void>((resolve) => receiver?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, received, open: () => (opened = true) };
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}/channels/webhook/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, body: await response.json() };
}

const signed = (body: string, secret = SECRET, at = Math.floor(Date.now() / 1000)) => ({
  [TIMESTAMP_HEADER]: String(at),
  [SIGNATURE_HEADER]: signature(secret, String(at), body),
});

describe('the webhook channel', () => {
  it('takes only signed messages, one input per id, and posts the reply signed, again after a 429', async () => {
    const target = await startReceiver();
    const { configPath } = tempConfig(`{
      channels: { webhook: { access: { direct: "open" }, accounts: { ops: { secret: "${SECRET}", url: "${target.url}" } } } },
      outbox: { baseDelayMs: 10, maxDelayMs: 50 },
      agents: { list: [{ id: "echo", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
    }`);
    gw = await startGatewayProcess(configPath);
    const body = JSON.stringify({ id: 'm-1', conversation: 'c-9', sender: { id: 'alice' }, text: 'hello hook' });
    expect(await post(gw.url, body, {})).toEqual({
      status: 401,
      body: {
        error: `sign the request: x-switchboard-timestamp (unix seconds) and x-switchboard-signature (sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">)`,
      },
    });
    expect(await post(gw.url, body, signed(body, 'wrong-secret'))).toEqual({
      status: 401,
      body: { error: "x-switchboard-signature does not match the body and the account's secret" },
    });
    expect((await post(gw.url, body, signed(body, SECRET, Math.floor(Date.now() / 1000) - 3600))).status).toBe(401);
    expect(await post(gw.url, body, signed(body))).toEqual({ status: 200, body: { ok: true } });
    // The sender did not hear the 200 and sends it again: the same input.
    expect(await post(gw.url, body, signed(body))).toEqual({ status: 200, body: { ok: true } });
    // The receiver is busy: the 429 is on record with the url's origin only (a webhook's path often carries its token).
    const refused = await waitUntil(
      'the 429 is recorded',
      async () =>
        (await gw?.request<{ rows: { kind: string; lastError: string | null }[] }>('GET', '/v1/outbox?status=pending'))?.body.rows.find(
          (one) => one.kind === 'reply:webhook' && one.lastError,
        ),
      20_000,
      20,
    );
    expect(refused.lastError).toBe(`webhook account "ops": ${new URL(target.url).origin}/… answered 429 slow down`);
    target.open();
    const delivered = await waitUntil('the reply is taken', () => target.received.find((one) => one.status === 200), 20_000, 20);
    const replies = target.received.map((one) => JSON.parse(one.body) as Record<string, unknown>);
    expect(target.received[0].status).toBe(429);
    expect(target.received.filter((one) => one.status === 200)).toEqual([delivered]);
    expect(replies[0]).toEqual({ id: expect.stringMatching(/:0$/), conversation: 'c-9', replyTo: 'm-1', text: 'echo hello hook' });
    // Every attempt carries the same id, for the receiver to dedupe on.
    for (const reply of replies) expect(reply).toEqual(replies[0]);
    const at = String(delivered.headers[TIMESTAMP_HEADER]);
    expect(delivered.headers[SIGNATURE_HEADER]).toBe(signature(SECRET, at, delivered.body));
    const runs = await gw.request<{ runs: { sessionKey: string }[] }>(
      'GET',
      `/v1/runs?session=${encodeURIComponent('agent:echo:webhook-ops:direct:alice')}`,
    );
    expect(runs.body.runs.map((run) => run.sessionKey)).toEqual(['agent:echo:webhook-ops:direct:alice']);
  });
});
