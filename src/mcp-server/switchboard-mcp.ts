/**
 * Switchboard as an MCP server (docs/mcp-server.md; ARCHITECTURE.md section 6, "coding agents calling in"): the tools
 * and resources an MCP client (Claude Code, Codex, Cursor) is offered, built once per serving unit by
 * `mcpServerFactory`. The client is one configured caller (`mcpServer.caller`): its messages are inputs with provenance
 * channel `mcp` and that peer, in its own direct session with each agent, under the same checks as any other caller's.
 * Failures come back as tool errors that say what went wrong and how to fix it, never as protocol errors.
 */
import { randomUUID } from 'node:crypto';
import { McpServer, ResourceTemplate, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { BoardActor, BoardService } from '../board/board.js';
import type { McpServerConfig } from '../config/schema-mcp-server.js';
import { SwitchboardError, toSwitchboardError } from '../core/errors.js';
import { parseSessionKey } from '../core/session-key.js';
import { matchesAny } from '../core/tool-policy.js';
import type { Events, Intake, Presence, Queries, Spawns, Waits } from '../ports/gateway.js';
import type { BoardTaskRecord } from '../ports/index.js';
import { ProgressReporter } from './progress.js';

/** What the MCP server asks of the door. */
export type McpGateway = Pick<Presence, 'config' | 'agents' | 'redact'> &
  Pick<Intake, 'send'> &
  Pick<Waits, 'waitForInput' | 'durable'> &
  Pick<Queries, 'history' | 'listSessions' | 'getSubagent'> &
  Pick<Events, 'subscribe' | 'watchDeltas'> &
  Pick<Spawns, 'spawnAs' | 'waitSubagent'>;

export interface McpServerDeps {
  gateway: McpGateway;
  /** The task board's service, as the control API's board routes use it. */
  board: BoardService;
  /** This package's version, for the server's `serverInfo`. */
  version: string;
}

/** The channel of the MCP client's inputs: their provenance, reply route and session keys carry it. */
export const MCP_CHANNEL = 'mcp';

const idempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .optional()
  .describe(
    'Optional. Give the same key when you retry this call (after a timeout or a lost connection), with the same arguments: the retry is answered from the first call instead of doing the work twice. A key given again with other arguments is refused: use a new key for each new call.',
  );
const timeoutSeconds = z
  .number()
  .positive()
  .optional()
  .describe('How long to wait for the answer, in seconds (default and maximum: see the server instructions). On timeout the work goes on.');

/** The server for one serving unit (an HTTP request, a stdio connection), its tools and resources bound to the door. */
export function createSwitchboardMcpServer(deps: McpServerDeps): McpServer {
  const { gateway, board } = deps;
  const settings = (): McpServerConfig => gateway.config.mcpServer;
  const caller = () => settings().caller;
  /** The caller's own session with an agent: where its messages by agent id go, and where its spawns hang from. */
  const callerSession = (agentId: string) => `agent:${agentId}:${MCP_CHANNEL}:direct:${caller()}`;
  const actor = (): BoardActor => ({ kind: 'user', name: `${MCP_CHANNEL}:${caller()}` });
  const server = new McpServer(
    { name: 'switchboard', version: deps.version },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: `Switchboard is a gateway that hosts AI agents. Use list_agents to see them, send_message to talk to one and get its answer, spawn_subagent to hand one a task, and the board_* tools for the shared task board. Waits default to ${settings().defaultWaitSeconds}s and may be up to ${settings().maxWaitSeconds}s (timeoutSeconds).`,
    },
  );

  /** The agents this caller may reach, or a refusal that lists them. */
  const reachable = () => gateway.agents.list().filter((agent) => matchesAny(agent.config.id, settings().agents));
  const checkAgent = (agentId: string) => {
    const ids = reachable().map((agent) => agent.config.id);
    if (!ids.includes(agentId)) {
      throw new SwitchboardError(
        'AGENT_NOT_FOUND',
        `unknown agent "${agentId}": the agents you can reach are ${ids.join(', ') || '(none: mcpServer.agents matches no configured agent)'}; call list_agents to see them`,
        { agentId },
      );
    }
  };
  /**
   * A board assignee, or a claim's assignee filter, that names an agent of this gateway: one the caller may reach, or
   * the board would get around `mcpServer.agents` (the dispatcher runs the agent a task is for; a claim takes its tasks).
   */
  const checkAssignee = (assignee: string | undefined) => {
    if (assignee !== undefined && gateway.agents.has(assignee)) checkAgent(assignee);
  };
  /** An agent id or a session key of a reachable agent. */
  const checkTarget = (target: string) => {
    if (!target.startsWith('agent:')) return checkAgent(target);
    const parsed = parseSessionKey(target);
    if (!parsed)
      throw new SwitchboardError(
        'SESSION_NOT_FOUND',
        `"${target}" is not a session key (agent:<agentId>:main, agent:<agentId>:<channel>:direct:<peer>, ...); pass an agent id instead to talk in your own session with it`,
      );
    checkAgent(parsed.agentId);
  };
  const waitMs = (given: number | undefined) => {
    const { defaultWaitSeconds, maxWaitSeconds } = settings();
    if (given !== undefined && given > maxWaitSeconds)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        `timeoutSeconds is ${given}; the most this server waits is ${maxWaitSeconds} (mcpServer.maxWaitSeconds): ask for less, and call again with the same idempotencyKey to keep waiting`,
      );
    return (given ?? defaultWaitSeconds) * 1000;
  };
  /** Runs a tool's work; a refusal or failure becomes a tool error the model can read and act on. */
  const tool =
    <A>(work: (args: A, ctx: ServerContext) => Promise<unknown>) =>
    async (args: A, ctx: ServerContext): Promise<CallToolResult> => {
      try {
        return answer(await work(args, ctx));
      } catch (error) {
        if (error instanceof ToolFailure) return { isError: true, content: [{ type: 'text', text: error.message }] };
        const failure = toSwitchboardError(error);
        const message = failure.code === 'INTERNAL' ? gateway.redact(failure.message) : failure.message;
        return { isError: true, content: [{ type: 'text', text: `${failure.code}: ${message}` }] };
      }
    };

  server.registerTool(
    'list_agents',
    {
      title: 'List agents',
      description:
        'The agents of this Switchboard gateway you can talk to: their ids (pass one to send_message or spawn_subagent), names and models.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
    },
    tool(async () => ({
      agents: reachable().map((agent) => ({
        id: agent.config.id,
        name: agent.config.identity?.name ?? null,
        description: agent.config.a2a?.description ?? null,
        model: agent.model,
        default: agent.config.id === gateway.agents.defaultAgent().config.id,
      })),
    })),
  );

  server.registerTool(
    'send_message',
    {
      title: 'Send a message to an agent and wait for its answer',
      description:
        'Sends a message to an agent (by id: your own conversation with it, which keeps its history) or to a session (by session key), and waits for the reply. Reports progress while the agent works. On timeout the agent keeps working: call again with the same idempotencyKey to wait for the same answer.',
      inputSchema: z.object({
        agent: z.string().min(1).describe('An agent id from list_agents, or a session key (agent:<agentId>:...).'),
        message: z.string().min(1).describe('What to say.'),
        timeoutSeconds,
        idempotencyKey,
      }),
    },
    tool(async (args: { agent: string; message: string; timeoutSeconds?: number; idempotencyKey?: string }, ctx) => {
      checkTarget(args.agent);
      const timeoutMs = waitMs(args.timeoutSeconds);
      // Listening before the message goes in, so that its run's first events are reported too.
      const progress = new ProgressReporter(gateway, ctx, args.agent.startsWith('agent:') ? args.agent : callerSession(args.agent));
      try {
        const sent = await gateway.send({
          target: args.agent,
          message: args.message,
          // One input per key, scoped to this caller (the intake scopes it to the session too).
          idempotencyKey: args.idempotencyKey === undefined ? undefined : `${MCP_CHANNEL}:${caller()}:${args.idempotencyKey}`,
          inbound: { channel: MCP_CHANNEL, peer: caller() },
          waiting: true,
        });
        // A key names one message: given again with another, the old answer would pass for the new message's.
        if (!sent.created && sent.input.text !== args.message)
          throw keyReused(args.idempotencyKey!, `the message that is input ${sent.input.id} in ${sent.sessionKey}`);
        // A client that went away stops the wait (its run goes on); nobody reads the answer then.
        const result = await Promise.race([
          gateway.waitForInput(sent.input.id, timeoutMs, sent.created),
          aborted(ctx.mcpReq.signal, { status: 'timeout' as const, input: sent.input }),
        ]);
        if (result.status !== 'completed') await gateway.durable();
        const base = { sessionKey: sent.sessionKey, inputId: sent.input.id, repeated: !sent.created };
        switch (result.status) {
          case 'completed':
            if (result.run.status !== 'succeeded')
              throw new ToolFailure(
                `the agent's run ended ${result.run.status}${result.run.errorMessage ? `: ${result.run.errorMessage}` : ''} (run ${result.run.id}); read ${transcriptUri(sent.sessionKey)} for what it did, and send again`,
              );
            return { ...base, status: 'ok', reply: result.reply ?? '', runId: result.run.id };
          case 'stored':
            return { ...base, status: 'stored', note: 'the message was stored in the session without a run (queue mode notify)' };
          case 'dropped':
            throw new SwitchboardError('INVALID_REQUEST', `the message was dropped: ${result.input.note ?? 'no reason given'}`);
          case 'timeout':
            return {
              ...base,
              status: 'timeout',
              note: `no answer within ${timeoutMs / 1000}s; the agent is still working. Call send_message again with the same idempotencyKey to wait for this answer, or read ${transcriptUri(sent.sessionKey)}`,
            };
        }
      } finally {
        progress.stop();
      }
    }),
  );

  server.registerTool(
    'spawn_subagent',
    {
      title: 'Spawn a sub-agent and wait for its result',
      description:
        "Hands a task to a new sub-agent (a fresh session of the agent, with no history) and waits for its result. It is spawned from your conversation with `agent` (that agent's spawn policy applies) and may be another agent (`subagentAgent`). Reports progress while it works. On timeout it keeps working: call again with the same idempotencyKey to wait for it.",
      inputSchema: z.object({
        agent: z.string().min(1).describe('The agent (id from list_agents) whose conversation with you spawns the sub-agent.'),
        task: z.string().min(1).describe('The task, complete: the sub-agent sees nothing else.'),
        subagentAgent: z.string().min(1).optional().describe('Run the task as this agent instead (its spawn allowlist must allow it).'),
        label: z.string().min(1).max(200).optional().describe('A short name for the sub-agent, shown in listings.'),
        timeoutSeconds,
        idempotencyKey,
      }),
    },
    tool(
      async (
        args: { agent: string; task: string; subagentAgent?: string; label?: string; timeoutSeconds?: number; idempotencyKey?: string },
        ctx,
      ) => {
        checkAgent(args.agent);
        if (args.subagentAgent) checkAgent(args.subagentAgent);
        const timeoutMs = waitMs(args.timeoutSeconds);
        const spawned = await gateway.spawnAs(callerSession(args.agent), {
          task: args.task,
          ...(args.subagentAgent ? { agentId: args.subagentAgent } : {}),
          ...(args.label ? { label: args.label } : {}),
          correlationId: `${MCP_CHANNEL}:${caller()}:${args.idempotencyKey ?? randomUUID()}`,
        });
        if (spawned.existing) {
          const { record } = await gateway.getSubagent(spawned.handle.subagentId);
          if (record.task !== args.task || record.agentId !== (args.subagentAgent ?? args.agent) || record.label !== (args.label ?? null))
            throw keyReused(
              args.idempotencyKey!,
              `sub-agent ${record.id} (${record.sessionKey}), spawned with another task, agent or label`,
            );
        }
        const progress = new ProgressReporter(gateway, ctx, spawned.childSessionKey);
        try {
          const waited = await gateway.waitSubagent(spawned.handle.subagentId, timeoutMs, ctx.mcpReq.signal);
          const base = {
            subagentId: spawned.handle.subagentId,
            sessionKey: spawned.childSessionKey,
            state: waited.view.state,
            repeated: spawned.existing === true,
          };
          if (waited.status === 'timeout')
            return {
              ...base,
              status: 'timeout',
              note: `no result within ${timeoutMs / 1000}s; the sub-agent is still working. Call spawn_subagent again with the same idempotencyKey to wait for it`,
            };
          if (waited.status !== 'ok')
            throw new ToolFailure(
              `the sub-agent ended ${waited.view.state}${waited.view.diagnostic ? `: ${waited.view.diagnostic}` : ''}; read ${transcriptUri(spawned.childSessionKey)} for what it did`,
            );
          return { ...base, status: 'ok', result: waited.result ?? '' };
        } finally {
          progress.stop();
        }
      },
    ),
  );

  server.registerTool(
    'board_create_task',
    {
      title: 'Create a board task',
      description:
        "Adds a task to Switchboard's shared task board. With an assignee that is an agent, the gateway hands it to that agent; otherwise a worker (you, with board_claim_task) takes it.",
      inputSchema: z.object({
        title: z.string().min(1).max(512),
        body: z.string().max(65_536).optional().describe('The details: what done looks like.'),
        assignee: z.string().min(1).max(256).optional().describe('An agent id, or a worker name.'),
        board: z.string().min(1).max(64).optional().describe('Which board (default "default").'),
        priority: z.number().int().min(-1000).max(1000).optional(),
        dependsOn: z.array(z.string().min(1)).max(100).optional().describe('Task ids that must be done first.'),
        idempotencyKey,
      }),
    },
    tool(async (args: { idempotencyKey?: string } & Parameters<BoardService['create']>[0]) => {
      const { idempotencyKey: key, ...task } = args;
      checkAssignee(task.assignee ?? undefined);
      const made = await board.create(
        { ...task, ...(key === undefined ? {} : { idempotencyKey: `${MCP_CHANNEL}:${caller()}:${key}` }) },
        actor(),
      );
      if (!made.created && key !== undefined && !sameTask(made.task, task))
        throw keyReused(key, `task ${made.task.id} ("${made.task.title}"), created with another title, body, assignee, board or priority`);
      return { task: made.task, created: made.created, ...(made.warning ? { warning: made.warning } : {}) };
    }),
  );

  server.registerTool(
    'board_claim_task',
    {
      title: 'Claim a board task',
      description:
        'Takes the best ready task (or the one named by taskId) to work on yourself. Answers the task and a claim token; finish with board_complete_task and that token before the claim expires. Answers {"claim": null} when no task is ready.',
      inputSchema: z.object({
        taskId: z.string().min(1).optional(),
        board: z.string().min(1).max(64).optional(),
        assignee: z.string().min(1).max(256).optional().describe('Only tasks for this assignee.'),
        ttlSeconds: z.number().int().min(1).max(86_400).optional().describe('How long the claim lasts.'),
      }),
    },
    tool(async (args: { taskId?: string; board?: string; assignee?: string; ttlSeconds?: number }) => {
      checkAssignee(args.assignee);
      const claimed = await board.claim({ worker: `${MCP_CHANNEL}:${caller()}`, ...args });
      return claimed ? { claim: claimed.claim, task: claimed.view } : { claim: null };
    }),
  );

  server.registerTool(
    'board_complete_task',
    {
      title: 'Complete a claimed board task',
      description: 'Marks a task you claimed done, with its result. Pass the token board_claim_task gave you.',
      inputSchema: z.object({
        taskId: z.string().min(1),
        token: z.number().int().min(1).describe("The claim's token, from board_claim_task."),
        result: z.string().max(1_000_000).describe('What was done: the answer others read.'),
        summary: z.string().max(4096).optional(),
      }),
    },
    tool(async (args: { taskId: string; token: number; result: string; summary?: string }) => ({
      task: await board.complete(args.taskId, args.token, args.result, { summary: args.summary }),
    })),
  );

  server.registerResource(
    'session-transcript',
    new ResourceTemplate('switchboard://sessions/{key}/transcript', {
      list: async () => {
        const sessions = await gateway.listSessions({ limit: 50 });
        const allowed = settings().agents;
        return {
          resources: sessions
            .filter((session) => matchesAny(session.agentId, allowed))
            .map((session) => ({ uri: transcriptUri(session.key), name: `${session.key} transcript`, mimeType: 'application/json' })),
        };
      },
    }),
    {
      title: "A session's transcript",
      description: "The newest messages of a session (its key percent-encoded in the URI): who said what, with each input's provenance.",
      mimeType: 'application/json',
    },
    async (uri, variables) => {
      // An agent id stands for the caller's own session with that agent.
      const given = decodeURIComponent(String(variables.key));
      checkTarget(given);
      const key = given.startsWith('agent:') ? given : callerSession(given);
      const entries = await gateway.history(key, settings().transcriptLimit);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ sessionKey: key, entries }, null, 2) }] };
    },
  );

  server.registerResource(
    'board-task',
    new ResourceTemplate('switchboard://board/tasks/{id}', { list: undefined }),
    {
      title: 'A board task',
      description: "A board task's state: its fields, what it depends on, its comments and attempts.",
      mimeType: 'application/json',
    },
    async (uri, variables) => {
      const view = await board.view(decodeURIComponent(String(variables.id)), actor());
      // A task for an agent this caller may not reach is not this caller's to read (its body, result and comments).
      checkAssignee(view.task.assignee ?? undefined);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(view, null, 2) }] };
    },
  );
  return server;
}

/** Resolves with `value` once `signal` aborts (never, if it does not). */
function aborted<T>(signal: AbortSignal, value: T): Promise<T> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(value);
    else signal.addEventListener('abort', () => resolve(value), { once: true });
  });
}

/** A key given again with other arguments: refused, so that a new call is never answered with an earlier one's result. */
function keyReused(key: string, first: string): SwitchboardError {
  return new SwitchboardError(
    'IDEMPOTENCY_KEY_REUSED',
    `idempotencyKey "${key}" was already used for ${first}; a key names one call: give a new key for a new call, and the same key with the same arguments only to retry`,
    { idempotencyKey: key },
  );
}

/** Whether a task found by its idempotency key is the one this call asks for (the fields a task record keeps). */
function sameTask(
  task: BoardTaskRecord,
  asked: { title: string; body?: string; assignee?: string | null; board?: string; priority?: number },
): boolean {
  return (
    task.title === asked.title.trim() &&
    task.body === (asked.body ?? '') &&
    task.assignee === (asked.assignee || null) &&
    task.board === (asked.board ?? 'default') &&
    task.priority === (asked.priority ?? 0)
  );
}

/** A run or a sub-agent that ended badly: the tool's error is this text, which says where to look. */
class ToolFailure extends Error {}

export function transcriptUri(sessionKey: string): string {
  return `switchboard://sessions/${encodeURIComponent(sessionKey)}/transcript`;
}

/** A tool's answer: its JSON as text (what every client shows the model) and as structured content. */
function answer(value: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent: value as Record<string, unknown>,
  };
}
