/**
 * Sub-agents run by ACP agents (`sessions_spawn({ runtime: "acp", agent })`, docs/runtimes.md). Each run starts the
 * agent declared in `acp.agents.<name>` as a child process, and speaks the Agent Client Protocol to it over stdio with
 * the official SDK: `initialize`, `session/new` in the sub-agent's workdir, and `session/prompt` with the run's input.
 * Its `session/update`s are journaled and become the run's transcript; its permission requests are answered by
 * policy, its file and terminal requests served inside the workdir (acp-host.ts). A kill or a timeout sends
 * `session/cancel`, then ends the process group.
 */
import { client, ndJsonStream, PROTOCOL_VERSION, type SessionUpdate, type ToolCallContent } from '@agentclientprotocol/sdk';
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { SwitchboardConfig } from '../config/schema.js';
import type { ExternalRunRequest, ExternalRuntime } from '../ports/runtimes.js';
import type { ExecutedRun } from '../ports/runtimes.js';
import { answerWith, decidePermission } from './acp-permissions.js';
import { AcpHost } from './acp-host.js';
import type { ChildRecords } from '../processes.js';
import { RuntimeChild } from './child-process.js';
import { RunRecorder } from './run-recorder.js';
import { executedRun, supervise, unfinished } from './supervise.js';
import { traceHeader } from '../kit/trace-context.js';

export interface RuntimeDeps {
  config: () => SwitchboardConfig;
  records: ChildRecords;
}

const STOP_FAILURES: Record<string, string> = {
  max_tokens: 'the agent stopped: it reached its token limit (stopReason max_tokens)',
  max_turn_requests: 'the agent stopped: it reached its limit of model requests in one turn (stopReason max_turn_requests)',
  refusal: 'the agent refused the task (stopReason refusal)',
  cancelled: 'the agent cancelled the turn by itself (stopReason cancelled)',
};

export class AcpRuntime implements ExternalRuntime {
  constructor(private readonly deps: RuntimeDeps) {}

  async run(request: ExternalRunRequest): Promise<ExecutedRun> {
    const { config } = this.deps;
    const recorder = new RunRecorder(request);
    const agent = config().acp.agents[request.name];
    if (!agent) {
      const message = `acp.agents has no "${request.name}" any more (the config changed since the spawn)`;
      return executedRun(recorder, request, { status: 'failed', error: { code: 'RUNTIME_UNAVAILABLE', message } });
    }
    const root = await realpath(request.workdir);
    const graceMs = config().acp.cancelGraceMs;
    const source = `acp.agents.${request.name}.permissions`;
    const child = new RuntimeChild(
      { command: agent.command, args: agent.args, env: agent.env, cwd: agent.cwd ? resolve(root, agent.cwd) : root },
      this.deps.records,
      request.runId,
    );
    // The questions this run put to a person, counted: the n-th question of a run is the same request each time.
    let questions = 0;
    const host = new AcpHost({
      root,
      policy: agent.permissions,
      source,
      recorder,
      records: this.deps.records,
      recordPrefix: request.runId,
      writeRefusal: request.writeRefusal,
      graceMs,
      askToRun: (command) =>
        request.askApproval({
          index: questions++,
          subject: `acp:${request.name}:execute`,
          args: command,
          details: { command: command.command, args: command.args, cwd: command.cwd },
          reason: `${source}.execute is "ask"`,
        }),
    });
    const app = client({ name: 'switchboard' })
      .onNotification('session/update', ({ params }) => onUpdate(recorder, params.update))
      .onRequest('session/request_permission', async ({ params }) => {
        let decision = await decidePermission(params.toolCall, root, agent.permissions, source);
        if (decision.ask) {
          const call = params.toolCall;
          const answer = await request.askApproval({
            index: questions++,
            subject: `acp:${request.name}:${call.kind ?? 'other'}`,
            args: call.rawInput ?? null,
            details: { title: call.title ?? null, kind: call.kind ?? 'other', locations: call.locations ?? [], cwd: root },
            reason: `${source}.${call.kind ?? 'other'} is "ask"`,
          });
          decision = { allow: answer.approved, why: answer.why };
          if (answer.approved && call.kind === 'execute') host.approvedExecute(call.rawInput ?? call.title);
        }
        const answer = answerWith(params.options, decision.allow);
        const answered = answer.outcome.outcome === 'selected' ? (decision.allow ? 'allowed' : 'denied') : 'cancelled';
        const why = answered === 'cancelled' ? `${decision.why}, but the agent offered no option that says so` : decision.why;
        recorder.note({ kind: 'permission', toolCallId: params.toolCall.toolCallId, title: params.toolCall.title, answered, why });
        return answer;
      })
      .onRequest('fs/read_text_file', ({ params }) => host.readTextFile(params))
      .onRequest('fs/write_text_file', ({ params }) => host.writeTextFile(params))
      .onRequest('terminal/create', ({ params }) => host.createTerminal(params))
      .onRequest('terminal/output', ({ params }) => host.terminalOutput(params.terminalId))
      .onRequest('terminal/wait_for_exit', ({ params }) => host.waitForExit(params.terminalId))
      .onRequest('terminal/kill', ({ params }) => host.killTerminal(params.terminalId))
      .onRequest('terminal/release', ({ params }) => host.releaseTerminal(params.terminalId));
    const { stdin, stdout } = child.process;
    if (!stdin || !stdout) throw new Error('the child has no stdio pipes');
    const connection = app.connect(
      ndJsonStream(Writable.toWeb(stdin) as WritableStream<Uint8Array>, Readable.toWeb(stdout) as ReadableStream<Uint8Array>),
    );
    let sessionId: string | undefined;
    const work = (async () => {
      await connection.agent.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: host.terminalsOffered },
        clientInfo: { name: 'switchboard', version: '1' },
      });
      const session = await connection.agent.request('session/new', { cwd: root, mcpServers: [] });
      sessionId = session.sessionId;
      recorder.note({ kind: 'session', acpSessionId: sessionId, agent: request.name, pid: child.pid ?? null });
      // The run's trace goes to the agent in the request's _meta (ACP's extension point), as W3C traceparent.
      const _meta = traceHeader();
      return connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: request.prompt }], _meta });
    })();
    const outcome = await supervise({
      child,
      work,
      signal: request.signal,
      softStop: () => {
        if (sessionId) void connection.agent.notify('session/cancel', { sessionId }).catch(() => {});
      },
      graceMs,
    });
    connection.close();
    await host.close();
    if (outcome.kind === 'done') recorder.note({ kind: 'stop', stopReason: outcome.value.stopReason });
    await recorder.settled();
    if (outcome.kind !== 'done') return executedRun(recorder, request, unfinished(outcome, child, request, `ACP agent "${request.name}"`));
    const { stopReason } = outcome.value;
    const failure = STOP_FAILURES[stopReason];
    if (failure) return executedRun(recorder, request, { status: 'failed', error: { code: 'RUNTIME_FAILED', message: failure } });
    return executedRun(recorder, request, { status: 'succeeded' });
  }
}

/** One `session/update`, into the run's record. */
function onUpdate(recorder: RunRecorder, update: SessionUpdate): void {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk':
      if (update.content.type === 'text') recorder.text(update.content.text);
      return;
    case 'agent_thought_chunk':
      if (update.content.type === 'text') recorder.thought(update.content.text);
      return;
    case 'tool_call':
      recorder.toolCall({
        id: update.toolCallId,
        title: update.title,
        kind: update.kind,
        status: update.status,
        input: update.rawInput,
        output: contentText(update.content),
      });
      return;
    case 'tool_call_update':
      recorder.toolUpdate({
        id: update.toolCallId,
        title: update.title ?? undefined,
        kind: update.kind ?? undefined,
        status: update.status ?? undefined,
        input: update.rawInput,
        output: contentText(update.content ?? undefined),
      });
      return;
    case 'plan':
      recorder.note({ kind: 'plan', entries: update.entries.map(({ content, status, priority }) => ({ content, status, priority })) });
      return;
    case 'user_message_chunk':
    case 'available_commands_update':
    case 'current_mode_update':
    case 'config_option_update':
      // Echoes and editor affordances: nothing a reader of the run needs.
      return;
    default:
      recorder.note({ kind: update.sessionUpdate });
  }
}

/** A tool call's content as text: its text blocks, and a line for each diff and terminal. */
function contentText(content: readonly ToolCallContent[] | undefined): string | undefined {
  if (!content || content.length === 0) return undefined;
  return content
    .map((item) => {
      if (item.type === 'diff') return `diff ${item.path}`;
      if (item.type === 'terminal') return `terminal ${item.terminalId}`;
      return item.content.type === 'text' ? item.content.text : `[${item.content.type}]`;
    })
    .join('\n');
}
