/**
 * The configuration schema. Key names follow OpenClaw's (see the seeds) so their examples read naturally.
 * Defaults live on the keys; a missing section is `prefault({})`, parsed and so filled from those defaults.
 * Every key and its default is documented in docs/configuration.md.
 */
import { z } from 'zod';
import { discoverySection, serverMdns } from './schema-discovery.js';
import { AGENT_ID_PATTERN } from '../core/session-key.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import { agentMemory, execPolicy, mcpSection, memorySection } from './schema-tools.js';
import { agentMailbox, mailboxSection, teamsSection } from './schema-mailbox.js';
import { headers, secret, secretString } from './secret-schema.js';

export { secretSchemas } from './secret-schema.js';

/** The data directory when the config names none: `.switchboard` beside the config file. */
export const DEFAULT_DATA_DIR = '.switchboard';
/** The A2A owner of every caller without credentials (a2a.server.requireAuth: false). */
export const ANONYMOUS_PEER = 'anonymous';

const agentId = z.string({ error: 'expected a string of 1-64 characters [a-z0-9_-]' }).regex(AGENT_ID_PATTERN, {
  error: 'expected a string of 1-64 characters [a-z0-9_-]',
});
const modelRef = z.string().regex(/^[A-Za-z0-9_.-]+\/.+$/, { error: 'expected "<provider>/<model>", e.g. "openai/gpt-4o-mini"' });
const toolNames = z.array(z.string().min(1));
const toolPolicy = z.strictObject({ allow: toolNames.optional(), deny: toolNames.optional() });
const queueMode = z.enum(QUEUE_MODES);
const positiveInt = z.number().int().positive();

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
  tools: toolPolicy.default({}),
  exec: execPolicy.default({}),
  subagents: subagentDefaults.prefault({}),
});

const a2aSkill = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  description: z.string().default(''),
  tags: z.array(z.string()).default([]),
  examples: z.array(z.string()).default([]),
  inputModes: z.array(z.string()).default([]),
  outputModes: z.array(z.string()).default([]),
});

/** A caller allowed in through the A2A server: its credential and what it may call. */
const a2aPeer = z.strictObject({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: 'expected 1-64 characters [A-Za-z0-9_.-]' })
    .refine((id) => id !== ANONYMOUS_PEER, {
      error: `"${ANONYMOUS_PEER}" is reserved for callers without credentials; give the peer another id`,
    }),
  /** Sent as `Authorization: Bearer <token>`. */
  token: secret(z.string().min(16, { error: 'expected at least 16 characters (use ${ENV} for secrets)' })).optional(),
  /** Sent as `X-API-Key: <apiKey>`. */
  apiKey: secret(z.string().min(16, { error: 'expected at least 16 characters (use ${ENV} for secrets)' })).optional(),
  agents: z.array(z.string()).default(['*']),
  skills: z.array(z.string()).optional(),
  maxRequestsPerMinute: positiveInt.default(120),
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
  match: z.strictObject({ channel: z.string().min(1), account: z.string().optional(), peer: z.string().optional() }),
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
      sqlite: z
        .strictObject({ path: z.string().optional(), synchronous: z.enum(['OFF', 'NORMAL', 'FULL', 'EXTRA']).default('FULL') })
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
      agentToAgent: z
        .strictObject({
          enabled: z.boolean().default(false),
          allow: z.array(z.string()).default([]),
          history: z.boolean().default(true),
          list: z.boolean().default(true),
        })
        .prefault({}),
      sessions: z.strictObject({ visibility: z.enum(['self', 'tree', 'agent', 'all']).default('tree') }).prefault({}),
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
  models: z.strictObject({ providers: z.record(z.string(), provider).default({}) }).prefault({}),
  a2a: z
    .strictObject({
      server: z
        .strictObject({
          enabled: z.boolean().default(false),
          /** How peers reach this gateway, for the URLs in the Agent Cards; default: the address it listens on. */
          publicUrl: z.url().optional(),
          /** Agent ids (patterns with `*`) exposed as A2A agents. */
          agents: z.array(z.string()).default(['*']),
          /** Only `false` lets callers in without credentials (all of them one peer, `anonymous`; docs/a2a.md). */
          requireAuth: z.boolean().default(true),
          /** With requireAuth off, lets the server listen beyond loopback (gateway.host) all the same. */
          allowAnonymous: z.boolean().default(false),
          /** Requests a minute from one address without credentials, like a peer's maxRequestsPerMinute. */
          anonymousMaxRequestsPerMinute: positiveInt.default(120),
          peers: z.array(a2aPeer).default([]),
          /** A task with no progress for this long (its run died or stalled) is failed with a diagnostic. */
          taskStallSeconds: positiveInt.default(900),
          /** Advertise each exposed agent on the LAN over DNS-SD (`_a2a._tcp`; docs/a2a.md). */
          mdns: serverMdns,
        })
        .prefault({}),
      discovery: discoverySection,
      /** Remote A2A agents this gateway's agents may call with the a2a_* tools. */
      remoteAgents: z
        .array(
          z.strictObject({
            id: agentId,
            /** The agent's base URL (its card is at <url>/.well-known/agent-card.json) or the card's own URL. */
            url: z.url(),
            token: secretString().optional(),
            apiKey: secretString().optional(),
            headers: headers(),
          }),
        )
        .default([]),
      client: z
        .strictObject({
          /** Lets a2a_discover and a2a_send take a URL instead of a configured remote agent. */
          allowUrls: z.boolean().default(false),
          /** Lets a remote agent called by URL be on a private, loopback or link-local address. */
          allowPrivateTargets: z.boolean().default(false),
          /** The longest pause between two polls of a remote task. */
          maxPollSeconds: positiveInt.default(30),
          /** How long a remote task is followed in the background before the session is told it was given up. */
          followTimeoutSeconds: positiveInt.default(86_400),
          /** The base URL remotes post push notifications to; default a2a.server.publicUrl, else the listen address. */
          callbackUrl: z.url().optional(),
        })
        .prefault({}),
      push: z
        .strictObject({
          /** Lets push notifications go to private, loopback and link-local addresses (tests, one-host setups). */
          allowPrivateTargets: z.boolean().default(false),
          timeoutMs: positiveInt.default(10_000),
        })
        .prefault({}),
    })
    .prefault({}),
});

export type SwitchboardConfig = z.infer<typeof configSchema>;
export type AgentConfig = z.infer<typeof agent>;
export type ProviderConfig = z.infer<typeof provider>;
export type ScriptedModelConfig = z.infer<typeof scriptedModel>;
export type ScriptedRule = z.infer<typeof scriptedRule>;
export type IdentityConfig = z.infer<typeof identity>;
export type A2APeerConfig = z.infer<typeof a2aPeer>;
