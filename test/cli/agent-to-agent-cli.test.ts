/** send --from and sessions tail against a real gateway process, and the control API's `from` field. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, cliWith, tempConfig, gatewayForSuite } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  tools: { agentToAgent: { enabled: true, allow: ["support", "expert"] }, sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 1 } },
  agents: { list: [
    { id: "support", model: "scripted/s" },
    { id: "expert", model: "scripted/e" },
    { id: "sales", model: "scripted/e" },
    { id: "mute", model: "scripted/e", tools: { deny: ["sessions_*"] } },
  ] },
  models: { providers: { scripted: { type: "scripted", models: {
    s: { rules: [{ match: "agent-to-agent turn", reply: "REPLY_SKIP" }, { reply: "support: {{input}}" }] },
    e: { rules: [{ reply: "expert answers {{input}} from {{from.agent}}" }] },
  } } } },
}`);

const cli = cliWith(configPath);

const suite = gatewayForSuite(configPath);

describe('agent-to-agent from the CLI and the control API', () => {
  it('cli: send --from sends as the agent session and --wait prints the reply', async () => {
    expect(await cli('send', 'expert', 'why?', '--from', 'agent:support:main', '--wait')).toEqual({
      code: 0,
      stdout: 'expert answers why? from support\n',
      stderr: '',
    });
    const accepted = await cli('send', 'agent:expert:main', 'later', '--from', 'agent:support:main', '--mode', 'collect');
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toMatch(
      /^accepted: input \S+ for agent:expert:main: delivered; the reply will arrive in this session as a message/,
    );
  });

  it('cli: send --from is refused, naming the layer, where the policy says no', async () => {
    const denied = await cli('send', 'sales', 'hi', '--from', 'agent:support:main');
    expect(denied).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'switchboard: cannot send to agent "sales": agent "sales" is not in tools.agentToAgent.allow (["support","expert"]); requester and target must both match\n',
    });
    const noTool = await cli('send', 'support', 'hi', '--from', 'agent:mute:main');
    expect(noTool.stderr).toBe(
      'switchboard: agent "mute" may not use sessions_send: the tool policy leaves it out (agents.list[mute].tools.deny (["sessions_*"]) denies it)\n',
    );
  });

  it('api: POST /v1/send with from answers 403 with the layer, and 400 for fields that only a user channel has', async () => {
    const denied = await suite.gw.request<{ error: { code: string; details: { layer: string } } }>('POST', '/v1/send', {
      from: 'agent:support:main',
      target: 'sales',
      message: 'x',
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ code: 'A2A_POLICY_DENIED', details: { layer: 'agentToAgent' } });
    const bad = await suite.gw.request<{ error: { message: string } }>('POST', '/v1/send', {
      from: 'agent:support:main',
      target: 'expert',
      message: 'x',
      channel: 'cli',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe(
      "channel, peer and account describe a user's channel; a send with from comes from an agent session and takes none of them",
    );
    const label = await suite.gw.request<{ error: { code: string; message: string } }>('POST', '/v1/send', {
      from: 'agent:support:main',
      label: 'nope',
      target: 'expert',
      message: 'x',
    });
    expect(label.status).toBe(404);
    expect(label.body.error.message).toBe('no session labelled "nope" for agent "expert"');
  });

  it('cli: sessions tail follows the session: exchanges, runs and replies, live', async () => {
    const tail = spawn(process.execPath, [BIN, '--config', configPath, 'sessions', 'tail', 'agent:support:cli:direct:tailer'], {
      cwd: ROOT,
    });
    let out = '';
    tail.stdout.on('data', (chunk) => (out += chunk));
    // Something that happens after the tail has started: a send as a session that has never existed before.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await cli('send', 'expert', 'tail me', '--from', 'agent:support:cli:direct:tailer', '--wait')).toMatchObject({ code: 0 });
    await waitUntil(
      'the tail printed the exchange and the ping-pong turn',
      () => /exchange \S+ agent:support:cli:direct:tailer -> agent:expert:main: done/.test(out),
      10_000,
    );
    tail.kill('SIGINT');
    expect(out).toMatch(/exchange \S+ agent:support:cli:direct:tailer -> agent:expert:main: request, turn 0, reply replied/);
    expect(out).toMatch(/run \S+ succeeded: REPLY_SKIP/);
  });

  it('cli: exchanges list and show, by a prefix of the id', async () => {
    expect(await cli('send', 'expert', 'list me', '--from', 'agent:support:main', '--wait')).toMatchObject({ code: 0 });
    const { exchanges } = JSON.parse((await cli('--json', 'exchanges', 'list', '--session', 'agent:expert:main')).stdout) as {
      exchanges: { id: string; requesterSession: string }[];
    };
    const exchange = exchanges.at(-1)!;
    expect(exchange.requesterSession).toBe('agent:support:main');
    const listed = await cli('exchanges', 'list', '--session', 'agent:expert:main');
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID +FROM +TO +PHASE +TURN +REPLY +CREATED$/);
    expect(listed.stdout).toContain(exchange.id);
    const shown = await cli('exchanges', 'show', exchange.id.slice(0, 8));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`exchange ${exchange.id} (conversation `);
    expect(shown.stdout).toMatch(/\n {2}from: {5}agent:support:main \(agent support\)\n {2}to: {7}agent:expert:main \(agent expert\)\n/);
    expect(shown.stdout).toMatch(/\nrequest +- +agent:expert:main +\S+ +consumed +\S+\nturn +1 +agent:support:main +\S+ +consumed +\S+/);
    expect(await cli('exchanges', 'show', 'nope-nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: no exchange "nope-nope" (list them with "switchboard exchanges list")\n',
    });
  });

  it('cli: sessions tail --deltas ends streamed text with a newline before the next event', async () => {
    const tail = spawn(process.execPath, [BIN, '--config', configPath, 'sessions', 'tail', 'agent:expert:main', '--deltas'], { cwd: ROOT });
    let out = '';
    tail.stdout.on('data', (chunk) => (out += chunk));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await cli('send', 'expert', 'stream me', '--wait')).toMatchObject({ code: 0 });
    await waitUntil('the tail printed the run', () => /run \S+ succeeded/.test(out), 10_000);
    tail.kill('SIGINT');
    // The streamed reply, then the next event on a line of its own.
    expect(out).toMatch(/expert answers stream me from \S*\n\d\d:\d\d:\d\d\.\d{3} #\d+ run \S+ succeeded/);
  });
});
