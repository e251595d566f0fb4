/**
 * SIGKILL a real gateway while an agent's `exec` command runs (docs/tools.md "exec"): the command outlives the killed
 * gateway (nothing else ends it), and the restarted gateway ends it from its record of children, as it ends runtime
 * children, with a grandchild that called setsid (it left the command's process group); the command is not run again.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { alive } from '../runtimes/runtime-helpers.js';

describe('an exec command across a gateway crash', () => {
  it('outlives the SIGKILLed gateway and is ended when the gateway starts again, never run a second time', async () => {
    const { dir, configPath } = tempConfig('{}');
    const workspace = realpathSync(dir);
    // Each start of the command appends its pid: one line means it ran once.
    const command = "setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & echo $$ >> exec.pids; exec sleep 1000";
    writeFileSync(
      configPath,
      `{
        agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)}, exec: { enabled: true, timeoutSeconds: 600 } }] },
        recovery: { retryInterrupted: 1 },
        models: { providers: { scripted: { type: "scripted", models: { coder: { rules: [
          { match: "^start", steps: [{ toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", ${JSON.stringify(command)}] } }] }, { text: "ran: {{tool.exec.status}} {{tool.exec.error}}" }] },
          { reply: "ok" },
        ] } } } } },
      }`,
    );
    const pidsFile = join(workspace, 'exec.pids');
    let gw = await startGatewayProcess(configPath);
    expect((await gw.request('POST', '/v1/send', { target: 'coder', message: 'start', idempotencyKey: 'start-1' })).status).toBe(200);
    const pid = await waitUntil('the command runs', () => existsSync(pidsFile) && Number(readFileSync(pidsFile, 'utf8').trim()), 15_000);
    const daemonFile = join(workspace, 'daemon.pid');
    const daemon = await waitUntil('its grandchild runs', () => existsSync(daemonFile) && Number(readFileSync(daemonFile, 'utf8').trim()));
    // Recorded (a synced file written as the command starts; a kill before it lands leaves the command to run).
    const records = join(dir, '.switchboard', 'runtimes');
    await waitUntil(
      'the command is recorded',
      () => existsSync(records) && readdirSync(records).some((name) => /^exec-.*\.json$/.test(name)),
    );
    await stopGatewayProcess(gw, 'SIGKILL');
    // Nothing but the gateway's record ends it: it is still running with the gateway gone.
    expect(alive(pid) && alive(daemon)).toBe(true);
    gw = await startGatewayProcess(configPath);
    await waitUntil('the command and its grandchild are gone', () => !alive(pid) && !alive(daemon), 15_000);
    // The interrupted run was retried (retryInterrupted); the ledger kept the command from running again.
    await waitUntil(
      'the retried run ended',
      async () => {
        const runs = await gw.request<{ runs: { status: string; agentId: string }[] }>('GET', '/v1/runs?limit=20');
        return runs.body.runs.some((run) => run.agentId === 'coder' && run.status === 'succeeded');
      },
      15_000,
    );
    expect(readFileSync(pidsFile, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(await stopGatewayProcess(gw)).toBe(0);
  }, 120_000);
});
