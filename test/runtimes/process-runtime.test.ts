/**
 * CLI agents as child-process sub-agents (`runtime: "process"`, docs/runtimes.md), against a small script printing
 * pi-style JSON lines (fake-cli.mjs): each line journaled, the last assistant message (or the result file, or plain
 * text) as the result, the completion to the parent once, a crash with its exit code and stderr, kill and timeout
 * ending the process tree.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';
import { alive, pidsIn, runtimeUpdates, settledSubagent } from './runtime-helpers.js';

const CLI = join(import.meta.dirname, 'fake-cli.mjs');
const MAIN = 'agent:main:main';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

async function start(runtime: string, timeout?: number, extraArgs = '') {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-proc-')));
  gateway = await startTestGateway(`{
    agents: {
      defaults: { subagents: { allowRuntimes: ["process:*"] ${timeout ? `, runTimeoutSeconds: ${timeout}` : ''} } },
      list: [{ id: "main", model: "scripted/main", workspace: ${JSON.stringify(dir)} }],
    },
    acp: { cancelGraceMs: 500 },
    runtimes: { cli: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(CLI)} ${extraArgs}], env: { FAKE_PIDS_DIR: ${JSON.stringify(dir)} } ${runtime} } },
    models: { providers: { scripted: { type: "scripted", models: { main: { rules: [{ match: ".*", reply: "ok" }] } } } } },
  }`);
  // The parent session, which the completions go to.
  const sent = await gateway.send({ target: 'main', message: 'hello' });
  await gateway.waitForInput(sent.input.id, 10_000);
  return dir;
}

async function spawn(task: string) {
  return gateway!.subagents.spawn(
    { sessionKey: MAIN, agentId: 'main', idempotencyKey: `spawn-${task}` },
    { task, runtime: 'process', agent: 'cli' },
  );
}

describe('sessions_spawn with runtime "process"', () => {
  it('journals each line, takes the last assistant message as the result, and tells the parent once', async () => {
    await start('');
    const spawned = await spawn('summarise the repo');
    expect(spawned.childSessionKey).toBe(`agent:main:process:${spawned.handle.subagentId}`);
    const { view, record } = await settledSubagent(gateway!, spawned.handle.subagentId);
    expect(view.state).toBe('succeeded');
    expect(record.result).toBe('Finished: summarise the repo');
    const updates = await runtimeUpdates(gateway!, spawned.childSessionKey);
    // Every line but pi's streaming deltas, which stream as message text instead.
    expect(updates.filter((update) => update.kind === 'line').map((update) => update.type)).toEqual([
      'session',
      'agent_start',
      'message_end',
      'tool_execution_start',
      'tool_execution_end',
      'message_end',
      'agent_end',
    ]);
    expect(updates.find((update) => update.kind === 'tool_call_update')).toMatchObject({ id: 't1', status: 'completed', output: 'a.txt' });
    const completions = await waitUntil('the completion consumed', async () => {
      const inputs = (await gateway!.store.inputs.list({ sessionKey: MAIN })).filter(
        (input) => input.provenance.kind === 'subagent_completion',
      );
      return inputs.length > 0 && inputs.every((input) => input.status === 'consumed') ? inputs : undefined;
    });
    expect(completions).toHaveLength(1);
  });

  it('reads the task on stdin, and the result from $SWITCHBOARD_RESULT_FILE', async () => {
    await start(', taskVia: "stdin", resultFrom: "file"', undefined, ', "--stdin"');
    const spawned = await spawn('write the file');
    const { record } = await settledSubagent(gateway!, spawned.handle.subagentId);
    expect(record.result).toBe('result from the file for: write the file');
  });

  it('takes plain text output whole', async () => {
    await start(', output: "text"');
    const spawned = await spawn('text please');
    const { record } = await settledSubagent(gateway!, spawned.handle.subagentId);
    expect(record.result).toBe('plain output for text please\nsecond line');
  });

  it('reports a crash with its exit code and stderr', async () => {
    await start('');
    const spawned = await spawn('crash it');
    const { view } = await settledSubagent(gateway!, spawned.handle.subagentId);
    expect(view.state).toBe('failed');
    expect(view.diagnostic).toBe('process runtime "cli" exited with code 2; its last stderr lines:\npanic: the fake cli crashed');
  });

  it("gives the child the allowlisted environment and its own env, never the gateway's secrets", async () => {
    const secrets = { OPENAI_API_KEY: 'sk-test-never-shown', SWITCHBOARD_TOKEN: 'token-never-shown' };
    Object.assign(process.env, secrets);
    try {
      await start(', output: "text"');
      const spawned = await spawn('show-env');
      const { record } = await settledSubagent(gateway!, spawned.handle.subagentId);
      expect(record.state).toBe('succeeded');
      const names = (record.result ?? '').split('\n');
      expect(names).toEqual(expect.arrayContaining(['FAKE_PIDS_DIR', 'PATH', 'SWITCHBOARD_RESULT_FILE', 'SWITCHBOARD_RUN_ID']));
      expect(names).not.toContain('OPENAI_API_KEY');
      expect(names).not.toContain('SWITCHBOARD_TOKEN');
    } finally {
      for (const name of Object.keys(secrets)) delete process.env[name];
    }
  });

  it('kill and timeout end the process tree', async () => {
    const dir = await start('', 2);
    const killed = await spawn('stubborn one');
    const pids = await waitUntil('the grandchild and the daemon started', () => (pidsIn(dir).daemon ? pidsIn(dir) : undefined));
    await gateway!.killSubagent(killed.handle.subagentId);
    expect((await settledSubagent(gateway!, killed.handle.subagentId)).view.state).toBe('cancelled');
    // The daemon left the process group (setsid): it is ended all the same.
    await waitUntil('the tree is gone', () => !alive(pids.agent) && !alive(pids.grandchild) && !alive(pids.daemon));

    const slow = await spawn('stubborn two');
    const { view } = await settledSubagent(gateway!, slow.handle.subagentId);
    expect(view.state).toBe('timed_out');
    const all = pidsIn(dir);
    await waitUntil('the tree is gone', () => !alive(all.agent) && !alive(all.grandchild) && !alive(all.daemon));
  });
});
