/**
 * The approval gate in one gateway (docs/gates.md): a call an `ask` pattern matches suspends its run until a person
 * answers; approve runs it once (with edited arguments where given), deny and expiry give the model the documented
 * tool result, and patterns on a tool's subject ask only about the calls they name.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { parseConfigText } from '../../src/config/load.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

/** An agent that runs `sh -c "echo <word> >> log.txt"` and then says what the exec answered. */
function config(workspace: string, ask: string[], extra = ''): string {
  return `{
    ${extra}
    agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)},
      exec: { enabled: true }, tools: { ask: ${JSON.stringify(ask)} } }] },
    models: { providers: { scripted: { type: "scripted", models: {
      coder: { rules: [{ match: "log (\\\\w+)", steps: [
        { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> log.txt"] } }] },
        { text: "exec said {{tool.exec}}" },
      ] }] },
    } } } },
  }`;
}

async function pendingApproval(gw: Gateway) {
  return waitUntil('an approval request', async () => (await gw.listApprovals({ status: 'pending' }))[0], 10_000, 10);
}

async function reply(gw: Gateway, inputId: string) {
  const outcome = await gw.waitForInput(inputId, 20_000);
  if (outcome.status !== 'completed') throw new Error(`expected a reply, got ${JSON.stringify(outcome)}`);
  return { text: outcome.reply ?? '', run: outcome.run };
}

describe('approvals', () => {
  it('suspends the run on an asked exec, then runs the command once on approve and goes on', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-approve-'));
    gateway = await startTestGateway(config(workspace, ['exec']));
    const gw = gateway;
    const {
      input: { id: inputId },
    } = await gw.send({ target: 'coder', message: 'log hello' });
    const approval = await pendingApproval(gw);
    expect(approval).toMatchObject({
      kind: 'tool',
      subject: 'exec',
      agentId: 'coder',
      step: 0,
      args: { command: 'sh', args: ['-c', 'echo hello >> log.txt'] },
      details: { subject: 'sh -c echo hello >> log.txt', command: 'sh', cwd: workspace },
      reason: 'agents.list[coder].tools.ask has "exec"',
      onExpiry: 'deny',
    });
    // Suspended: no lane slot, the run row says so, and the command has not run.
    await waitUntil('the run suspends', async () => gw.status().waitingRuns === 1 && gw.status().lanes.main.active === 0, 10_000, 10);
    expect((await gw.getRun(approval.runId)).run.status).toBe('suspended');
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
    expect(await gw.pendingApprovals()).toBe(1);

    const decided = await gw.decideApproval(approval.id, { approve: true, by: 'cli:ann', note: 'fine' });
    expect(decided).toMatchObject({ status: 'approved', decidedBy: 'cli:ann' });
    const answer = await reply(gw, inputId);
    expect(answer.text).toContain('"status":"ok"');
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('hello\n');
    const { run } = await gw.getRun(approval.runId);
    // The step committed before the wait was replayed, not asked again: two model calls in all.
    expect(run).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(run.usage.modelCalls).toBe(2);
    const events = (await gw.journalAfter(0, { limit: 1000 })).filter((event) => event.type.startsWith('approval.'));
    expect(events.map((event) => [event.type, (event.payload as { status?: string }).status])).toEqual([
      ['approval.requested', undefined],
      ['approval.decided', 'approved'],
    ]);
    await expect(gw.decideApproval(approval.id, { approve: false, by: 'late' })).rejects.toMatchObject({ code: 'APPROVAL_ANSWERED' });
  }, 30_000);

  it('runs the edited arguments when an approver edits them, and tells the model', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-edit-'));
    gateway = await startTestGateway(config(workspace, ['exec']));
    const gw = gateway;
    const {
      input: { id: inputId },
    } = await gw.send({ target: 'coder', message: 'log original' });
    const approval = await pendingApproval(gw);
    await expect(gw.decideApproval(approval.id, { approve: true, by: 'x', editedArgs: { command: 7 } })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining("do not fit exec's schema"),
    });
    await gw.decideApproval(approval.id, {
      approve: true,
      by: 'cli:ann',
      editedArgs: { command: 'sh', args: ['-c', 'echo edited >> log.txt'] },
    });
    const answer = await reply(gw, inputId);
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('edited\n');
    expect(answer.text).toContain('"ranWith":{"command":"sh","args":["-c","echo edited >> log.txt"]}');
  }, 30_000);

  it('gives the model APPROVAL_DENIED with who and why on a deny, and runs nothing', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-deny-'));
    gateway = await startTestGateway(config(workspace, ['exec']));
    const gw = gateway;
    const {
      input: { id: inputId },
    } = await gw.send({ target: 'coder', message: 'log nope' });
    const approval = await pendingApproval(gw);
    await gw.decideApproval(approval.id, { approve: false, by: 'console', note: 'not on a Friday' });
    const answer = await reply(gw, inputId);
    expect(answer.text).toContain('"code":"APPROVAL_DENIED"');
    expect(answer.text).toContain('console denied this exec call: not on a Friday. It was not run');
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
  }, 30_000);

  it('gives the model APPROVAL_EXPIRED once nobody answered in time', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-expire-'));
    gateway = await startTestGateway(config(workspace, ['exec'], 'approvals: { expiresAfterSeconds: 1 },'));
    const gw = gateway;
    const {
      input: { id: inputId },
    } = await gw.send({ target: 'coder', message: 'log late' });
    const answer = await reply(gw, inputId);
    expect(answer.text).toContain('"code":"APPROVAL_EXPIRED"');
    expect(answer.text).toContain('within 1s (approvals.expiresAfterSeconds)');
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
    expect((await gw.listApprovals({ status: 'expired' }))[0]).toMatchObject({ decidedBy: 'expiry' });
  }, 30_000);

  it('asks only about the calls a subject pattern names', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-pattern-'));
    gateway = await startTestGateway(config(workspace, ['exec:git push*', 'exec:sh -c echo secret*']));
    const gw = gateway;
    const free = await gw.send({ target: 'coder', message: 'log public' });
    await reply(gw, free.input.id);
    expect(await gw.listApprovals({})).toEqual([]);
    await gw.send({ target: 'coder', message: 'log secret' });
    expect(await pendingApproval(gw)).toMatchObject({ reason: 'agents.list[coder].tools.ask has "exec:sh -c echo secret*"' });
  }, 30_000);

  it('closes a request whose run ended before an answer: no longer pending, and an answer is refused', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-closed-'));
    gateway = await startTestGateway(config(workspace, ['exec']));
    const gw = gateway;
    const { input } = await gw.send({ target: 'coder', message: 'log never' });
    const approval = await pendingApproval(gw);
    await waitUntil('the run suspends', async () => (await gw.getRun(approval.runId)).run.status === 'suspended', 10_000, 10);
    expect(await gw.cancelRun(approval.runId)).toBe(true);
    const outcome = await gw.waitForInput(input.id, 20_000);
    expect(outcome).toMatchObject({ status: 'completed', run: { status: 'cancelled' } });
    expect(await gw.getApproval(approval.id)).toMatchObject({ status: 'closed' });
    expect(await gw.pendingApprovals()).toBe(0);
    expect(await gw.listApprovals({ status: 'pending' })).toEqual([]);
    expect((await gw.listApprovals({ status: 'closed' })).map((row) => row.id)).toEqual([approval.id]);
    await expect(gw.decideApproval(approval.id, { approve: true, by: 'late' })).rejects.toMatchObject({
      code: 'APPROVAL_CLOSED',
      message: `approval request ${approval.id} is closed: run ${approval.runId} that asked has ended without an answer, so nothing waits for it`,
    });
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
  }, 30_000);

  it('keeps a request a reload took the pattern away from: denied, the resumed call still does not run', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'sb-reload-'));
    gateway = await startTestGateway(config(workspace, ['exec']));
    const gw = gateway;
    const { input } = await gw.send({ target: 'coder', message: 'log reloaded' });
    const approval = await pendingApproval(gw);
    await waitUntil('the run suspends', async () => (await gw.getRun(approval.runId)).run.status === 'suspended', 10_000, 10);
    const report = gw.reloadConfig(parseConfigText(config(workspace, []), '/test/switchboard.json5', {}).config);
    expect(report.applied).toContain('agents');
    await gw.decideApproval(approval.id, { approve: false, by: 'cli:ann', note: 'no' });
    const answer = await reply(gw, input.id);
    expect(answer.text).toContain('"code":"APPROVAL_DENIED"');
    expect(existsSync(join(workspace, 'log.txt'))).toBe(false);
  }, 30_000);
});
