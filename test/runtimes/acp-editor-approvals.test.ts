/**
 * `switchboard acp` asks the editor about the approval requests of its session (docs/runtimes.md, "Switchboard in
 * your editor"): an ACP client built with the official SDK, connected to the editor server over NDJSON, in front of a
 * real gateway's control API. Allow runs the call once, reject gives the model APPROVAL_DENIED, and an answer given
 * elsewhere first withdraws the editor's question.
 */
import {
  client as acpClient,
  ndJsonStream,
  PROTOCOL_VERSION,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/cli/client.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { ControlApi } from '../../src/http/control-api.js';
import { AcpEditorServer } from '../../src/runtimes/acp-editor.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'acp-approvals-token';

/** An agent that runs `sh -c "echo <word> >> <word>.txt"` under `ask: ["exec"]`, then says what the exec answered. */
const config = (workspace: string) => `{
  agents: { list: [{ id: "coder", model: "scripted/coder", workspace: ${JSON.stringify(workspace)},
    exec: { enabled: true }, tools: { ask: ["exec"] } }] },
  models: { providers: { scripted: { type: "scripted", models: {
    coder: { rules: [{ match: "log (\\\\w+)", steps: [
      { toolCalls: [{ tool: "exec", args: { command: "sh", args: ["-c", "echo {{match.1}} >> {{match.1}}.txt"] } }] },
      { text: "exec said {{tool.exec}}" },
    ] }] },
  } } } },
}`;

type Answer = (params: RequestPermissionRequest, signal: AbortSignal) => Promise<RequestPermissionResponse>;

const choose =
  (kind: 'allow_once' | 'reject_once'): Answer =>
  async (params) => ({
    outcome: { outcome: 'selected', optionId: params.options.find((option) => option.kind === kind)!.optionId },
  });

const workspace = mkdtempSync(join(tmpdir(), 'sb-acp-ask-'));
let gateway: Gateway;
let api: ControlApi;
let url: string;
beforeAll(async () => {
  gateway = await startTestGateway(config(workspace));
  api = new ControlApi(gateway, { host: '127.0.0.1', port: 0, token: TOKEN });
  url = await api.listen();
});
afterAll(async () => {
  await api.close();
  await stopTestGateway(gateway);
});

const disconnects: (() => void)[] = [];
afterEach(() => {
  for (const disconnect of disconnects.splice(0)) disconnect();
});

/** An editor connected to `switchboard acp --agent coder` in front of the gateway, in a new session. */
async function setUp(answer: Answer) {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toEditor = new TransformStream<Uint8Array, Uint8Array>();
  const warnings: string[] = [];
  const server = new AcpEditorServer(new ControlClient({ url, token: TOKEN }), 'coder', (message) => warnings.push(message)).connect(
    ndJsonStream(toEditor.writable, toAgent.readable),
  );
  const asked: RequestPermissionRequest[] = [];
  const updates: SessionNotification[] = [];
  const editor = acpClient({ name: 'test-editor' })
    .onRequest('session/request_permission', ({ params, signal }) => {
      asked.push(params);
      return answer(params, signal);
    })
    .onNotification('session/update', ({ params }) => void updates.push(params))
    .connect(ndJsonStream(toAgent.writable, toEditor.readable));
  disconnects.push(() => {
    editor.close();
    server.close();
  });
  await editor.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await editor.agent.request('session/new', { cwd: workspace, mcpServers: [] });
  const prompt = (text: string) => editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
  const approval = async () => {
    const approvals = await gateway.listApprovals({ sessionKey: sessionId });
    expect(approvals).toHaveLength(1);
    return approvals[0]!;
  };
  return { warnings, asked, updates, sessionId, prompt, approval };
}

const said = (updates: SessionNotification[]) =>
  updates
    .map((note) => note.update)
    .map((update) => (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text' ? update.content.text : ''))
    .join('');

describe('switchboard acp: approval requests', () => {
  it('asks the editor with session/request_permission; allow_once approves, the command runs once and the prompt ends end_turn', async () => {
    const editor = await setUp(choose('allow_once'));
    const { stopReason } = await editor.prompt('log hello');
    expect(stopReason).toBe('end_turn');

    expect(editor.asked).toHaveLength(1);
    const [question] = editor.asked;
    const approval = await editor.approval();
    expect(question).toMatchObject({
      sessionId: editor.sessionId,
      toolCall: {
        toolCallId: approval.toolCallId,
        title: 'exec: sh -c echo hello >> hello.txt',
        kind: 'execute',
        status: 'pending',
        rawInput: { command: 'sh', args: ['-c', 'echo hello >> hello.txt'] },
      },
    });
    expect(question!.options.map((option) => option.kind)).toEqual(['allow_once', 'reject_once']);
    const content = question!.toolCall.content?.[0];
    const text = content?.type === 'content' && content.content.type === 'text' ? content.content.text : '';
    expect(text).toContain('Run: sh -c echo hello >> hello.txt');
    expect(text).toContain(`In: ${workspace}`);
    expect(text).toContain('Asked because agents.list[coder].tools.ask has "exec".');

    expect(approval).toMatchObject({ status: 'approved', decidedBy: 'acp:coder', sessionKey: editor.sessionId });
    expect(readFileSync(join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(said(editor.updates)).toContain('"status":"ok"');
    // The question announced the call: the run's report of it at the end is an update of that call, not a second one.
    const announced = editor.updates.filter((note) => note.update.sessionUpdate === 'tool_call');
    expect(announced.map((note) => (note.update as { toolCallId: string }).toolCallId)).not.toContain(approval.toolCallId);
    expect(editor.warnings).toEqual([]);
  }, 30_000);

  it('reject_once denies: nothing runs and the reply carries APPROVAL_DENIED', async () => {
    const editor = await setUp(choose('reject_once'));
    const { stopReason } = await editor.prompt('log nope');
    expect(stopReason).toBe('end_turn');
    expect(editor.asked).toHaveLength(1);
    expect(await editor.approval()).toMatchObject({ status: 'denied', decidedBy: 'acp:coder' });
    expect(said(editor.updates)).toContain('"code":"APPROVAL_DENIED"');
    expect(said(editor.updates)).toContain('acp:coder denied this exec call');
    expect(existsSync(join(workspace, 'nope.txt'))).toBe(false);
    expect(editor.warnings).toEqual([]);
  }, 30_000);

  it('an answer given elsewhere first withdraws the editor question, and the answer given first stands', async () => {
    let withdrawn = false;
    // An editor whose person has not chosen yet: it answers only when the question is withdrawn, and then late,
    // with allow, as a dialog that ignored the withdrawal would.
    const editor = await setUp(
      (params, signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            withdrawn = true;
            resolve({
              outcome: { outcome: 'selected', optionId: params.options.find((option) => option.kind === 'allow_once')!.optionId },
            });
          }),
        ),
    );
    const prompt = editor.prompt('log elsewhere');
    await waitUntil('the editor is asked', () => editor.asked.length === 1, 10_000, 10);
    const approval = await editor.approval();
    await gateway.decideApproval(approval.id, { approve: false, by: 'cli:ann', note: 'not now' });
    expect((await prompt).stopReason).toBe('end_turn');
    expect(withdrawn).toBe(true);
    expect(await editor.approval()).toMatchObject({ status: 'denied', decidedBy: 'cli:ann' });
    expect(said(editor.updates)).toContain('cli:ann denied this exec call: not now');
    expect(existsSync(join(workspace, 'elsewhere.txt'))).toBe(false);
    expect(editor.warnings).toEqual([]);
  }, 30_000);
});
