import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, cliWith, tempConfig, gatewayForSuite } from '../helpers/process.js';

const run = promisify(execFile);
const { configPath } = tempConfig(`{
  agents: { list: [{ id: "support", model: "scripted/s", name: "Support" }, { id: "broken", model: "scripted/b" }, { id: "slow", model: "scripted/z" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    s: { rules: [{ reply: "support says: {{input}}" }] },
    b: { rules: [{ error: "upstream exploded" }] },
    z: { rules: [{ delayMs: 30000, reply: "late" }] },
  } } } },
}`);

const cli = cliWith(configPath);

const suite = gatewayForSuite(configPath);

describe('switchboard CLI against a running gateway', () => {
  it('cli: send --wait prints the reply; --json prints the structured result', async () => {
    expect(await cli('send', 'support', 'hello', '--wait')).toEqual({ code: 0, stdout: 'support says: hello\n', stderr: '' });
    const json = await cli('--json', 'send', 'support', 'again', '--wait');
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'ok',
      reply: 'support says: again',
      sessionKey: 'agent:support:main',
      runStatus: 'succeeded',
    });
  });

  it('cli: sessions list, history and runs show read what happened', async () => {
    const sessions = JSON.parse((await cli('--json', 'sessions', 'list')).stdout);
    expect(sessions.sessions.map((s: { key: string }) => s.key)).toContain('agent:support:main');
    const history = await cli('sessions', 'history', 'agent:support:main');
    expect(history.stdout).toMatch(/user: hello\n.*assistant: support says: hello/);
    const runs = JSON.parse((await cli('--json', 'runs', 'list', '--session', 'agent:support:main')).stdout);
    const shown = await cli('runs', 'show', runs.runs[0].id);
    expect(shown.stdout).toContain(`run ${runs.runs[0].id} on agent:support:main`);
    expect(shown.stdout).toContain('status:   succeeded');
  });

  it('cli: status, sessions show and runs cancel', async () => {
    const status = JSON.parse((await cli('--json', 'status')).stdout);
    expect(status).toMatchObject({
      gatewayId: expect.stringMatching(/^gw-/),
      agents: ['support', 'broken', 'slow'],
      lanes: { main: { active: 0, max: 4 } },
      activeRuns: [],
    });
    expect((await cli('status')).stdout).toMatch(/^gateway gw-[0-9a-f-]+, up \d+s\nagents: support, broken, slow\nlanes: main 0\/4 active/);
    const shown = await cli('sessions', 'show', 'agent:support:main');
    expect(shown.stdout).toMatch(
      /^session agent:support:main\n {2}agent: {2}support\n {2}state: {2}idle, 0 queued input\(s\)\n {2}route: {2}\{"channel":"cli"\}/,
    );
    const runs = JSON.parse((await cli('--json', 'runs', 'list', '--limit', '1')).stdout);
    expect(await cli('runs', 'cancel', runs.runs[0].id)).toEqual({
      code: 0,
      stdout: `run ${runs.runs[0].id} is not active; nothing to cancel\n`,
      stderr: '',
    });
  });

  it('cli: send --wait --timeout gives up waiting and says the message is delivered; bad numbers are refused', async () => {
    const result = await cli('send', 'slow', 'take your time', '--wait', '--timeout', '0.3');
    // A wait that times out has its own exit code (124, as GNU timeout), not 1, the code for an error.
    expect(result.code).toBe(124);
    expect(result.stdout).toMatch(
      /^no reply yet; input [0-9a-f-]+ is delivered and will still be processed \(follow it with "switchboard sessions history agent:slow:main"\)\n$/,
    );
    expect(await cli('send', 'support', 'x', '--wait', '--timeout', '0')).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: option '-t, --timeout <seconds>' argument '0' is invalid. expected a positive number of seconds, got "0"\n(add --help for usage)\n`,
    });
    expect((await cli('runs', 'list', '--limit', 'abc')).stderr).toBe(
      `error: option '--limit <n>' argument 'abc' is invalid. expected a whole number of at least 1, got "abc"\n(add --help for usage)\n`,
    );
  });

  it('cli: errors exit non-zero with one clear line', async () => {
    expect(await cli('send', 'ghost', 'hi')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: unknown agent "ghost" (configured agents: support, broken, slow)\n',
    });
    const failed = await cli('send', 'broken', 'hi', '--wait');
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^run [0-9a-f-]+ failed: upstream exploded \(HTTP 500 from scripted:\/\/b\)\n$/);
    expect(await cli('sessions', 'history', 'agent:support:nope:direct:x')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: no session "agent:support:nope:direct:x" (list them with "switchboard sessions list")\n',
    });
    const json = await cli('--json', 'send', 'ghost', 'hi');
    expect(JSON.parse(json.stderr)).toEqual({
      error: { code: 'AGENT_NOT_FOUND', message: 'unknown agent "ghost" (configured agents: support, broken, slow)' },
    });
  });

  it('cli: a malformed config refuses to start the gateway with the path and the problem', async () => {
    const bad = tempConfig('{ agents: { list: [{ id: "" }] } }');
    const result = await run(process.execPath, [BIN, '--config', bad.configPath, 'gateway', '--port', '0'], { cwd: ROOT }).catch((e) => e);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `switchboard: invalid config ${bad.configPath}:\n  agents.list[0].id: expected a string of 1-64 characters [a-z0-9_-], got ""\n`,
    );
  });

  it('cli: a second gateway on the same data directory refuses to start', async () => {
    const second = await run(process.execPath, [BIN, '--config', configPath, 'gateway', '--port', '0'], { cwd: ROOT }).catch((e) => e);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(
        `^switchboard: another gateway \\(pid ${suite.gw.child.pid}\\) is already using the data directory .*\\.switchboard; stop it, or give this one its own gateway\\.dataDir\\n$`,
      ),
    );
  });

  it('cli: chat answers each piped line in turn and ends with the input', async () => {
    const child = spawn(process.execPath, [BIN, '--config', configPath, 'chat', 'support'], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stdin.end('one\ntwo\n');
    const [code] = await once(child, 'close');
    expect(code).toBe(0);
    // One display name for the agent, in the header and before each reply.
    expect(out).toBe(
      'chatting with Support (session agent:support:main). Ctrl-C stops waiting for a reply; /exit or Ctrl-D leaves.\nyou> Support> support says: one\nyou> Support> support says: two\nyou> \n',
    );
  });

  it('cli: agents list reads the config without a gateway', async () => {
    const listed = await cli('agents', 'list');
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+MODEL\s+BINDINGS$/);
    expect(listed.stdout).toMatch(/support\s+Support\s+scripted\/s/);
  });
});
