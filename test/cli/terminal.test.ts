/**
 * The CLI driven as a person drives it: under a pseudo-terminal (util-linux `script`), with Ctrl-C during
 * a wait, a late reply arriving while something is typed, a spinner, and ids shortened to a prefix.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, cliWith, tempConfig, gatewayForSuite } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "slow", model: "scripted/z", identity: { name: "Zed" } }, { id: "quick", model: "scripted/q" }, { id: "lead", model: "scripted/l" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    z: { rules: [{ delayMs: 1500, reply: "sorry for the wait" }] },
    q: { rules: [{ reply: "quick says: {{input}}" }] },
    l: { rules: [
      { match: "sub-agent \\"dig\\" succeeded[\\\\s\\\\S]*?Result:\\\\n([\\\\s\\\\S]*?)\\\\nStats:", reply: "In short: {{match.1}}" },
      { match: "^Dig into (.+)", delayMs: 300, reply: "notes on {{match.1}}" },
      { match: "research (.+)", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "Dig into {{match.1}}", label: "dig" } }] }, { text: "I asked a researcher." }] },
    ] },
  } } } },
}`);
const cli = cliWith(configPath);

gatewayForSuite(configPath);

/** A command under a pseudo-terminal: what it printed so far, and a way to type. */
function underTerminal(...args: string[]): { child: ChildProcess; output: () => string; type: (keys: string) => void } {
  const command = [process.execPath, BIN, '--config', configPath, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    env: { ...process.env, TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return { child, output: () => output, type: (keys) => child.stdin!.write(keys) };
}

describe('the CLI on a terminal', () => {
  it('chat: Ctrl-C during a wait stops waiting and keeps the chat; the late reply is printed above a redrawn prompt with what was typed', async () => {
    const chat = underTerminal('chat', 'slow');
    await waitUntil('the chat is open', () => chat.output().includes('you> '), 10_000);
    chat.type('are you there?\r');
    await waitUntil('the message is sent', () => chat.output().includes('are you there?'), 5000);
    chat.type('\x03');
    await waitUntil('the wait is stopped', () => chat.output().includes('(stopped waiting; the reply will show here when it comes)'), 5000);
    chat.type('half a thou');
    // The late reply: printed on a cleared line, then the prompt again with the half-typed text.
    await waitUntil('the late reply is shown', () => /\r\x1b\[KZed> sorry for the wait\r?\n/.test(chat.output()), 10_000);
    await waitUntil(
      'the prompt is redrawn with the typed text',
      () => chat.output().split('Zed> sorry for the wait').at(-1)!.includes('you> half a thou'),
      5000,
    ).catch((error) => {
      throw new Error(`${error.message}; the terminal shows ${JSON.stringify(chat.output())}`);
    });
    expect(chat.child.exitCode).toBeNull();
    // Ctrl-U clears the line; /exit ends the chat normally.
    chat.type('\x15/exit\r');
    const [code] = await once(chat.child, 'close');
    expect(code).toBe(0);
    expect(chat.output()).toContain('chatting with Zed (session agent:slow:main)');
  });

  it('send --wait: a spinner with the session, its state and the elapsed time; Ctrl-C stops waiting with exit code 130', async () => {
    const send = underTerminal('send', 'slow', 'take your time', '--wait');
    await waitUntil(
      'the spinner shows the run',
      () => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] agent:slow:main: (queued|running) \(\d+\.\ds, Ctrl-C stops waiting\)/.test(send.output()),
      10_000,
    );
    send.type('\x03');
    // 'close', not 'exit': the output is read to its end only then.
    const [code] = await once(send.child, 'close');
    expect(code).toBe(130);
    expect(send.output()).toMatch(
      /stopped waiting; input [0-9a-f-]+ is delivered and will still be processed \(follow it with "switchboard sessions tail agent:slow:main"\)/,
    );
  });

  it('ids: runs show and runs cancel take a unique prefix; too short or unknown ones say what was not found', async () => {
    const sent = JSON.parse((await cli('--json', 'send', 'quick', 'prefix please', '--wait')).stdout) as { runId: string };
    const shown = await cli('runs', 'show', sent.runId.slice(0, 8));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`run ${sent.runId} on agent:quick:main`);
    expect(await cli('runs', 'cancel', sent.runId.slice(0, 6))).toEqual({
      code: 0,
      stdout: `run ${sent.runId.slice(0, 6)} is not active; nothing to cancel\n`,
      stderr: '',
    });
    expect(await cli('runs', 'show', 'zzzzzzzz')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: no run "zzzzzzzz" (list them with "switchboard runs list")\n',
    });
  });

  it('send --wait shows the results of sub-agents its run spawned, as the agent passes them on within the timeout', async () => {
    expect(await cli('send', 'lead', 'research caching', '--wait', '--timeout', '20')).toEqual({
      code: 0,
      stdout: 'I asked a researcher.\n(later) In short: notes on caching\n',
      stderr: '',
    });
  });
});
