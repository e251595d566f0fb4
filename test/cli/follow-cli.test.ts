/**
 * What the terminal shows of a session (issue 33's terminal part), against a real gateway process: `sessions tail`
 * with each message's sender, each tool call and result, and the run's end; `runs show` with the tool calls; the
 * whole journal with `events`; a key that can have no events refused; a follower that reconnects after the gateway
 * restarted, with no event lost.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, cliWith, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "main", model: "scripted/main" }] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [
    { match: "time", steps: [{ toolCalls: [{ tool: "time_now", args: {} }] }, { text: "checked the clock" }] },
    { reply: "echo: {{input}}" },
  ] } } } } },
}`);
const cli = cliWith(configPath);

function follow(...args: string[]) {
  const child = spawn(process.execPath, [BIN, '--config', configPath, ...args], { cwd: ROOT });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  return { child, out: () => out, err: () => err };
}

const followers: ReturnType<typeof follow>[] = [];
afterAll(() => {
  for (const follower of followers) follower.child.kill();
});

describe('following from the terminal', () => {
  it('sessions tail, runs show and events; a reconnect after a restart loses nothing', async () => {
    let gw = await startGatewayProcess(configPath);
    try {
      expect((await cli('send', 'main', 'hello', '--wait')).stdout).toBe('echo: hello\n');
      const tail = follow('sessions', 'tail', 'agent:main:main', '--after', '0');
      const events = follow('events', '--type', 'run.');
      followers.push(tail, events);
      await waitUntil('the tail replayed the first run', () => tail.out().includes('completed') || tail.out().includes('succeeded'));
      expect(tail.out()).toMatch(/ {2}<- user from cli: hello\n/);

      const sent = await cli('--json', 'send', 'main', 'what time is it', '--wait');
      const { runId } = JSON.parse(sent.stdout) as { runId: string };
      await waitUntil('the tail printed the run to its end', () => tail.out().includes('succeeded: checked the clock'));
      expect(tail.out()).toMatch(/tool time_now\(\{\}\) -> /);
      expect(tail.out()).toMatch(/ {2}<- user from cli: what time is it\n/);
      const shown = await cli('runs', 'show', runId);
      expect(shown.stdout).toMatch(/ {2}tools: {4}1 call\(s\)\n {4}time_now\(\{\}\) -> /);
      await waitUntil('events printed both runs of the new one', () => events.out().includes(`run ${runId.slice(0, 8)}`));
      expect(events.out()).toContain('[agent:main:main]');

      // The gateway goes away and comes back: the tail says so, reconnects, and prints what happened meanwhile.
      await stopGatewayProcess(gw);
      await waitUntil('the tail said the gateway went away', () => tail.err().includes('reconnecting from event #'), 15_000);
      expect(tail.err()).toMatch(/or resume later with: switchboard --config \S+ sessions tail agent:main:main --after \d+\)/);
      gw = await startGatewayProcess(configPath);
      expect((await cli('send', 'main', 'after the restart', '--wait')).stdout).toBe('echo: after the restart\n');
      // Until the new run's end: the message itself is printed first, and its run's end can follow a moment later.
      await waitUntil(
        'the tail reconnected and printed the new run',
        () => tail.out().includes('succeeded: echo: after the restart'),
        20_000,
      );
      expect(tail.err()).toContain('switchboard: reconnected');
      // Each run's end once, the restart notwithstanding.
      expect(tail.out().match(/ succeeded: /g)).toHaveLength(3);
    } finally {
      await stopGatewayProcess(gw);
    }
  }, 90_000);

  it('events reconnects after a kill -9 of the gateway and prints what follows the restart, each event once', async () => {
    let gw = await startGatewayProcess(configPath);
    try {
      const events = follow('--json', 'events', '--after', '0');
      followers.push(events);
      const seen = () =>
        events
          .out()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { seq: number; type: string; runId?: string });
      const first = JSON.parse((await cli('--json', 'send', 'main', 'before the kill', '--wait')).stdout) as { runId: string };
      await waitUntil(
        'events printed the first run',
        () => seen().some((event) => event.runId === first.runId && event.type === 'run.completed'),
        15_000,
      );

      await stopGatewayProcess(gw, 'SIGKILL');
      await waitUntil('events said the gateway went away', () => events.err().includes('reconnecting from event #'), 15_000);
      expect(events.child.exitCode).toBeNull();
      gw = await startGatewayProcess(configPath);
      const second = JSON.parse((await cli('--json', 'send', 'main', 'after the kill', '--wait')).stdout) as { runId: string };
      await waitUntil(
        'events printed the run after the restart',
        () => seen().some((event) => event.runId === second.runId && event.type === 'run.completed'),
        30_000,
      );
      const seqs = seen().map((event) => event.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(seen().filter((event) => event.runId === second.runId && event.type === 'run.completed')).toHaveLength(1);
      expect(events.err()).not.toContain('terminated');
    } finally {
      await stopGatewayProcess(gw);
    }
  }, 90_000);

  it('events and sessions tail whose reader went away (| head) end quietly with status 0, not an EPIPE trace', async () => {
    const gw = await startGatewayProcess(configPath);
    try {
      await cli('send', 'main', 'before the reader', '--wait');
      const readers = [follow('events', '--after', '0'), follow('sessions', 'tail', 'agent:main:main', '--after', '0')];
      followers.push(...readers);
      for (const reader of readers) await waitUntil('the follower printed a line', () => reader.out().includes('\n'), 30_000);
      // As `| head -1` does: the reader closes its end, and the next line the follower writes has nowhere to go.
      const ended = readers.map((reader) => new Promise<number | null>((resolve) => reader.child.once('exit', (code) => resolve(code))));
      for (const reader of readers) reader.child.stdout.destroy();
      await cli('send', 'main', 'after the reader left', '--wait');
      expect(await Promise.all(ended)).toEqual([0, 0]);
      for (const reader of readers) expect(reader.err()).toBe('');
    } finally {
      await stopGatewayProcess(gw);
    }
  }, 60_000);

  it('a key that can have no events is refused; a session not created yet is waited for, and said so', async () => {
    const gw = await startGatewayProcess(configPath);
    try {
      expect(await cli('sessions', 'tail', 'main')).toMatchObject({
        code: 1,
        stderr: expect.stringContaining('switchboard: "main" is not a session key (agent:<agentId>:main'),
      });
      expect(await cli('sessions', 'tail', 'agent:ghost:main')).toMatchObject({
        code: 1,
        stderr: 'switchboard: no session "agent:ghost:main", and the gateway has no agent "ghost" (it has: main)\n',
      });
      const waiting = follow('sessions', 'tail', 'agent:main:cli:direct:later');
      followers.push(waiting);
      await waitUntil('the tail said it waits', () => waiting.err().includes('no session agent:main:cli:direct:later yet'));
    } finally {
      await stopGatewayProcess(gw);
    }
  });
});
