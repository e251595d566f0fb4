/**
 * `switchboard acp` driven by an ACP client built with the official SDK, as an editor drives it, against a real
 * gateway process: a new session, a prompt whose text and tool calls stream back, a cancel, and, after the gateway
 * restarted, the session loaded with its history replayed.
 */
import { client, ndJsonStream, PROTOCOL_VERSION, type SessionNotification } from '@agentclientprotocol/sdk';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, startGatewayProcess, stopGatewayProcess, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { list: [{ id: "main", model: "scripted/main" }] },
  board: { agents: ["main"] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [
    { match: "slowly", delayMs: 20000, reply: "too late" },
    { match: "plan", steps: [{ toolCalls: [{ tool: "board_create", args: { title: "write the docs" } }] }, { text: "put it on the board" }] },
    { match: "time", steps: [{ toolCalls: [{ tool: "current_time", args: {} }] }, { text: "It is {{tool.current_time}}" }] },
    { match: ".*", reply: "echo: {{input}}" },
  ] } } } } },
}`);

/** An editor: `switchboard acp` as its child, and what it was told. */
function editor() {
  const child = spawn(process.execPath, [BIN, '--config', configPath, 'acp', '--agent', 'main'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const updates: SessionNotification[] = [];
  const connection = client({ name: 'test-editor' })
    .onNotification('session/update', ({ params }) => void updates.push(params))
    .connect(
      ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>),
    );
  return {
    agent: connection.agent,
    updates,
    stderr: () => stderr,
    close: () => {
      connection.close();
      child.kill();
    },
  };
}

const textOf = (updates: SessionNotification[], kind: string) =>
  updates
    .map((note) => note.update)
    .filter((update) => update.sessionUpdate === kind)
    .map((update) => {
      const content = 'content' in update && !Array.isArray(update.content) ? update.content : undefined;
      return content?.type === 'text' ? content.text : '';
    })
    .join('');

describe('switchboard acp', () => {
  it('new session, streamed prompts with tool calls, cancel, and load after a gateway restart', async () => {
    let gw = await startGatewayProcess(configPath);
    const first = editor();
    try {
      const init = await first.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      expect(init.agentCapabilities?.loadSession).toBe(true);
      const { sessionId } = await first.agent.request('session/new', { cwd: ROOT, mcpServers: [] });
      expect(sessionId).toMatch(/^agent:main:acp-client:[0-9a-f-]{36}$/);

      const echoed = await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello there' }] });
      expect(echoed.stopReason).toBe('end_turn');
      expect(textOf(first.updates, 'agent_message_chunk')).toBe('echo: hello there');

      first.updates.length = 0;
      const timed = await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'what time is it' }] });
      expect(timed.stopReason).toBe('end_turn');
      const kinds = first.updates.map((note) => note.update.sessionUpdate);
      expect(kinds).toEqual(expect.arrayContaining(['tool_call', 'tool_call_update', 'agent_message_chunk']));
      expect(first.updates.find((note) => note.update.sessionUpdate === 'tool_call')?.update).toMatchObject({ title: 'current_time' });
      expect(textOf(first.updates, 'agent_message_chunk')).toMatch(/^It is /);

      // A board hand-off the run made is followed too.
      first.updates.length = 0;
      await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'plan the work' }] });
      const handOff = first.updates
        .map((note) => note.update)
        .find((update) => update.sessionUpdate === 'tool_call' && update.toolCallId.startsWith('board:'));
      expect(handOff).toMatchObject({ title: expect.stringMatching(/^board task .+: created \((todo|ready)\)$/) });

      // Cancel: the run is cancelled at the gateway and the prompt says so.
      const slow = first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'answer slowly' }] });
      await waitUntil('the slow run started', async () => {
        const { body } = await gw.request<{ activeRuns: unknown[] }>('GET', '/v1/status');
        return body.activeRuns.length > 0;
      });
      await first.agent.notify('session/cancel', { sessionId });
      expect((await slow).stopReason).toBe('cancelled');

      // Another agent's session, or a session of another kind, is not this editor's.
      await expect(first.agent.request('session/load', { sessionId: 'agent:main:main', cwd: ROOT, mcpServers: [] })).rejects.toThrow(
        /is not a session of agent "main" opened by an editor/,
      );
      first.close();

      // The gateway restarts; a new editor process loads the session and sees its history.
      expect(await stopGatewayProcess(gw)).toBe(0);
      gw = await startGatewayProcess(configPath);
      const second = editor();
      try {
        await second.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
        await second.agent.request('session/load', { sessionId, cwd: ROOT, mcpServers: [] });
        expect(textOf(second.updates, 'user_message_chunk')).toContain('hello there');
        expect(textOf(second.updates, 'agent_message_chunk')).toContain('echo: hello there');
        expect(second.updates.some((note) => note.update.sessionUpdate === 'tool_call')).toBe(true);
        // And goes on where it left off.
        const again = await second.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'still there?' }] });
        expect(again.stopReason).toBe('end_turn');
      } finally {
        second.close();
      }
    } finally {
      first.close();
      await stopGatewayProcess(gw);
    }
  });

  it('refuses an agent the gateway does not have, on stderr', async () => {
    const gw = await startGatewayProcess(configPath);
    try {
      const child = spawn(process.execPath, [BIN, '--config', configPath, 'acp', '--agent', 'ghost'], { cwd: ROOT });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => child.once('exit', resolve));
      expect(code).toBe(1);
      expect(stderr).toBe('switchboard: the gateway has no agent "ghost" (it has: main)\n');
    } finally {
      await stopGatewayProcess(gw);
    }
  });
});
