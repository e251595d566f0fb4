/**
 * exec's limits (timeout, output cap, environment), its policy (off by default, never sandboxed), and the
 * ledger's promise for effects outside the store: a crashed run's retry neither runs a command twice nor writes
 * a file twice, nor over a change made since. And atomic writes under SIGKILL: the file is always whole.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import type { EarlierEffect, ToolContext } from '../../src/ports/tools.js';
import { createExecTool, runCommand } from '../../src/tools/exec-tool.js';
import { writeFileTool, editFileTool } from '../../src/tools/workspace-tools.js';
import { ROOT } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';
import { alive } from '../runtimes/runtime-helpers.js';

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'sb-exec-')));
const signal = new AbortController().signal;
const limits = { timeoutSeconds: 1, maxOutputBytes: 1024, env: ['PATH'] };

function config(exec: string) {
  return configSchema.parse({
    agents: {
      list: [
        { id: 'main', workspace, ...(exec ? { exec: JSON.parse(exec) } : {}) },
        { id: 'boxed', workspace, exec: { enabled: true }, sandbox: { mode: 'all' } },
      ],
    },
  });
}

/** A ledger in memory: what `beginEffect` sees of an earlier attempt at the same place. */
function ledger() {
  const rows = new Map<string, unknown>();
  return (key: string): Pick<ToolContext, 'beginEffect'> => ({
    beginEffect: async (intent): Promise<EarlierEffect | undefined> => {
      if (rows.has(key)) return { state: 'started', recorded: rows.get(key) };
      rows.set(key, intent);
      return undefined;
    },
  });
}

const context = (agentId: string, sessionKey: string, extra: Partial<ToolContext> = {}) =>
  ({ workspace, agentId, sessionKey, signal, ...extra }) as ToolContext;

describe('exec', () => {
  it('runs without a shell, in the workspace, with only the allowed environment', async () => {
    process.env.SB_SECRET_FOR_TEST = 'hidden';
    const result = await runCommand('sh', ['-c', 'pwd; echo "[$SB_SECRET_FOR_TEST]"; echo $PATH | wc -c'], workspace, limits, signal);
    expect(result.exitCode).toBe(0);
    const [cwd, secret] = result.stdout.split('\n');
    expect([cwd, secret]).toEqual([workspace, '[]']);
    const shell = await runCommand('echo', ['$HOME', '&&', 'ls'], workspace, limits, signal);
    expect(shell.stdout).toBe('$HOME && ls\n');
  });

  it('kills the command and its children at the timeout, and cuts the output at the cap', async () => {
    const started = Date.now();
    const slow = await runCommand('sh', ['-c', 'sleep 30 & sleep 30'], workspace, limits, signal);
    expect(slow).toMatchObject({ exitCode: null, signal: 'SIGKILL', timedOut: true });
    expect(Date.now() - started).toBeLessThan(5000);
    const loud = await runCommand('sh', ['-c', 'yes | head -c 100000'], workspace, limits, signal);
    expect(loud).toMatchObject({ exitCode: 0, truncated: true });
    expect(loud.stdout.length).toBe(1024);
    expect(await runCommand('no-such-command-sb', [], workspace, limits, signal)).toMatchObject({
      exitCode: null,
      stderr: 'command "no-such-command-sb" was not found on the PATH the command sees',
    });
  });

  it('a kill ends a grandchild that left the process group (setsid), even one holding the output pipe', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-exec-daemon-')));
    // The grandchild calls setsid (a daemonizing tool does) and keeps the command's stdout open.
    const script = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & while [ ! -s daemon.pid ]; do sleep 0.01; done; sleep 1000`;
    const abort = new AbortController();
    const running = runCommand('sh', ['-c', script], dir, { ...limits, timeoutSeconds: 600 }, abort.signal);
    const daemon = await waitUntil(
      'the grandchild runs',
      () => existsSync(join(dir, 'daemon.pid')) && Number(readFileSync(join(dir, 'daemon.pid'), 'utf8')),
    );
    expect(alive(daemon)).toBe(true);
    abort.abort();
    expect(await running).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    await waitUntil('the grandchild is gone', () => !alive(daemon));
  });

  it('is off unless the agent enables it, and never runs in a sandboxed session', async () => {
    const off = createExecTool(config(''));
    expect(await off.execute({ command: 'true' }, context('main', 'agent:main:main'))).toEqual({
      status: 'forbidden',
      error: 'exec is off for agent "main"; set agents.list[main].exec.enabled: true to let it run commands',
    });
    const on = createExecTool(config('{"enabled": true, "timeoutSeconds": 1}'));
    expect(await on.execute({ command: 'true' }, context('boxed', 'agent:boxed:main'))).toEqual({
      status: 'forbidden',
      error: 'exec never runs in a sandboxed session (agents.list[boxed].sandbox.mode "all")',
    });
    expect(await on.execute({ command: 'sleep', args: ['5'] }, context('main', 'agent:main:main'))).toMatchObject({
      status: 'error',
      timedOut: true,
      error: 'timed out after 1s (exec.timeoutSeconds) and was killed',
    });
  });

  it("a crashed run's retry does not run the command a second time", async () => {
    const tool = createExecTool(config('{"enabled": true}'));
    const at = ledger()('tc:1');
    const first = await tool.execute({ command: 'sh', args: ['-c', 'echo run >> runs.log'] }, context('main', 'agent:main:main', at));
    expect(first).toMatchObject({ status: 'ok', exitCode: 0 });
    const retried = await tool.execute({ command: 'sh', args: ['-c', 'echo run >> runs.log'] }, context('main', 'agent:main:main', at));
    expect(retried).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^an earlier attempt of this run started this command/),
    });
    expect(readFileSync(join(workspace, 'runs.log'), 'utf8')).toBe('run\n');
  });
});

describe('file effects through the ledger', () => {
  it('a retried write after the file changed is not written over; a retried edit that happened is not done twice', async () => {
    const places = ledger();
    const write = places('tc:write');
    writeFileSync(join(workspace, 'w.txt'), 'original');
    await writeFileTool.execute({ path: 'w.txt', content: 'first' }, context('main', 'agent:main:main', write));
    writeFileSync(join(workspace, 'w.txt'), 'changed by a person');
    expect(await writeFileTool.execute({ path: 'w.txt', content: 'first' }, context('main', 'agent:main:main', write))).toEqual({
      status: 'error',
      error: '"w.txt" changed after an earlier attempt of this run recorded this write, so it is not written again; read it and decide',
    });
    expect(readFileSync(join(workspace, 'w.txt'), 'utf8')).toBe('changed by a person');

    const edit = places('tc:edit');
    writeFileSync(join(workspace, 'counter.txt'), 'count: 1');
    await editFileTool.execute({ path: 'counter.txt', old: '1', new: '11' }, context('main', 'agent:main:main', edit));
    expect(await editFileTool.execute({ path: 'counter.txt', old: '1', new: '11' }, context('main', 'agent:main:main', edit))).toEqual({
      status: 'ok',
      path: 'counter.txt',
      note: 'written by an earlier attempt of this run',
    });
    expect(readFileSync(join(workspace, 'counter.txt'), 'utf8')).toBe('count: 11');
  });

  it('atomic writes under SIGKILL: the file is always one whole content, never a mix or a part', async () => {
    const target = join(workspace, 'atomic.txt');
    const size = 4 * 1024 * 1024;
    for (let round = 0; round < 8; round += 1) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/helpers/atomic-writer.ts'), target, String(size)], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await once(child.stdout!, 'data');
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 200));
      child.kill('SIGKILL');
      await once(child, 'exit');
      const content = readFileSync(target, 'utf8');
      expect(content.length).toBe(size);
      expect(content === 'a'.repeat(size) || content === 'b'.repeat(size)).toBe(true);
    }
    // A kill between the temporary file and the rename leaves the temporary file, never a partial target.
    const left = readdirSync(workspace).filter((name) => name.includes('atomic.txt'));
    expect(left).toContain('atomic.txt');
    for (const name of left) expect(name).toMatch(/^atomic\.txt$|^\.atomic\.txt\.[0-9a-f]{12}\.tmp$/);
  }, 60_000);
});
