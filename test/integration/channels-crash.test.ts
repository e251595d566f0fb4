/**
 * A Telegram reply across a SIGKILL (docs/channels.md, "What a crash costs"): the run's reply is an outbox row written
 * in its commit, so a gateway killed after the commit and before Telegram took the message sends it once after the
 * restart; the message itself, which Telegram sends again because its update was never confirmed, stays one input.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { InputRecord } from '../../src/ports/index.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { startGatewayProcess, stopGatewayProcess, tempConfig, type GatewayProcess } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

let telegram: FakeTelegram | undefined;
let gw: GatewayProcess | undefined;
afterEach(async () => {
  if (gw) await stopGatewayProcess(gw, 'SIGKILL');
  await telegram?.close();
  gw = telegram = undefined;
});

describe('a Telegram reply across a SIGKILL', () => {
  it('is sent once after the restart when the gateway died between the commit and the send', async () => {
    telegram = await new FakeTelegram().start();
    const { configPath } = tempConfig(`{
      channels: { telegram: { access: { users: ["1001"] }, accounts: { main: { token: "${telegram.token}", apiRoot: "${telegram.url}" } } } },
      agents: { list: [{ id: "echo", model: "scripted/echo" }] },
      models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo {{input}}" }] } } } } },
    }`);
    telegram.holdSends = true;
    gw = await startGatewayProcess(configPath);
    telegram.message({ from: 1001, text: 'survive this', messageId: 41 });
    // The run committed (its reply is a pending outbox row) and the send is in flight, unanswered: now the kill.
    await waitUntil('the reply is being sent', () => telegram?.held === 1, 20_000, 20);
    await stopGatewayProcess(gw, 'SIGKILL');
    gw = undefined;
    expect(telegram.sent).toEqual([]);
    telegram.holdSends = false;
    gw = await startGatewayProcess(configPath);
    const restarted = gw;
    await waitUntil('the reply is sent', () => telegram?.sent.length === 1, 20_000, 20);
    expect(telegram.sent[0]).toMatchObject({ chat_id: '1001', text: 'echo survive this', reply_parameters: { message_id: 41 } });
    // Telegram sent the unconfirmed update again after the restart: still one input, and no second reply.
    await waitUntil('the update is confirmed', () => (telegram?.confirmedUpTo ?? 0) >= 1, 20_000, 20);
    const { body } = await restarted.request<{ inputs: InputRecord[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent('agent:echo:telegram:direct:1001')}`,
    );
    expect(body).toMatchObject({ session: { key: 'agent:echo:telegram:direct:1001' } });
    const outbox = await restarted.request<{ rows: { kind: string; status: string }[] }>('GET', '/v1/outbox?status=delivered');
    expect(JSON.stringify(outbox.body)).toContain('reply:telegram');
    const runs = await restarted.request<{ runs: { status: string }[] }>(
      'GET',
      `/v1/runs?session=${encodeURIComponent('agent:echo:telegram:direct:1001')}`,
    );
    expect(runs.body.runs.map((run) => run.status)).toEqual(['succeeded']);
    expect(telegram.sent).toHaveLength(1);
  });
});
