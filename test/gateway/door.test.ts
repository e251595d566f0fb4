/**
 * The door's roles as the fronts use them. The one intake (`Intake.accept`): a front's message is one input per
 * idempotency key in the session its opening names, which must be one of the kinds a front builds (never a
 * sub-agent's, which only its spawn makes), and a gateway that is stopping refuses it saying what becomes of the
 * message. `Queries.runStatus`: what the A2A client asks of a run a remote task's result waits for.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { FrontInput } from '../../src/ports/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

const CONFIG = `{
  agents: { list: [{ id: "ops", model: "scripted/m" }, { id: "dev", model: "scripted/m" }] },
  models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "ok" }] } } } } },
}`;

const input = (key: string): FrontInput => ({
  idempotencyKey: key,
  text: 'hello',
  provenance: { kind: 'mailbox', channel: 'mailbox', peer: 'Writer', messageId: key },
});

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

describe('Intake.accept', () => {
  it('stores one input per idempotency key in the session the front names, created on first use', async () => {
    gateway = await startTestGateway(CONFIG);
    const opening = { sessionKey: 'agent:ops:mailbox:direct:Writer', agentId: 'ops', route: { channel: 'mailbox', peer: 'Writer' } };
    const first = await gateway.accept(input('mailbox:Ops:Writer:m-1'), opening);
    const again = await gateway.accept(input('mailbox:Ops:Writer:m-1'), opening);
    expect(first).toMatchObject({ sessionKey: 'agent:ops:mailbox:direct:Writer', created: true });
    expect(again).toMatchObject({ created: false, input: { id: first.input.id } });
    expect((await gateway.getSession('agent:ops:mailbox:direct:Writer')).route).toEqual({ channel: 'mailbox', peer: 'Writer' });
  });

  it("refuses a session that is not a front's own kind, or another agent's, and creates nothing", async () => {
    gateway = await startTestGateway(CONFIG);
    for (const sessionKey of ['agent:ops:subagent:0b7c2f1e-0000-4000-8000-000000000000', 'agent:ops:main', 'agent:dev:a2a:peer:ctx']) {
      await expect(gateway.accept(input(`k-${sessionKey}`), { sessionKey, agentId: 'ops' })).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: `a front's message opens an A2A, board, direct or group session of agent "ops", not "${sessionKey}"`,
      });
    }
    expect(await gateway.listSessions({})).toEqual([]);
  });

  it('a stopping gateway refuses with what becomes of the message, as the front says it', async () => {
    gateway = await startTestGateway(CONFIG);
    const stopping = gateway;
    await stopping.stop();
    const opening = { sessionKey: 'agent:ops:board:t-1', agentId: 'ops' };
    await expect(stopping.accept(input('board:t-1:1'), opening)).rejects.toMatchObject({
      code: 'GATEWAY_STOPPING',
      message: 'the gateway is shutting down; send again once it has restarted',
    });
    await expect(
      stopping.accept(input('board:t-1:1'), { ...opening, whenStopping: 'the board hands the task over again once it has restarted' }),
    ).rejects.toMatchObject({ message: 'the gateway is shutting down; the board hands the task over again once it has restarted' });
    await stopping.store.close();
    gateway = undefined;
  });
});

describe('Queries.runStatus', () => {
  it("answers a run's status, and undefined for a run that does not exist", async () => {
    gateway = await startTestGateway(CONFIG);
    const sent = await gateway.send({ target: 'ops', message: 'hi' });
    const settled = await gateway.waitForInput(sent.input.id, 10_000);
    expect(settled.status).toBe('completed');
    const runId = (await gateway.inputRunId(sent.input.id))!;
    expect(await gateway.runStatus(runId)).toBe('succeeded');
    expect(await gateway.runStatus('no-such-run')).toBeUndefined();
  });
});
