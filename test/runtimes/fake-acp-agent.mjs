// A fake ACP agent built with the official SDK, for the runtime tests and the benchmark. What it does depends on
// words in the prompt: "write <file>" asks permission for an edit and writes through the client, "run" asks for a
// terminal, "show-env" says the names of its environment variables and of a terminal's (run with one variable of its
// own), "show-trace" says the traceparent the prompt carried in _meta, "wait <n>ms" takes that long, "hang" waits for session/cancel, "stubborn" ignores it (and starts a grandchild, and a "daemon" that calls setsid), "crash" dies with
// stderr lines. It records its pid (and a grandchild's) in $FAKE_PIDS_DIR, and exits when its stdin closes.
import { agent, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';

const pids = process.env.FAKE_PIDS_DIR;
const note = (name) => pids && appendFileSync(join(pids, 'pids'), `${name} ${process.pid}\n`);
note('agent');
const cancelled = new Set();
let cwd = process.cwd();

const say = (client, sessionId, text) =>
  client.notify('session/update', { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } });

const app = agent({ name: 'fake' })
  .onRequest('initialize', ({ params }) => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: 'fake-acp', version: '1.0.0' },
    _meta: { client: params.clientCapabilities },
  }))
  .onRequest('session/new', ({ params }) => {
    cwd = params.cwd;
    return { sessionId: `fake-${Math.random().toString(36).slice(2)}` };
  })
  .onNotification('session/cancel', ({ params }) => void cancelled.add(params.sessionId))
  .onRequest('session/prompt', async ({ params, client }) => {
    const { sessionId } = params;
    const text = params.prompt.map((block) => (block.type === 'text' ? block.text : '')).join('');
    await client.notify('session/update', {
      sessionId,
      update: { sessionUpdate: 'plan', entries: [{ content: 'do the task', priority: 'high', status: 'in_progress' }] },
    });
    for (const chunk of ['Working ', 'on: ', text.split('\n')[0]]) await say(client, sessionId, chunk);
    if (text.includes('show-trace')) await say(client, sessionId, `trace: ${params._meta?.traceparent ?? 'none'}`);
    if (text.includes('crash')) {
      process.stderr.write('fatal: the fake agent crashed on purpose\nsecond line of the trace\n');
      setTimeout(() => process.exit(3), 20);
      await new Promise(() => {});
    }
    const write = /write (\S+)/.exec(text);
    if (write) {
      const path = write[1].startsWith('/') ? write[1] : join(cwd, write[1]);
      const toolCallId = 'call-write';
      await client.notify('session/update', {
        sessionId,
        update: {
          sessionUpdate: 'tool_call',
          toolCallId,
          title: `Write ${write[1]}`,
          kind: 'edit',
          status: 'pending',
          locations: [{ path }],
        },
      });
      const answer = await client.request('session/request_permission', {
        sessionId,
        toolCall: { toolCallId, title: `Write ${write[1]}`, kind: 'edit', locations: [{ path }] },
        options: [
          { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
          { optionId: 'no', name: 'Reject', kind: 'reject_once' },
        ],
      });
      const allowed = answer.outcome.outcome === 'selected' && answer.outcome.optionId === 'yes';
      let status = 'failed';
      let result = 'permission denied';
      if (allowed) {
        try {
          await client.request('fs/write_text_file', { sessionId, path, content: `written by the fake agent\n` });
          status = 'completed';
          result = 'wrote it';
        } catch (error) {
          result = `the client refused: ${error.message}`;
        }
      }
      await client.notify('session/update', {
        sessionId,
        update: {
          sessionUpdate: 'tool_call_update',
          toolCallId,
          status,
          content: [{ type: 'content', content: { type: 'text', text: result } }],
        },
      });
    }
    if (text.includes('run')) {
      try {
        const { terminalId } = await client.request('terminal/create', { sessionId, command: 'echo', args: ['from the terminal'] });
        const exit = await client.request('terminal/wait_for_exit', { sessionId, terminalId });
        const { output } = await client.request('terminal/output', { sessionId, terminalId });
        await client.request('terminal/release', { sessionId, terminalId });
        await say(client, sessionId, `\nterminal said ${output.trim()} (exit ${exit.exitCode})`);
      } catch (error) {
        await say(client, sessionId, `\nno terminal: ${error.message}`);
      }
    }
    if (text.includes('show-env')) {
      await say(client, sessionId, `\nagent env: ${Object.keys(process.env).sort().join(',')}`);
      const env = [{ name: 'ASKED_BY_AGENT', value: 'yes' }];
      const { terminalId } = await client.request('terminal/create', { sessionId, command: 'env', env });
      await client.request('terminal/wait_for_exit', { sessionId, terminalId });
      const { output } = await client.request('terminal/output', { sessionId, terminalId });
      await client.request('terminal/release', { sessionId, terminalId });
      const names = output
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => line.split('=')[0]);
      await say(client, sessionId, `\nterminal env: ${names.sort().join(',')}`);
    }
    if (text.includes('stubborn')) {
      const grandchild = spawn('sleep', ['1000'], { stdio: 'ignore' });
      pids && appendFileSync(join(pids, 'pids'), `grandchild ${grandchild.pid}\n`);
      // detached: setsid, as a daemonizing tool does.
      const daemon = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true });
      pids && appendFileSync(join(pids, 'pids'), `daemon ${daemon.pid}\n`);
      process.on('SIGTERM', () => {});
      await new Promise(() => {});
    }
    const pause = /wait (\d+)ms/.exec(text);
    if (pause) await new Promise((resolve) => setTimeout(resolve, Number(pause[1])));
    if (text.includes('hang')) {
      while (!cancelled.has(sessionId)) await new Promise((resolve) => setTimeout(resolve, 20));
      return { stopReason: 'cancelled' };
    }
    await say(client, sessionId, '\nDone: the task is finished.');
    return { stopReason: 'end_turn' };
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
// An ACP agent whose client went away (its stdin closed) has nobody to work for.
connection.closed.then(() => process.exit(0));
