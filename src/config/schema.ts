/**
 * The configuration schema. Key names follow OpenClaw's (see the seeds) so their examples read naturally.
 * Defaults live on the keys; a missing section is `prefault({})`, parsed and so filled from those defaults.
 * Every key and its default is documented in docs/configuration.md.
 */
import { z } from 'zod';
import { QUEUE_MODES } from '../core/queue-mode.js';
import { agentMemory, execPolicy, mcpSection, memorySection } from './schema-tools.js';
import { acpSection, runtimesSection } from './schema-runtimes.js';
import { agentMailbox, mailboxSection, teamsSection } from './schema-mailbox.js';
import { headers, secretString } from './secret-schema.js';
import { a2aSection, a2aSkill } from './schema-a2a.js';
import { agentId, positiveInt } from './schema-common.js';
import { approvalsSection, budgetsSection } from './schema-gates.js';
import { telemetrySection } from './schema-telemetry.js';
import { channelsSection } from './schema-channels.js';
import { mcpServerSection } from './schema-mcp-server.js';
import { schedulesSection } from './schema-schedules.js';

export { ANONYMOUS_PEER, type A2APeerConfig } from './schema-a2a.js';

export { secretSchemas } from './secret-schema.js';

/** The data directory when the config names none: `.switchboard` beside the config file. */
export const DEFAULT_DATA_DIR = '.switchboard';

const modelRef = z.string().regex(/^[A-Za-z0-9_.-]+\/.+$/, { error: 'expected "<provider>/<model>", e.g. "openai/gpt-4o-mini"' });
const toolNames = z.array(z.string().min(1));
/**
 * A layer of the tool policy. `ask`: calls that need a person's approval first, each a tool pattern, or
 * `<tool pattern>:<subject pattern>` where the tool names a subject (docs/gates.md: exec's command line, a file tool's
 * path, an MCP tool's `readOnly`/`destructive`/`additive`, sessions_spawn's runtime, a2a_send's agent).
 */
const toolPolicy = z.strictObject({ allow: toolNames.optional(), deny: toolNames.optional(), ask: toolNames.optional() });
const queueMode = z.enum(QUEUE_MODES);

const spawnDepth = z.number().int().min(0).max(5);
const resultChars = z.number().int().min(1000).max(1_000_000);
const completionMode = z.enum(['steer', 'followup', 'collect', 'interrupt']);

/** Sub-agent limits for one agent; unset keys fall back to `agents.defaults.subagents`. */
const subagentLimits = z.strictObject({
  maxSpawnDepth: spawnDepth.optional(),
  maxChildrenPerAgent: positiveInt.optional(),
  runTimeoutSeconds: positiveInt.optional(),
  archiveAfterMinutes: positiveInt.optional(),
  allowAgents: z.array(z.string()).optional(),
  maxResultChars: resultChars.optional(),
  completionMode: completionMode.optional(),
  retryInterrupted: z.boolean().optional(),
  allowRuntimes: z.array(z.string()).optional(),
  /** The sub-agent layer of the tool policy: narrows what a spawned session of this agent may use. */
  tools: toolPolicy.optional(),
});

const subagentDefaults = z.strictObject({
  maxSpawnDepth: spawnDepth.default(1),
  maxChildrenPerAgent: positiveInt.default(5),
  /** The subagent lane's cap: runs of sub-agent sessions going at once; more wait in the lane. */
  maxConcurrent: positiveInt.default(8),
  runTimeoutSeconds: positiveInt.default(900),
  archiveAfterMinutes: positiveInt.default(60),
  allowAgents: z.array(z.string()).default([]),
  maxResultChars: resultChars.default(32_000),
  completionMode: completionMode.default('steer'),
  retryInterrupted: z.boolean().default(false),
  /** External runtimes (`acp:<name>`, `process:<name>`, `*` wildcards) this agent may spawn sub-agents on; none by default. */
  allowRuntimes: z.array(z.string()).default([]),
  tools: toolPolicy.default({}),
});

const identity = z.strictObject({
  name: z.string().optional(),
  emoji: z.string().optional(),
  theme: z.string().optional(),
  avatar: z.string().optional(),
});

const agentDefaults = z.strictObject({
  model: modelRef.optional(),
  workspace: z.string().optional(),
  maxSteps: positiveInt.default(16),
  historyLimit: z.number().int().min(0).default(200),
  timeoutSeconds: positiveInt.default(600),
  /**
   * `steps`: every model answer that asked for tools is committed before they run, and their results before the next
   * call, so a crashed run resumes at its last step (docs/delivery.md). `run`: only the run's end commits, and a
   * crashed run is run again from its first input.
   */
  durability: z.enum(['steps', 'run']).default('steps'),
  tools: toolPolicy.default({}),
  exec: execPolicy.default({}),
  subagents: subagentDefaults.prefault({}),
});

const agent = z.strictObject({
  id: agentId,
  name: z.string().optional(),
  default: z.boolean().optional(),
  identity: identity.optional(),
  workspace: z.string().optional(),
  model: modelRef.optional(),
  maxSteps: positiveInt.optional(),
  historyLimit: z.number().int().min(0).optional(),
  timeoutSeconds: positiveInt.optional(),
  durability: z.enum(['steps', 'run']).optional(),
  tools: toolPolicy.optional(),
  sandbox: z
    .strictObject({
      mode: z.enum(['off', 'non-main', 'all']).default('off'),
      scope: z.enum(['session', 'agent', 'shared']).default('agent'),
      tools: toolPolicy.optional(),
    })
    .optional(),
  subagents: subagentLimits.optional(),
  exec: execPolicy.optional(),
  /** MCP servers (names in mcp.servers) whose tools this agent is offered, under its tool policy. */
  mcp: z.array(z.string()).optional(),
  memory: agentMemory.optional(),
  mailbox: agentMailbox.optional(),
  a2a: z.strictObject({ description: z.string().optional(), skills: z.array(a2aSkill).default([]) }).optional(),
});

const binding = z.strictObject({
  agentId,
  match: z.strictObject({
    channel: z.string().min(1),
    account: z.string().optional(),
    peer: z.string().optional(),
    /** A group conversation (a Telegram group, a Slack or Discord channel). */
    group: z.string().optional(),
  }),
});

/** A rule of the scripted provider: the first whose `match` fits the newest input answers. */
const scriptedToolCall = z.strictObject({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()).default({}) });
const scriptedStep = z.strictObject({
  text: z.string().optional(),
  toolCalls: z.array(scriptedToolCall).optional(),
});
const scriptedRule = z.strictObject({
  match: z.string().default('.*'),
  reply: z.string().optional(),
  steps: z.array(scriptedStep).optional(),
  delayMs: z.number().int().min(0).optional(),
  error: z.string().optional(),
});
const scriptedModel = z.strictObject({ rules: z.array(scriptedRule).min(1), chunkChars: positiveInt.optional() });

const provider = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('openai'), apiKey: secretString().optional(), baseURL: z.url().optional(), headers: headers() }),
  z.strictObject({ type: z.literal('anthropic'), apiKey: secretString().optional(), baseURL: z.url().optional(), headers: headers() }),
  z.strictObject({ type: z.literal('openai-compatible'), baseURL: z.url(), apiKey: secretString().optional(), headers: headers() }),
  z.strictObject({ type: z.literal('scripted'), models: z.record(z.string(), scriptedModel) }),
]);

export const configSchema = z.strictObject({
  gateway: z
    .strictObject({
      host: z.string().default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(7317),
      dataDir: z.string().default(DEFAULT_DATA_DIR),
      maxMessageChars: positiveInt.default(32_000),
      waitTimeoutSeconds: positiveInt.default(120),
    })
    .prefault({}),
  store: z
    .strictObject({
      driver: z.enum(['sqlite', 'postgres']).default('sqlite'),
      /** PostgreSQL only: the connection URL (a secret: it may hold the password; use ${ENV}). */
      url: secretString().optional(),
      schema: z
        .string()
        .regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: 'expected a schema name of lower-case letters, digits and _' })
        .default('public'),
      maxConnections: positiveInt.default(10),
      /** PostgreSQL only: send the store's repeated queries as server-side prepared statements. */
      preparedStatements: z.boolean().default(true),
      /** PostgreSQL only: analyze the store's tables when the server's autovacuum is off (`auto`), or never (`off`). */
      analyze: z.enum(['auto', 'off']).default('auto'),
      sqlite: z
        .strictObject({
          path: z.string().optional(),
          synchronous: z.enum(['OFF', 'NORMAL', 'FULL', 'EXTRA']).default('FULL'),
          /** How many MB of the database file SQLite reads through a memory map; 0 reads with read() only. */
          mmapMb: z.number().int().min(0).max(2047).default(2047),
          /** Where the store runs: on the gateway's event loop (`main`) or on a worker thread of its own (`worker`). */
          thread: z.enum(['main', 'worker']).default('main'),
        })
        .prefault({}),
    })
    .prefault({}),
  agents: z.strictObject({
    defaults: agentDefaults.prefault({}),
    list: z.array(agent).min(1, { error: 'expected at least one agent' }),
  }),
  bindings: z.array(binding).default([]),
  tools: z
    .strictObject({
      allow: toolNames.optional(),
      deny: toolNames.optional(),
      ask: toolNames.optional(),
      agentToAgent: z
        .strictObject({
          enabled: z.boolean().default(false),
          allow: z.array(z.string()).default([]),
          history: z.boolean().default(true),
          list: z.boolean().default(true),
        })
        .prefault({}),
      sessions: z.strictObject({ visibility: z.enum(['self', 'tree', 'agent', 'all']).default('tree') }).prefault({}),
      /** Tools sent by name only, in tools_load's description, until a session loads or calls them (docs/tools.md). */
      defer: toolNames.default(['agents_list', 'sessions_list', 'sessions_history', 'session_status']),
    })
    .prefault({}),
  session: z
    .strictObject({
      agentToAgent: z
        .strictObject({
          maxPingPongTurns: z.number().int().min(0).max(5).default(0),
          maxHops: z.number().int().min(1).max(64).default(8),
          maxSendsPerMinute: positiveInt.default(30),
        })
        .prefault({}),
    })
    .prefault({}),
  messages: z
    .strictObject({
      queue: z
        .strictObject({
          mode: queueMode.default('followup'),
          debounceMs: z.number().int().min(0).default(1000),
          byChannel: z
            .record(
              z.string(),
              z.union([queueMode, z.strictObject({ mode: queueMode.optional(), debounceMs: z.number().int().min(0).optional() })]),
            )
            .default({}),
        })
        .prefault({}),
    })
    .prefault({}),
  lanes: z
    .strictObject({
      main: z.strictObject({ maxConcurrent: positiveInt.default(4) }).prefault({}),
      /** Same lane as agents.defaults.subagents.maxConcurrent; when set here it must agree. */
      subagent: z.strictObject({ maxConcurrent: positiveInt.optional() }).prefault({}),
      nested: z.strictObject({ maxConcurrent: positiveInt.default(8) }).prefault({}),
      maxWaiting: positiveInt.default(10_000),
      /**
       * How long a run's lease on its session holds without renewal (renewed every third of it). With several gateways
       * on one database, a dead gateway's runs are taken over once their leases expire.
       */
      leaseTtlSeconds: z.number().int().min(2).max(3600).default(30),
      /**
       * How long a run with durable steps waits in memory (a waited sessions_send, sessions_wait, subagents wait) before
       * it suspends: it then lets its lane slot and its memory go until the wait ends (docs/delivery.md).
       */
      suspendWaitsAfterMs: z.number().int().min(0).default(2000),
    })
    .prefault({}),
  recovery: z.strictObject({ retryInterrupted: z.number().int().min(0).max(10).default(1) }).prefault({}),
  watchdog: z.strictObject({ intervalMs: positiveInt.default(5000), stallMs: positiveInt.default(30_000) }).prefault({}),
  outbox: z
    .strictObject({
      maxAttempts: positiveInt.default(10),
      baseDelayMs: positiveInt.default(500),
      maxDelayMs: positiveInt.default(300_000),
      /** Rows of one kind delivered at once; one target's rows always go one at a time, in order. */
      concurrencyPerKind: positiveInt.default(8),
      /** How long a delivery attempt holds its row before another gateway may take it up (docs/deploy.md). */
      claimMs: positiveInt.default(300_000),
    })
    .prefault({}),
  /** The task board (docs/board.md). */
  board: z
    .strictObject({
      /** Agents (ids or patterns with `*`) offered the board tools; worker tools are offered in board sessions regardless. */
      agents: z.array(z.string()).default([]),
      /** How long an outside worker's claim holds without a heartbeat. */
      claimTtlSeconds: positiveInt.default(900),
      /** The claim held for an agent's run or a remote A2A task, renewed while it lives. */
      agentClaimTtlSeconds: positiveInt.default(60),
      /** Failed attempts (expired or ended without an answer) before a task is blocked with gave_up. */
      maxAttempts: positiveInt.default(2),
      /** Board tasks one agent works on at once. */
      maxConcurrentPerAgent: positiveInt.default(2),
      maxResultChars: positiveInt.default(32_000),
      /** How often expired claims are taken back and ready tasks handed to agents (changes wake it sooner). */
      sweepIntervalMs: positiveInt.default(1000),
    })
    .prefault({}),
  mcp: mcpSection,
  /** The shared file mailbox (docs/mailbox.md). */
  mailbox: mailboxSection,
  /** Teams of a lead and members on a shared board (docs/teams.md). */
  teams: teamsSection,
  memory: memorySection,
  models: z
    .strictObject({
      providers: z.record(z.string(), provider).default({}),
      /** Prices per million tokens by model (`provider/model`), for the console's cost figures; unpriced models show tokens only. */
      prices: z
        .record(
          z.string(),
          z.strictObject({
            input: z.number().nonnegative(),
            output: z.number().nonnegative(),
            cachedInput: z.number().nonnegative().optional(),
          }),
        )
        .default({}),
    })
    .prefault({}),
  /** The web console served at `/` on the control port (docs/console.md). */
  console: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** How long a login lasts before the console asks for a new link or the token again. */
      sessionHours: z
        .number()
        .positive()
        .max(24 * 30)
        .default(12),
    })
    .prefault({}),
  a2a: a2aSection,
  /** ACP agents as sub-agents (docs/runtimes.md). */
  acp: acpSection,
  /** CLI agents as child-process sub-agents (docs/runtimes.md). */
  runtimes: runtimesSection,
  /** Approval requests of calls under an `ask` policy (docs/gates.md). */
  approvals: approvalsSection,
  /** Caps on what model calls spend (docs/gates.md). */
  budgets: budgetsSection,
  /** OpenTelemetry traces and Prometheus metrics (docs/observability.md). */
  telemetry: telemetrySection,
  /** Chat channels: Telegram, Slack, Discord and signed webhooks (docs/channels.md). */
  channels: channelsSection,
  /** Switchboard as an MCP server: `/mcp` on the control port and `switchboard mcp serve` (docs/mcp-server.md). */
  mcpServer: mcpServerSection,
  /** Messages sent to agents on a cron expression or an interval (docs/schedules.md). */
  schedules: schedulesSection,
});

export type SwitchboardConfig = z.infer<typeof configSchema>;
export type AgentConfig = z.infer<typeof agent>;
export type ProviderConfig = z.infer<typeof provider>;
export type ScriptedModelConfig = z.infer<typeof scriptedModel>;
export type ScriptedRule = z.infer<typeof scriptedRule>;
export type IdentityConfig = z.infer<typeof identity>;
