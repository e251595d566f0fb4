/**
 * The composition root: the one place that knows every part. It builds the store, the gateway with its
 * extensions (the tools agents get, the A2A client) and the fronts (control API, A2A server), and starts
 * a whole gateway process from a config file. Everything else depends downwards only.
 */
import { storedRevocations } from './console/console-auth.js';
import { ConsoleFront } from './console/console-front.js';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { A2AClientService, RESULT_KIND } from './a2a/client.js';
import { createA2AClientTools, requestInputTool } from './a2a/tools.js';
import { redactor, secretsOf } from './config/secrets.js';
import { configWarnings } from './config/warnings.js';
import { errorMessage } from './core/errors.js';
import type { ConfigReload } from './config/reload.js';
import { loadConfigFile } from './config/load.js';
import type { SwitchboardConfig } from './config/schema.js';
import { DataDir } from './kit/data-dir.js';
import { Gateway, type GatewayDeps, systemClock } from './gateway/gateway.js';
import type { GatewayParts } from './gateway/gateway-types.js';
import type { GatewayExtension } from './ports/extensions.js';
import { ControlApi } from './http/control-api.js';
import { createLogger } from './logging.js';
import { ModelRegistry } from './models/model-registry.js';
import type { Models } from './ports/models.js';
import { openStore, type OpenedStore, type StoreSelection } from './store/open/open-store.js';
import { a2aLinks } from './a2a/map-links.js';
import { boardLinks } from './board/map-links.js';
import { BoardService } from './board/board.js';
import { BoardDispatcher } from './board/dispatcher.js';
import { createBoardTools } from './board/board-tools.js';
import { BUILTIN_TOOLS } from './tools/builtin.js';
import { createExecTool } from './tools/exec-tool.js';
import { createSessionTools } from './gateway/messaging/session-tools.js';
import { createSubagentTools, spawnToolFor } from './gateway/subagents/subagent-tools.js';
import { McpService } from './mcp/mcp-tools.js';
import { MemoryService } from './memory/memory-service.js';
import type { MailboxService } from './mailbox/mailbox.js';
import type { Teams } from './mailbox/teams.js';
import type { ClaudeTeams } from './mailbox/claude-team.js';
import { mailboxFront } from './mailbox/front.js';
import { runtimesFront } from './runtimes/front.js';
import { type ChannelFront, channelsFront } from './channels/front.js';
import { schedulesFront } from './schedules/front.js';
import type { ScheduleRunner } from './schedules/schedule-runner.js';
import { openChildRecords } from './processes.js';
import { openTelemetry, type Telemetry } from './telemetry/telemetry.js';

/** What a caller of `startGateway` may want to hold on to: the A2A client, the board and its dispatcher. */
export interface StandardHooks {
  onClient?: (client: A2AClientService) => void;
  onBoard?: (board: BoardService, dispatcher: BoardDispatcher) => void;
  onMemory?: (memory: MemoryService) => void;
  onMailbox?: (mailbox: MailboxService) => void;
  onTeams?: (teams: Teams) => void;
  onClaude?: (claude: ClaudeTeams) => void;
  onChannels?: (channels: ChannelFront) => void;
  onSchedules?: (schedules: ScheduleRunner) => void;
}

/** The tools and services every gateway runs with: built-in, session, sub-agent and board tools, the A2A client and the board's dispatcher. */
export function standardExtensions(parts: GatewayParts, hooks: StandardHooks = {}): GatewayExtension[] {
  const { config } = parts;
  // What a front is built on: the gateway's shared parts without the store and the gateway's own objects, so that each
  // front holds only the store port handed to it below.
  const { store, messaging, subagents, accept, ...shared } = parts;
  const client = new A2AClientService({
    config,
    tasks: store.a2aTasks,
    runAlive: async (runId) => (await parts.api().runStatus(runId)) === 'running',
    clock: parts.clock,
    deliver: async (input) => void (await accept({ id: randomUUID(), ...input })),
    enqueue: (row) => parts.enqueueDelivery(row),
    log: parts.log,
    gatewayId: parts.gatewayId,
  });
  hooks.onClient?.(client);
  const board = new BoardService(store.board, parts.api, parts.clock);
  const front = mailboxFront(shared, store.mailbox, board, () => void dispatcher.kick(), systemClock);
  hooks.onMailbox?.(front.mailbox);
  hooks.onTeams?.(front.teams);
  hooks.onClaude?.(front.claude);
  const dispatcher = new BoardDispatcher({
    store: store.board,
    gateway: parts.api,
    clock: parts.clock,
    owner: parts.gatewayId,
    remote: client.boardWorkers,
    seats: () => front.teams.seats(),
    afterPass: () => front.teams.afterPass(),
    log: (_level, message) => parts.log(message),
  });
  board.onChange = () => void dispatcher.kick();
  hooks.onBoard?.(board, dispatcher);
  const calling = config.a2a.remoteAgents.length > 0 || config.a2a.client.allowUrls;
  const mcp = new McpService(config, { log: parts.log });
  const [, subagentsTool] = createSubagentTools(subagents, messaging);
  const memory = new MemoryService(config, {
    stores: { memory: store.memory, sessions: store.sessions, transcript: store.transcript },
    clock: parts.clock,
    log: parts.log,
  });
  // exec commands, runtime children and terminals, in one record; what a killed previous process left is ended now.
  const children = openChildRecords(parts.dataDir, parts.log);
  hooks.onMemory?.(memory);
  const channels = channelsFront(shared, store.channels);
  hooks.onChannels?.(channels);
  const schedules = schedulesFront(shared, store.schedules);
  hooks.onSchedules?.(schedules.runner);
  return [
    {
      tools: [...BUILTIN_TOOLS, createExecTool(config, children), ...createSessionTools(messaging), subagentsTool, requestInputTool],
      agentTools: spawnToolFor(config, subagents, messaging),
    },
    {
      tools: calling ? createA2AClientTools(client) : [],
      deliveries: { [RESULT_KIND]: (row) => client.deliverResult(row) },
      heldResults: client,
      afterRecovery: () => client.afterRecovery(),
      start: () => client.start(),
      stop: () => client.stop(),
    },
    {
      // A team's lead coordinates its board: it gets the board tools with the agents board.agents names.
      tools: createBoardTools(board, [...config.board.agents, ...config.teams.map((team) => team.lead)]),
      start: () => dispatcher.start(),
      stop: () => dispatcher.stop(),
    },
    // Only with servers configured (mcp.servers is not reloaded): a run's tools are gathered without asking it otherwise.
    Object.keys(config.mcp.servers).length > 0 ? { agentTools: (agentId: string) => mcp.toolsFor(agentId), stop: () => mcp.stop() } : {},
    { tools: config.memory.enabled ? memory.tools : [], start: () => memory.start(), stop: () => memory.stop() },
    ...front.extensions,
    runtimesFront(shared, children),
    channels.extension(),
    schedules.extension,
  ];
}

/** A gateway with the standard extensions (tests and benchmarks build theirs this way too). */
export async function startGateway(
  deps: Omit<GatewayDeps, 'extensions' | 'models'> & { models?: Models },
  hooks: StandardHooks = {},
): Promise<Gateway> {
  const models = deps.models ?? new ModelRegistry(deps.config.models.providers);
  return Gateway.start({ ...deps, models, extensions: (parts) => standardExtensions(parts, hooks) });
}

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  token: string;
  dataDir: DataDir;
  /** Milliseconds from the call to ready (store open, recovery done, API listening). */
  readyMs: number;
  /** Where the Agent Cards are, when the A2A server is on. */
  a2aCards: { agentId: string; url: string }[];
  /** Reads the config file again and applies what a running gateway can take (SIGHUP, `config reload`). */
  reloadConfig(): ConfigReload;
  stop(): Promise<void>;
}

export interface ServeOptions {
  configPath: string;
  /** Overrides gateway.port (0 picks a free port). */
  port?: number;
  /** Default: $SWITCHBOARD_LOG_LEVEL, else info. */
  logLevel?: string;
  /** `pretty` or `json`; default: $SWITCHBOARD_LOG_FORMAT, else pretty on a terminal. */
  logFormat?: string;
  /** Overrides store.url (and $SWITCHBOARD_STORE_URL): `--store <url>`. */
  storeUrl?: string;
  /** This build's version, for the gateways' registry. */
  version?: string;
}

/** The store the config names, with `--store` over $SWITCHBOARD_STORE_URL over store.url. */
export function storeSelection(config: SwitchboardConfig, defaultSqlitePath: string, flag?: string): StoreSelection {
  const env = process.env.SWITCHBOARD_STORE_URL || undefined;
  const [url, urlSource] = flag ? [flag, '--store'] : env ? [env, 'SWITCHBOARD_STORE_URL'] : [config.store.url, 'store.url'];
  return {
    driver: config.store.driver,
    url,
    urlSource,
    schema: config.store.schema,
    maxConnections: config.store.maxConnections,
    preparedStatements: config.store.preparedStatements,
    analyze: config.store.analyze,
    // A transaction left open by a gateway that hangs must not hold up the others' takeover beyond the lease.
    idleTransactionTimeoutMs: config.lanes.leaseTtlSeconds * 500,
    sqlite: {
      path: config.store.sqlite.path ?? defaultSqlitePath,
      synchronous: config.store.sqlite.synchronous,
      mmapBytes: config.store.sqlite.mmapMb * 1024 * 1024,
      exclusive: true,
    },
    sqliteThread: config.store.sqlite.thread,
  };
}

export async function serveGateway(options: ServeOptions): Promise<RunningGateway> {
  const started = performance.now();
  const { config, dataDir: dataPath, path: configPath } = loadConfigFile(options.configPath);
  const logger = createLogger({ level: options.logLevel, format: options.logFormat });
  // The AI SDK's warnings (unsupported settings and the like) go to the gateway's log, not the console.
  (globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = (options: {
    warnings: unknown[];
    provider: string;
    model: string;
  }) => logger.warn({ provider: options.provider, model: options.model, warnings: options.warnings }, 'model provider warning');
  for (const warning of configWarnings(config)) logger.warn({ config: configPath }, warning);
  const dataDir = new DataDir(dataPath).ensure();
  const unlock = dataDir.lock();
  let opened: OpenedStore;
  try {
    opened = await openStore({
      ...storeSelection(config, dataDir.databasePath, options.storeUrl),
      onBackgroundError: (error) => logger.warn(`store: ${errorMessage(error)}`),
      // A gateway that can store nothing more is of no use: it exits, so that its supervisor starts it again.
      onStoreStopped: (error) => {
        logger.fatal({ cause: errorMessage(error.cause ?? error) }, error.message);
        process.exit(1);
      },
    });
  } catch (error) {
    unlock();
    throw error;
  }
  const { store } = opened;
  if (opened.analyzing)
    logger.warn(
      'PostgreSQL: autovacuum is off on this server, so nothing analyzes the tables and the plans made while they were small would stay; the gateway analyzes its own tables as they change (store.analyze). Turn autovacuum on (docs/deploy.md)',
    );
  const gatewayId = dataDir.gatewayId();
  let client!: A2AClientService;
  // The log gets no secret either; a reload that brings new ones makes the redactor again.
  let redact = redactor(secretsOf(config));
  let telemetry: Telemetry;
  try {
    telemetry = await openTelemetry(config.telemetry, {
      gatewayId,
      version: options.version,
      warn: (message) => logger.warn(redact(message)),
      redact: (text) => redact(text),
    });
  } catch (error) {
    await store.close();
    unlock();
    throw error;
  }
  let board!: BoardService;
  let memory!: MemoryService;
  let teams!: Teams;
  let channels!: ChannelFront;
  let schedules!: ScheduleRunner;
  let gateway: Gateway;
  try {
    gateway = await startGateway(
      {
        config,
        store,
        clock: opened.clock,
        gatewayId,
        capabilitySecret: dataDir.capabilitySecret(),
        dataDir: dataDir.path,
        version: options.version,
        tracing: telemetry.tracing,
        log: (level, message, fields) => logger[level](redactFields(fields, redact), redact(message)),
      },
      {
        onClient: (made) => (client = made),
        onBoard: (made) => (board = made),
        onMemory: (made) => (memory = made),
        onTeams: (made) => (teams = made),
        onChannels: (made) => (channels = made),
        onSchedules: (made) => (schedules = made),
      },
    );
  } catch (error) {
    // Nothing of it is left running: the metrics listener, the store, the data directory's lock.
    await telemetry.shutdown();
    await store.close();
    unlock();
    throw error;
  }
  // Every gateway on the store answers to one control token (its first gateway's), so that a client behind a load
  // balancer needs one; the data directory keeps a copy for the CLI.
  const token = await store.gateways.sharedSecret('control-token', dataDir.token());
  if (token !== dataDir.readToken()) dataDir.writeToken(token);
  // The A2A front (the SDK's server and express) is loaded only when it is on: it is a tenth of the startup.
  const front = config.a2a.server.enabled
    ? // On the store's clock (the database's on PostgreSQL), as the gateway is: the stall rule and every time the A2A
      // server writes compare with what other gateways wrote.
      new (await import('./a2a/server.js')).A2AServer(gateway, store.a2aTasks, opened.clock, {
        error: (error) => logger.error({ error: String(error) }, 'a2a'),
        warn: (fields, message) => logger.warn(fields, message),
        info: (fields, message) => logger.info(fields, message),
      })
    : undefined;
  // The MCP server (docs/mcp-server.md): on by default, so its SDK is loaded at the first `/mcp` request, not at start.
  let mcpFront: Promise<import('./mcp-server/mcp-http.js').McpHttpFront> | undefined;
  const openMcp = () =>
    (mcpFront ??= import('./mcp-server/mcp-http.js').then(({ createMcpHttpFront }) =>
      createMcpHttpFront({ gateway, board, version: options.version ?? '0.0.0' }, (error) =>
        logger.warn({ error: redact(errorMessage(error)) }, 'mcp server'),
      ),
    ));
  const mcp = config.mcpServer.enabled
    ? {
        handle: async (request: IncomingMessage, response: ServerResponse) => (await openMcp()).handle(request, response),
        close: async () => {
          const front = await mcpFront?.catch(() => undefined);
          await front?.close();
        },
      }
    : undefined;
  const api = new ControlApi(gateway, {
    host: config.gateway.host,
    port: options.port ?? config.gateway.port,
    token,
    front,
    a2aTasks: store.a2aTasks,
    // The fronts' own hand-offs on the collaboration map, beside the gateway's.
    mapSources: [(window) => a2aLinks(store.a2aTasks, window), (window) => boardLinks(board, window)],
    board,
    memory,
    teams,
    channels,
    schedules,
    console: config.console.enabled ? new ConsoleFront(token, config.console.sessionHours, storedRevocations(store.gateways)) : undefined,
    a2aCallback: (taskId, secret) => client.receivePush(taskId, secret),
    reloadConfig: () => reloadConfig(),
    mcp,
    metrics: telemetry.metricsHandler,
    log: (level, message, fields) => logger[level](redactFields(fields, redact), redact(message)),
  });
  telemetry.attach({
    status: () => gateway.status(),
    outboxBacklog: () => gateway.outboxBacklog(),
    pendingApprovals: () => gateway.pendingApprovals(),
    budgetStatus: () => gateway.budgetStatus(),
    queuedSessions: () => store.sessions.listWithQueuedInputs(),
    a2aTasks: front ? (state) => store.a2aTasks.count({ states: [state] }) : undefined,
    now: () => (opened.clock ?? systemClock).now(),
  });
  // A file that does not load changes nothing: the error names each problem, and the running config stays.
  const reloadConfig = (): ConfigReload => {
    const { config: next } = loadConfigFile(configPath);
    for (const warning of configWarnings(next)) logger.warn({ config: configPath }, warning);
    const report = gateway.reloadConfig(next);
    redact = redactor(secretsOf(config));
    return report;
  };
  let url: string;
  try {
    url = await api.listen();
  } catch (error) {
    await gateway.stop();
    await telemetry.shutdown();
    await store.close();
    unlock();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new Error(
        `port ${options.port ?? config.gateway.port} on ${config.gateway.host} is already in use (is another gateway running? set gateway.port or pass --port)`,
      );
    }
    throw error;
  }
  client.setCallbackBase(config.a2a.client.callbackUrl ?? config.a2a.server.publicUrl ?? url);
  await gateway.listening(url);
  // The LAN is a convenience: a gateway whose advertising fails serves all the same, and says why peers will not find it.
  const advertised =
    front && config.a2a.server.mdns.enabled
      ? await front
          .advertise(url, (warning) => logger.warn({}, warning))
          .catch((error: unknown) => {
            logger.error(
              { error: errorMessage(error) },
              'a2a.server.mdns: could not advertise the agents on the LAN; peers will not discover them',
            );
            return undefined;
          })
      : undefined;
  dataDir.writeRuntime({ url, configPath, pid: process.pid, gatewayId, startedAt: Date.now() });
  let stopping: Promise<void> | undefined;
  return {
    gateway,
    url,
    token,
    dataDir,
    readyMs: performance.now() - started,
    a2aCards: front?.cardUrls(url) ?? [],
    reloadConfig,
    stop() {
      stopping ??= (async () => {
        // Goodbye on the LAN first, so peers stop finding an agent that is going.
        await advertised?.stop();
        // The gateway first: it ends pending waits, so the API's open requests can finish and it can close.
        await gateway.stop();
        await api.close();
        await telemetry.shutdown();
        await store.close();
        unlock();
      })();
      return stopping;
    },
  };
}

/** Log fields with every string in them redacted (a URL, an error, a header). */
function redactFields(fields: Record<string, unknown> | undefined, redact: (text: string) => string): Record<string, unknown> {
  if (!fields) return {};
  return JSON.parse(JSON.stringify(fields), (_key, value) => (typeof value === 'string' ? redact(value) : value)) as Record<
    string,
    unknown
  >;
}
