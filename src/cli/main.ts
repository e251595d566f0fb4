#!/usr/bin/env node
/** The `switchboard` command. Every command takes --json; errors print one line and exit non-zero. */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { loadConfigFile, resolveConfigPath } from '../config/load.js';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import { DataDir } from '../gateway/data-dir.js';
import type { A2ATaskEventRecord, A2ATaskRecord, EventRecord, InputRecord, OutboxRecord, RunRecord, SessionRecord, TranscriptEntry } from '../ports.js';
import { ControlClient, resolveClientTarget } from './client.js';
import { addAgent, bindAgent, deleteAgent, setIdentity, unbindAgent } from './config-edits.js';
import { ago, contentText, describeEvent, table } from './format.js';

interface GlobalOptions {
  config?: string;
  url?: string;
  json?: boolean;
}

const program = new Command();
program
  .name('switchboard')
  .description('A durable gateway for multi-agent collaboration')
  .option('-c, --config <file>', 'config file (default: $SWITCHBOARD_CONFIG or ./switchboard.json5)')
  .option('--url <url>', 'control API URL (default: the running gateway from the data directory)')
  .option('--json', 'print JSON instead of text')
  .showHelpAfterError('(add --help for usage)');

const globals = (): GlobalOptions => program.opts<GlobalOptions>();
const configPath = () => resolveConfigPath(globals().config);
const client = () => new ControlClient(resolveClientTarget(configPath(), globals().url));

/** `--limit` values: a whole number of at least 1, or the command stops with the reason. */
function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got "${value}"`);
  return limit;
}

function parseSeq(value: string): number {
  const seq = Number(value);
  if (!Number.isInteger(seq) || seq < 0) throw new InvalidArgumentError(`expected an event sequence number (0 or more), got "${value}"`);
  return seq;
}

function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new InvalidArgumentError(`expected a positive number of seconds, got "${value}"`);
  return seconds;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError(`expected a port from 0 to 65535, got "${value}"`);
  return port;
}

function withQuery(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

function print(json: unknown, human: () => string): void {
  process.stdout.write(`${globals().json ? JSON.stringify(json, null, 2) : human()}\n`);
}

program
  .command('gateway')
  .description('start the gateway in the foreground (Ctrl-C stops it)')
  .option('-p, --port <port>', 'listen on this port instead of gateway.port (0 = any free port)', parsePort)
  .action(async (options: { port?: number }) => {
    // Loaded here so the other commands do not pay for the model SDKs at start-up.
    const { serveGateway } = await import('../app.js');
    const running = await serveGateway({ configPath: configPath(), port: options.port });
    const { gateway } = running;
    const recovered = gateway.lastRecovery;
    print({ url: running.url, gatewayId: gateway.gatewayId, agents: gateway.status().agents, readyMs: running.readyMs, recovered }, () =>
      [
        `Switchboard gateway ${gateway.gatewayId} listening on ${running.url} (ready in ${Math.round(running.readyMs)} ms)`,
        `  agents:   ${gateway.status().agents.join(', ')}`,
        `  data:     ${running.dataDir.path}`,
        `  token:    run "npx switchboard token" to print it`,
        recovered.interruptedRuns.length ? `  recovered ${recovered.interruptedRuns.length} interrupted run(s); requeued ${recovered.requeuedInputs.length} input(s)` : '',
        `Try: npx switchboard chat ${gateway.agents.defaultAgent().config.id}`,
      ]
        .filter(Boolean)
        .join('\n'),
    );
    const shutdown = (signal: string) => {
      process.stderr.write(`\n${signal}: stopping the gateway...\n`);
      running.stop().then(
        () => process.exit(0),
        (error) => {
          process.stderr.write(`error while stopping: ${errorMessage(error)}\n`);
          process.exit(1);
        },
      );
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });

program
  .command('status')
  .description('show the running gateway: lanes, active runs, recovery')
  .action(async () => {
    const status = await client().request<ReturnType<import('../gateway/gateway.js').Gateway['status']>>('GET', '/v1/status');
    print(status, () =>
      [
        `gateway ${status.gatewayId}, up ${Math.round(status.uptimeMs / 1000)}s`,
        `agents: ${status.agents.join(', ')}`,
        `lanes: main ${status.lanes.main.active}/${status.lanes.main.max} active, ${status.lanes.main.waiting} waiting; subagent ${status.lanes.subagent.active}/${status.lanes.subagent.max} active, ${status.lanes.subagent.waiting} waiting`,
        `active runs: ${status.activeRuns.length ? status.activeRuns.map((run) => `${run.runId} on ${run.sessionKey}`).join(', ') : 'none'}`,
        `stalled lanes: ${status.stalledLanes.length ? status.stalledLanes.map((stall) => stall.sessionKey).join(', ') : 'none'}`,
        `last recovery: ${status.lastRecovery.interruptedRuns.length} interrupted run(s), ${status.lastRecovery.requeuedInputs.length} requeued, ${status.lastRecovery.droppedInputs.length} dropped input(s)`,
      ].join('\n'),
    );
  });

program
  .command('token')
  .description('print the control API bearer token')
  .action(() => {
    const { dataDir } = loadConfigFile(configPath());
    const token = new DataDir(dataDir).ensure().token();
    print({ token }, () => token);
  });

const agents = program.command('agents').description('list and edit agents in the config file');
agents
  .command('list')
  .description('agents in the config file')
  .action(() => {
    const { config } = loadConfigFile(configPath());
    const rows = config.agents.list.map((agent) => ({
      id: agent.id,
      name: agent.identity?.name ?? agent.name ?? null,
      model: agent.model ?? config.agents.defaults.model ?? null,
      bindings: config.bindings.filter((b) => b.agentId === agent.id).map((b) => [b.match.channel, b.match.account, b.match.peer].filter(Boolean).join('/')).join(', ') || null,
    }));
    print({ agents: rows }, () => table(rows, ['id', 'name', 'model', 'bindings']));
  });
const restartNote = 'restart the gateway to apply';
agents
  .command('add <id>')
  .description('add an agent to the config file')
  .option('--name <name>')
  .option('--model <provider/model>')
  .option('--workspace <dir>')
  .action((id: string, options: { name?: string; model?: string; workspace?: string }) => {
    addAgent(configPath(), { id, ...options });
    print({ added: id }, () => `added agent "${id}" to ${configPath()}; ${restartNote}`);
  });
agents
  .command('delete <id>')
  .description('remove an agent (and its bindings) from the config file')
  .action((id: string) => {
    deleteAgent(configPath(), id);
    print({ deleted: id }, () => `deleted agent "${id}" from ${configPath()}; ${restartNote}`);
  });
agents
  .command('bind <id>')
  .description('route a channel (optionally one account or peer) to an agent')
  .requiredOption('--channel <channel>')
  .option('--account <account>')
  .option('--peer <peer>')
  .action((id: string, options: { channel: string; account?: string; peer?: string }) => {
    bindAgent(configPath(), id, options);
    print({ bound: id, match: options }, () => `bound channel "${options.channel}" to "${id}"; ${restartNote}`);
  });
agents
  .command('unbind <id>')
  .description("remove an agent's bindings (only one channel's with --channel)")
  .option('--channel <channel>')
  .action((id: string, options: { channel?: string }) => {
    const removed = unbindAgent(configPath(), id, options.channel);
    print({ unbound: id, removed }, () => `removed ${removed} binding(s) of "${id}"${removed ? `; ${restartNote}` : ''}`);
  });
agents
  .command('set-identity <id>')
  .description("set an agent's identity (name, emoji, theme, avatar)")
  .option('--name <name>')
  .option('--emoji <emoji>')
  .option('--theme <theme>')
  .option('--avatar <avatar>')
  .action((id: string, options: { name?: string; emoji?: string; theme?: string; avatar?: string }) => {
    if (Object.keys(options).length === 0) throw new SwitchboardError('INVALID_REQUEST', 'give at least one of --name, --emoji, --theme, --avatar');
    setIdentity(configPath(), id, options);
    print({ updated: id, identity: options }, () => `updated the identity of "${id}"; ${restartNote}`);
  });

const sessions = program.command('sessions').description('inspect sessions');
sessions
  .command('list')
  .option('--agent <id>', 'only this agent')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { agent?: string; limit?: number }) => {
    const { sessions: rows } = await client().request<{ sessions: SessionRecord[] }>('GET', withQuery('/v1/sessions', { agentId: options.agent, limit: options.limit }));
    print({ sessions: rows }, () =>
      table(
        rows.map((s) => ({ key: s.key, agent: s.agentId, state: s.state, route: s.route ? s.route.channel : null, updated: ago(s.updatedAt) })),
        ['key', 'agent', 'state', 'route', 'updated'],
      ),
    );
  });
sessions
  .command('history <key>')
  .option('--limit <n>', 'the last n entries', parseLimit)
  .action(async (key: string, options: { limit?: number }) => {
    const { entries } = await client().request<{ entries: TranscriptEntry[] }>('GET', withQuery(`/v1/sessions/${encodeURIComponent(key)}/history`, { limit: options.limit }));
    print({ entries }, () =>
      entries.length === 0
        ? '(no messages yet)'
        : entries
            .map((entry) => {
              const from = entry.provenance && entry.provenance.kind !== 'user' ? ` (${entry.provenance.kind}${entry.provenance.sourceAgent ? ` from ${entry.provenance.sourceAgent}` : ''})` : '';
              return `${new Date(entry.createdAt).toISOString().slice(11, 19)} ${entry.role}${from}: ${contentText(entry.content)}`;
            })
            .join('\n'),
    );
  });
sessions
  .command('show <key>')
  .action(async (key: string) => {
    const shown = await client().request<{ session: SessionRecord; recentRuns: RunRecord[]; queuedInputs: number }>('GET', `/v1/sessions/${encodeURIComponent(key)}`);
    print(shown, () =>
      [
        `session ${shown.session.key}`,
        `  agent:  ${shown.session.agentId}`,
        `  state:  ${shown.session.state}, ${shown.queuedInputs} queued input(s)`,
        `  route:  ${shown.session.route ? JSON.stringify(shown.session.route) : '-'}`,
        `  parent: ${shown.session.parentKey ?? '-'}`,
        `  created ${ago(shown.session.createdAt)}, updated ${ago(shown.session.updatedAt)}`,
        'recent runs:',
        table(shown.recentRuns.map(runRow), ['id', 'status', 'started', 'ms', 'calls', 'text']),
      ].join('\n'),
    );
  });

sessions
  .command('tail <key>')
  .description("follow a session's events live (Ctrl-C ends)")
  .option('--after <seq>', 'first replay the events after this sequence number (0 = all of them)', parseSeq)
  .option('--deltas', 'also print the model text as it streams')
  .action(async (key: string, options: { after?: number; deltas?: boolean }) => {
    const query = withQuery('/v1/events', { sessionKey: key, after: options.after, deltas: options.deltas ? 1 : undefined });
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    await client().stream(
      query,
      (event) => {
        if (event.event === 'delta') {
          const delta = JSON.parse(event.data) as { text: string };
          if (!globals().json) process.stdout.write(delta.text);
          else console.log(event.data);
          return;
        }
        const record = JSON.parse(event.data) as EventRecord;
        console.log(globals().json ? event.data : describeEvent(record));
      },
      stop.signal,
    );
  });

function runRow(run: RunRecord) {
  return { id: run.id, session: run.sessionKey, status: run.status, started: ago(run.startedAt), ms: run.endedAt ? run.endedAt - run.startedAt : null, calls: run.usage.modelCalls, text: run.finalText ?? run.errorMessage };
}

/** Longest wait one HTTP request of the CLI makes (Node's fetch stops waiting for headers after 300 s). */
const MAX_WAIT_PER_REQUEST_S = 240;

interface SendResponse {
  status: 'accepted' | 'ok' | 'stored' | 'dropped' | 'timeout' | 'error';
  inputId: string;
  sessionKey: string;
  created?: boolean;
  reply?: string | null;
  runId?: string | null;
  runStatus?: string;
  error?: string | null;
  /** Sends with --from explain themselves. */
  note?: string;
}

function describeSend(result: SendResponse): string {
  if (result.note && (result.status === 'accepted' || result.status === 'timeout')) return `${result.status}: input ${result.inputId} for ${result.sessionKey}: ${result.note}`;
  switch (result.status) {
    case 'error':
      return `the reply failed: ${result.error}`;
    case 'ok':
      return result.runStatus === undefined || result.runStatus === 'succeeded' ? (result.reply ?? '(no reply)') : `run ${result.runId} ${result.runStatus}: ${result.error ?? 'no detail'}`;
    case 'accepted':
      return `accepted input ${result.inputId} for ${result.sessionKey}${result.created ? '' : ' (duplicate idempotency key: the earlier input stands)'}`;
    case 'stored':
      return `stored in ${result.sessionKey} without starting a run (mode notify)`;
    case 'dropped':
      return `input ${result.inputId} was dropped: ${result.error}`;
    case 'timeout':
      return `no reply yet; input ${result.inputId} is delivered and will still be processed (follow it with "switchboard sessions history ${result.sessionKey}")`;
  }
}

program
  .command('send <target> <message>')
  .description('send a message to an agent (its main session) or a session key')
  .option('--from <sessionKey>', 'send as this agent session, with the checks its sessions_send tool meets')
  .option('-w, --wait', 'wait for the reply')
  .addOption(new Option('-m, --mode <mode>', 'queue mode when the session is busy').choices([...QUEUE_MODES]))
  .option('-t, --timeout <seconds>', 'how long --wait waits', parseSeconds)
  .option('--idempotency-key <key>', 'send the same key again and the message is accepted once')
  .action(async (target: string, message: string, options: { from?: string; wait?: boolean; mode?: string; timeout?: number; idempotencyKey?: string }) => {
    // Every send carries a key, so that sending again after a lost connection cannot duplicate it.
    const idempotencyKey = options.idempotencyKey ?? `cli:${randomUUID()}`;
    const api = client();
    const sendOnce = (timeoutSeconds?: number) =>
      api
        .request<SendResponse>('POST', '/v1/send', {
          target,
          message,
          ...(options.from ? { from: options.from } : { channel: 'cli' }),
          idempotencyKey,
          ...(options.mode ? { mode: options.mode } : {}),
          ...(options.wait ? { wait: true } : {}),
          ...(timeoutSeconds ? { timeoutSeconds } : {}),
        })
        .catch((error: unknown) => {
          if (SwitchboardError.isInstance(error) && error.code === 'GATEWAY_UNREACHABLE' && error.details?.maybeDelivered && !options.idempotencyKey) {
            throw new SwitchboardError(error.code, `${error.message}; if it was accepted before the connection failed, send again with --idempotency-key ${idempotencyKey} to avoid a duplicate`);
          }
          throw error;
        });
    // HTTP clients give up on a response that takes minutes, so a long wait is several shorter ones: sending
    // again with the same idempotency key finds the same input and waits on.
    const deadline = Date.now() + (options.timeout ?? 0) * 1000;
    let result = await sendOnce(options.timeout ? Math.min(options.timeout, MAX_WAIT_PER_REQUEST_S) : undefined);
    while (options.wait && options.timeout && result.status === 'timeout' && deadline - Date.now() > 1000) {
      result = await sendOnce(Math.min((deadline - Date.now()) / 1000, MAX_WAIT_PER_REQUEST_S));
    }
    print(result, () => describeSend(result));
    const failed = result.status === 'error' || (result.status === 'ok' && result.runStatus !== undefined && result.runStatus !== 'succeeded');
    if (result.status === 'timeout' || result.status === 'dropped' || failed) process.exitCode = 1;
  });

program
  .command('chat <agent>')
  .description('talk with an agent interactively (Ctrl-D or /exit ends)')
  .action(async (agent: string) => {
    const api = client();
    const { agents: list } = await api.request<{ agents: { id: string; name: string | null }[] }>('GET', '/v1/agents');
    const found = list.find((candidate) => candidate.id === agent);
    if (!found) throw new SwitchboardError('AGENT_NOT_FOUND', `unknown agent "${agent}" (configured agents: ${list.map((a) => a.id).join(', ')})`);
    const sessionKey = `agent:${agent}:main`;
    // The reply streams in as the model writes it; the send's answer then closes the line.
    const streamedRuns = new Set<string>();
    const events = new AbortController();
    void api
      .stream(
        `/v1/events?sessionKey=${encodeURIComponent(sessionKey)}&deltas=1`,
        (event) => {
          if (event.event !== 'delta') return;
          const delta = JSON.parse(event.data) as { runId: string; text: string };
          if (!streamedRuns.has(delta.runId)) process.stdout.write(`${agent}> `);
          streamedRuns.add(delta.runId);
          process.stdout.write(delta.text);
        },
        events.signal,
      )
      .catch(() => {});
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
    process.stdout.write(`chatting with ${found.name ?? found.id} (session ${sessionKey}). /exit to leave.\n`);
    const prompt = () => process.stdout.write('you> ');
    prompt();
    // Iterating (rather than rl.question) keeps lines that arrive while a reply is pending, as piped input does.
    for await (const line of rl) {
      if (line.trim() === '/exit') break;
      if (!line.trim()) {
        prompt();
        continue;
      }
      try {
        const result = await api.request<SendResponse>('POST', '/v1/send', { target: agent, message: line, channel: 'cli', wait: true });
        const streamed = !!result.runId && streamedRuns.has(result.runId);
        if (streamed) process.stdout.write('\n');
        if (!streamed || result.runStatus !== 'succeeded') process.stdout.write(`${agent}> ${describeSend(result)}\n`);
      } catch (error) {
        process.stdout.write(`error: ${errorMessage(error)}\n`);
      }
      prompt();
    }
    process.stdout.write('\n');
    rl.close();
    events.abort();
  });

const a2a = program.command('a2a').description('the A2A server: tasks peers gave this gateway');
const a2aTasks = a2a.command('tasks').description('A2A tasks and their replay logs');
a2aTasks
  .command('list')
  .option('--agent <id>', 'only tasks of this agent')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { agent?: string; limit?: number }) => {
    const { tasks } = await client().request<{ tasks: A2ATaskRecord[] }>('GET', withQuery('/v1/a2a/tasks', { agentId: options.agent, limit: options.limit }));
    print({ tasks }, () =>
      table(
        tasks.map((task) => ({ id: task.id, agent: task.agentId, peer: task.owner, state: task.state.replace('TASK_STATE_', '').toLowerCase(), active: ago(task.lastActivityAt), session: task.sessionKey })),
        ['id', 'agent', 'peer', 'state', 'active', 'session'],
      ),
    );
  });
a2aTasks
  .command('show <taskId>')
  .option('--events', 'print the replay log: every message, state change and push delivery attempt')
  .action(async (taskId: string, options: { events?: boolean }) => {
    const shown = await client().request<{ task: A2ATaskRecord; events: A2ATaskEventRecord[] }>('GET', `/v1/a2a/tasks/${encodeURIComponent(taskId)}`);
    print(options.events ? shown : { task: shown.task }, () => {
      const task = shown.task;
      const lines = [
        `task ${task.id}`,
        `  agent:   ${task.agentId} (session ${task.sessionKey ?? '-'})`,
        `  peer:    ${task.owner}`,
        `  context: ${task.contextId}`,
        `  state:   ${task.state}`,
        `  created ${ago(task.createdAt)}, last activity ${ago(task.lastActivityAt)}`,
      ];
      if (options.events) {
        lines.push('events:');
        for (const event of shown.events) lines.push(`  ${new Date(event.createdAt).toISOString()} ${event.type} ${JSON.stringify(event.detail)}`);
      }
      return lines.join('\n');
    });
  });

interface RunCompletions {
  sent: { parentSessionKey: string; outbox: { status: string; attempts: number; lastError: string | null }; input: { inputId: string; status: string; runId: string | null } | null }[];
  received: { inputId: string; childSessionKey: string }[];
}

interface SubagentRow {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  label: string | null;
  role: string;
  depth: number;
  state: string;
  waitingForSubagents: boolean;
  elapsedMs: number;
  tokens: { input: number; output: number };
  diagnostic: string | null;
}

const stateText = (row: SubagentRow) => `${row.state}${row.waitingForSubagents ? ' (waiting for its sub-agents)' : ''}`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The spawn tree below `root`, one line per sub-agent. */
function drawTree(root: string, rows: SubagentRow[]): string {
  const lines = [root];
  const walk = (parent: string, indent: string) => {
    const children = rows.filter((row) => row.parentSessionKey === parent);
    children.forEach((row, index) => {
      const last = index === children.length - 1;
      const name = row.label ? `"${row.label}"` : row.subagentId.slice(0, 8);
      lines.push(`${indent}${last ? '└─' : '├─'} ${name} [${row.role}] ${stateText(row)}, ${seconds(row.elapsedMs)}, ${row.tokens.input + row.tokens.output} tokens  ${row.childSessionKey}`);
      walk(row.childSessionKey, `${indent}${last ? '   ' : '│  '}`);
    });
  };
  walk(root, '');
  return lines.join('\n');
}

const subagents = program.command('subagents').description('sub-agents: what sessions spawned, their state and results');
subagents
  .command('list <sessionKey>')
  .description("a session's sub-agents")
  .option('--recursive', 'every descendant, not only its children')
  .action(async (key: string, options: { recursive?: boolean }) => {
    const { subagents: rows } = await client().request<{ subagents: SubagentRow[] }>('GET', withQuery('/v1/subagents', { sessionKey: key, recursive: options.recursive ? 'true' : undefined }));
    print({ subagents: rows }, () =>
      rows.length === 0
        ? '(no sub-agents)'
        : table(
            rows.map((row) => ({ session: row.childSessionKey, label: row.label, role: row.role, state: stateText(row), elapsed: seconds(row.elapsedMs), tokens: row.tokens.input + row.tokens.output })),
            ['session', 'label', 'role', 'state', 'elapsed', 'tokens'],
          ),
    );
  });
subagents
  .command('show <target>')
  .description('one sub-agent (by child session key or id): task, state history, result')
  .action(async (target: string) => {
    const shown = await client().request<SubagentRow & { task: string; tools: string[]; result: string | null; resultHash: string | null; history: { state: string; at: number; diagnostic?: string }[]; completion: string | null; runId: string | null; worktree: { path: string; branch: string } | null }>(
      'GET',
      `/v1/subagents/${encodeURIComponent(target)}`,
    );
    print(shown, () =>
      [
        `sub-agent ${shown.subagentId}${shown.label ? ` "${shown.label}"` : ''} (${shown.role}, depth ${shown.depth})`,
        `  session:  ${shown.childSessionKey}`,
        `  parent:   ${shown.parentSessionKey}`,
        `  state:    ${stateText(shown)}${shown.diagnostic ? ` - ${shown.diagnostic}` : ''}`,
        `  task:     ${shown.task}`,
        `  tools:    ${shown.tools.join(', ') || '-'}`,
        `  run:      ${shown.runId ?? '-'}; completion to parent: ${shown.completion ?? '-'}`,
        ...(shown.worktree ? [`  worktree: ${shown.worktree.path} (branch ${shown.worktree.branch})`] : []),
        '  history:',
        ...shown.history.map((step) => `    ${new Date(step.at).toISOString()} ${step.state}${step.diagnostic ? ` - ${step.diagnostic}` : ''}`),
        `  result:   ${shown.result ?? '-'}`,
        ...(shown.resultHash ? [`  sha256:   ${shown.resultHash}`] : []),
      ].join('\n'),
    );
  });
subagents
  .command('kill <target>')
  .description('cancel a sub-agent and all its descendants; its parent is told')
  .action(async (target: string) => {
    const { cancelled } = await client().request<{ cancelled: string[] }>('POST', `/v1/subagents/${encodeURIComponent(target)}/kill`);
    print({ cancelled }, () => (cancelled.length === 0 ? `${target} had already ended; nothing to cancel` : `cancelled ${cancelled.length}:\n${cancelled.join('\n')}`));
  });
subagents
  .command('tree <sessionKey>')
  .description('draw the spawn tree below a session, with states')
  .action(async (key: string) => {
    const { subagents: rows } = await client().request<{ subagents: SubagentRow[] }>('GET', withQuery('/v1/subagents', { sessionKey: key, recursive: 'true' }));
    print({ root: key, subagents: rows }, () => drawTree(key, rows));
  });

const runs = program.command('runs').description('inspect runs');
runs
  .command('list')
  .option('--session <key>', 'only this session')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { session?: string; limit?: number }) => {
    const { runs: rows } = await client().request<{ runs: RunRecord[] }>('GET', withQuery('/v1/runs', { sessionKey: options.session, limit: options.limit }));
    print({ runs: rows }, () => table(rows.map(runRow), ['id', 'session', 'status', 'started', 'ms', 'calls', 'text']));
  });
runs
  .command('show <id>')
  .action(async (id: string) => {
    const shown = await client().request<{ run: RunRecord; inputs: InputRecord[]; completions: RunCompletions }>('GET', `/v1/runs/${encodeURIComponent(id)}`);
    const { run, completions } = shown;
    print(shown, () =>
      [
        `run ${run.id} on ${run.sessionKey} (agent ${run.agentId}, model ${run.model})`,
        `  status:   ${run.status}${run.errorMessage ? ` - ${run.errorMessage}` : ''}`,
        `  started:  ${new Date(run.startedAt).toISOString()}${run.endedAt ? `, took ${run.endedAt - run.startedAt} ms` : ''}`,
        `  usage:    ${run.usage.modelCalls} model call(s), ${run.usage.steps} step(s), ${run.usage.inputTokens} tokens in, ${run.usage.outputTokens} out`,
        `  prompt:   ${run.promptChars} characters sent; framework's own ${run.preambleChars}`,
        `  inputs:   ${shown.inputs.map((input) => `${input.id} (${input.mode}, ${input.provenance.kind})`).join(', ') || '-'}`,
        `  reply:    ${run.finalText ?? '-'}`,
        ...completions.sent.map(
          (sent) =>
            `  completion to ${sent.parentSessionKey}: outbox ${sent.outbox.status} after ${sent.outbox.attempts} attempt(s)${sent.outbox.lastError ? ` (${sent.outbox.lastError})` : ''}; ${sent.input ? `input ${sent.input.inputId} ${sent.input.status}${sent.input.runId ? ` by run ${sent.input.runId}` : ''}` : 'not yet in the parent'}`,
        ),
        ...completions.received.map((received) => `  completion from ${received.childSessionKey} (input ${received.inputId})`),
      ].join('\n'),
    );
  });
runs
  .command('cancel <id>')
  .action(async (id: string) => {
    const { cancelled } = await client().request<{ cancelled: boolean }>('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`);
    print({ cancelled }, () => (cancelled ? `cancelled run ${id}` : `run ${id} is not active; nothing to cancel`));
  });

const outbox = program.command('outbox').description('deliveries the gateway owes: replies, completions, push notifications; retry or drop dead ones');
outbox
  .command('list')
  .description('outbox rows, oldest first')
  .option('--status <status>', 'only rows in this state: pending, delivered, dead or dropped', 'dead')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { status: string; limit?: number }) => {
    const { rows } = await client().request<{ rows: OutboxRecord[] }>('GET', withQuery('/v1/outbox', { status: options.status, limit: options.limit }));
    print({ rows }, () =>
      rows.length === 0
        ? `(no ${options.status} rows)`
        : table(
            rows.map((row) => ({ id: row.id, kind: row.kind, target: row.target, status: row.status, attempts: row.attempts, created: ago(row.createdAt), error: row.lastError ?? '' })),
            ['id', 'kind', 'target', 'status', 'attempts', 'created', 'error'],
          ),
    );
  });
for (const [action, description] of [
  ['retry', 'deliver a dead row again, from its first attempt'],
  ['drop', 'give up on a dead row for good (it stays listed as dropped)'],
] as const) {
  outbox
    .command(`${action} <id>`)
    .description(description)
    .action(async (id: string) => {
      const { row } = await client().request<{ row: OutboxRecord }>('POST', `/v1/outbox/${encodeURIComponent(id)}/${action}`);
      print({ row }, () => `${action === 'retry' ? 'retrying' : 'dropped'} ${row.kind} ${row.id} (to ${row.target})`);
    });
}

program.parseAsync(process.argv).catch((error: unknown) => {
  const code = SwitchboardError.isInstance(error) ? error.code : 'ERROR';
  if (globals().json) process.stderr.write(`${JSON.stringify({ error: { code, message: errorMessage(error) } })}\n`);
  else process.stderr.write(`switchboard: ${errorMessage(error)}\n`);
  process.exit(1);
});
