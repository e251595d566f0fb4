/**
 * Switchboard as an ACP agent for editors (`switchboard acp --agent <id>`, docs/runtimes.md). The editor starts this
 * over stdio; it is a thin client of a running gateway's control API, so the work and its record are the gateway's
 * and an editor that crashes loses nothing. `session/new` opens `agent:<id>:acp-client:<uuid>` (the ACP session id is
 * the session key), `session/load` replays a session's transcript as updates, `session/prompt` sends an input and
 * streams its run back (the text as it streams, its sub-agents, exchanges and board hand-offs, then its tool calls) and
 * asks the editor about the session's approval requests meanwhile (acp-approvals.ts), `session/cancel` cancels that run.
 */
import {
  agent as agentApp,
  PROTOCOL_VERSION,
  RequestError,
  type SessionUpdate,
  type Stream,
  type StopReason,
} from '@agentclientprotocol/sdk';
import type { AgentContext } from '@agentclientprotocol/sdk';
import { randomUUID } from 'node:crypto';
import type { RunToolCall } from '../ports/gateway.js';
import { EditorApprovals } from './acp-approvals.js';

/** The control API calls this needs (the CLI's ControlClient). */
export interface ControlPort {
  request<T>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<T>;
  stream(path: string, onEvent: (event: { event: string; data: string }) => void, signal?: AbortSignal, onOpen?: () => void): Promise<void>;
}

interface JournalEvent {
  seq: number;
  type: string;
  runId: string | null;
  payload: Record<string, unknown> | null;
}

interface HistoryEntry {
  role: string;
  content: unknown;
}

type Part = { type: string; text?: string; toolCallId?: string; toolName?: string; input?: unknown; output?: unknown };

const STOPS: Record<string, StopReason> = { succeeded: 'end_turn', cancelled: 'cancelled', interrupted: 'cancelled' };

/** One prompt in flight: its input, the run that took it, and whether the editor cancelled it. */
interface Prompt {
  inputId?: string;
  runId?: string;
  cancelled: boolean;
}

export class AcpEditorServer {
  private readonly prompts = new Map<string, Prompt>();

  constructor(
    private readonly control: ControlPort,
    private readonly agentId: string,
    /** Stdout is the protocol: what goes wrong outside a request's answer is said here. */
    private readonly warn: (message: string) => void = (message) => process.stderr.write(`switchboard acp: ${message}\n`),
  ) {}

  connect(stream: Stream) {
    return agentApp({ name: 'switchboard' })
      .onRequest('initialize', () => ({
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: { loadSession: true, promptCapabilities: { embeddedContext: true } },
        agentInfo: { name: 'switchboard', version: '1' },
        authMethods: [],
      }))
      .onRequest('session/new', async () => {
        const sessionId = `agent:${this.agentId}:acp-client:${randomUUID()}`;
        return { sessionId };
      })
      .onRequest('session/load', async ({ params, client }) => {
        this.ownSession(params.sessionId);
        await this.replay(params.sessionId, client);
        return {};
      })
      .onRequest('session/prompt', async ({ params, client }) => {
        this.ownSession(params.sessionId);
        const text = params.prompt
          .map((block) =>
            block.type === 'text' ? block.text : block.type === 'resource' && 'text' in block.resource ? block.resource.text : '',
          )
          .filter((part) => part !== '')
          .join('\n\n');
        if (text.trim() === '') throw RequestError.invalidParams(undefined, 'the prompt has no text');
        return { stopReason: await this.prompt(params.sessionId, text, client) };
      })
      .onNotification('session/cancel', async ({ params }) => {
        const prompt = this.prompts.get(params.sessionId);
        if (!prompt) return;
        prompt.cancelled = true;
        if (prompt.runId) await this.cancelRun(prompt.runId);
      })
      .connect(stream);
  }

  /** Only this agent's editor sessions: another agent's, or a gateway session of another kind, is not opened here. */
  private ownSession(sessionId: string): void {
    if (!sessionId.startsWith(`agent:${this.agentId}:acp-client:`))
      throw RequestError.invalidParams(undefined, `"${sessionId}" is not a session of agent "${this.agentId}" opened by an editor`);
  }

  private async cancelRun(runId: string): Promise<void> {
    await this.control.request('POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`).catch(() => {});
  }

  /** Sends the prompt as an input and streams its run back; resolves with how the run ended. */
  private async prompt(sessionId: string, text: string, client: AgentContext): Promise<StopReason> {
    if (this.prompts.has(sessionId)) throw RequestError.invalidRequest(undefined, 'a prompt is already running in this session');
    const prompt: Prompt = { cancelled: false };
    this.prompts.set(sessionId, prompt);
    const stop = new AbortController();
    // A tool call is announced once; what follows about it is an update.
    const announced = new Set<string>();
    const notify = (given: SessionUpdate) => {
      let update = given;
      if (update.sessionUpdate === 'tool_call' && announced.has(update.toolCallId))
        update = { ...update, sessionUpdate: 'tool_call_update' };
      if (update.sessionUpdate === 'tool_call') announced.add(update.toolCallId);
      return client.notify('session/update', { sessionId, update }).catch(() => {});
    };
    const approvals = new EditorApprovals(
      this.control,
      client,
      { sessionId, agentId: this.agentId },
      (toolCallId) => announced.add(toolCallId),
      this.warn,
    );
    let streamed = false;
    let ended: { status: string; finalText: string | null; error: string | null } | undefined;
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const query = `/v1/events?sessionKey=${encodeURIComponent(sessionId)}&after=0&deltas=1`;
    const following = this.control
      .stream(
        query,
        (message) => {
          const data = JSON.parse(message.data) as JournalEvent & { text?: string };
          if (message.event === 'delta') {
            if (prompt.runId && data.runId === prompt.runId && data.text) {
              streamed = true;
              void notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: data.text } });
            }
            return;
          }
          const payload = data.payload ?? {};
          if (data.type.startsWith('approval.')) return approvals.onEvent(data.type, payload);
          const inputIds = (payload.inputIds as string[] | undefined) ?? [];
          if (data.type === 'run.started' && prompt.inputId && inputIds.includes(prompt.inputId)) {
            prompt.runId = data.runId ?? undefined;
            if (prompt.cancelled && prompt.runId) void this.cancelRun(prompt.runId);
          } else if (data.type === 'run.completed' && prompt.inputId && inputIds.includes(prompt.inputId)) {
            const error = payload.error as { message?: string } | null | undefined;
            ended = {
              status: String(payload.status),
              finalText: (payload.finalText as string | null) ?? null,
              error: error?.message ?? null,
            };
            stop.abort();
          } else if (data.runId && data.runId === prompt.runId) {
            const update = collaborationUpdate(data);
            if (update) void notify(update);
          }
        },
        stop.signal,
        () => opened(),
      )
      .catch((error: unknown) => {
        if (!stop.signal.aborted) throw error;
      });
    // Board events carry no session: the run's hand-offs are those whose actor is this session.
    let boardOpened!: () => void;
    const boardOpen = new Promise<void>((resolve) => (boardOpened = resolve));
    const board = this.control
      .stream(
        '/v1/events?type=board.',
        (message) => {
          const data = JSON.parse(message.data) as JournalEvent;
          if (data.payload?.actor === sessionId) void notify(boardUpdate(data));
        },
        stop.signal,
        () => boardOpened(),
      )
      .catch(() => boardOpened());
    try {
      await Promise.race([Promise.all([open, boardOpen]), following]);
      // The stream is open: a request made before it (by a run this session had waiting) is in this list.
      void approvals.askPending();
      const sent = await this.control.request<{ inputId: string }>('POST', '/v1/send', {
        target: sessionId,
        message: text,
        channel: 'acp',
        idempotencyKey: `acp-prompt:${randomUUID()}`,
      });
      prompt.inputId = sent.inputId;
      await following;
      await board;
      if (!ended)
        throw RequestError.internalError(undefined, 'the gateway ended the event stream before the run ended; load the session to see it');
      if (prompt.runId) for (const update of await this.toolCallsOf(prompt.runId)) await notify(update);
      if (!streamed && ended.finalText)
        await notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: ended.finalText } });
      const stopReason = STOPS[ended.status];
      if (!stopReason) throw RequestError.internalError(undefined, `the run ended ${ended.status}: ${ended.error ?? 'no reason given'}`);
      return stopReason;
    } finally {
      stop.abort();
      approvals.close();
      this.prompts.delete(sessionId);
    }
  }

  private async history(sessionId: string): Promise<HistoryEntry[]> {
    const { entries } = await this.control.request<{ entries: HistoryEntry[] }>(
      'GET',
      `/v1/sessions/${encodeURIComponent(sessionId)}/history?limit=1000`,
    );
    return entries;
  }

  /** The run's tool calls and their results (`GET /v1/runs/<id>`), as the updates the editor shows. */
  private async toolCallsOf(runId: string): Promise<SessionUpdate[]> {
    const { toolCalls } = await this.control.request<{ toolCalls: RunToolCall[] }>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
    const parts: Part[] = toolCalls.flatMap(({ toolCallId, toolName, input, output }) => [
      { type: 'tool-call', toolCallId, toolName, input },
      ...(output === null ? [] : [{ type: 'tool-result', toolCallId, output: { value: output } }]),
    ]);
    return parts.flatMap((part) => toolUpdate(part) ?? []);
  }

  /** `session/load`: the whole transcript again, as the updates that would have streamed. */
  private async replay(sessionId: string, client: AgentContext): Promise<void> {
    const entries = await this.history(sessionId).catch((error: { code?: string; message?: string }) => {
      throw RequestError.invalidParams(undefined, error.message ?? String(error));
    });
    for (const entry of entries) {
      for (const part of partsOf(entry.content)) {
        let update: SessionUpdate | undefined;
        if (part.type === 'text' && part.text)
          update = {
            sessionUpdate: entry.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk',
            content: { type: 'text', text: part.text },
          };
        else update = toolUpdate(part);
        if (update) await client.notify('session/update', { sessionId, update });
      }
    }
  }
}

function partsOf(content: unknown): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as Part[]) : [];
}

/** A transcript's tool call or result as the ACP update an editor shows. */
function toolUpdate(part: Part): SessionUpdate | undefined {
  if (part.type === 'tool-call' && part.toolCallId)
    return {
      sessionUpdate: 'tool_call',
      toolCallId: part.toolCallId,
      title: part.toolName ?? 'tool',
      status: 'in_progress',
      rawInput: part.input,
    };
  if (part.type === 'tool-result' && part.toolCallId) {
    const output = part.output as { value?: unknown } | undefined;
    const text = typeof output?.value === 'string' ? output.value : JSON.stringify(output?.value ?? null);
    return {
      sessionUpdate: 'tool_call_update',
      toolCallId: part.toolCallId,
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text } }],
    };
  }
  return undefined;
}

/** A board task the session created or moved, as a tool call the editor can follow. */
function boardUpdate(event: JournalEvent): SessionUpdate {
  const p = event.payload ?? {};
  return {
    sessionUpdate: 'tool_call',
    toolCallId: `board:${p.taskId}`,
    title: `board task ${p.taskId}: ${p.event} (${p.state})`,
    kind: 'other',
    status: p.state === 'done' ? 'completed' : 'in_progress',
  };
}

/** What the run set going among agents (its sub-agents, its exchanges), as tool calls the editor can follow. */
function collaborationUpdate(event: JournalEvent): SessionUpdate | undefined {
  const p = event.payload ?? {};
  if (event.type === 'subagent.updated' && typeof p.subagentId === 'string') {
    const state = String(p.state ?? '');
    const done = !['pending', 'running'].includes(state);
    return {
      sessionUpdate: 'tool_call',
      toolCallId: `subagent:${p.subagentId}`,
      title: `sub-agent ${p.childSessionKey}: ${state}${p.diagnostic ? ` (${p.diagnostic})` : ''}`,
      kind: 'other',
      status: done ? (state === 'succeeded' ? 'completed' : 'failed') : 'in_progress',
    };
  }
  if (event.type === 'exchange.updated' && typeof p.exchangeId === 'string')
    return {
      sessionUpdate: 'tool_call',
      toolCallId: `exchange:${p.exchangeId}`,
      title: `message to ${p.targetSession}: ${p.phase}`,
      kind: 'other',
      status: p.phase === 'done' ? 'completed' : 'in_progress',
    };
  return undefined;
}
