/**
 * The A2A server and client (docs/a2a.md): peers and their credentials, the skills an agent's card lists, remote
 * agents, push. Part of the config schema (schema.ts); every key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { discoverySection, serverMdns } from './schema-discovery.js';
import { agentId, positiveInt } from './schema-common.js';
import { headers, secret, secretString } from './secret-schema.js';

/** The A2A owner of every caller without credentials (a2a.server.requireAuth: false). */
export const ANONYMOUS_PEER = 'anonymous';

export const a2aSkill = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  description: z.string().default(''),
  tags: z.array(z.string()).default([]),
  examples: z.array(z.string()).default([]),
  inputModes: z.array(z.string()).default([]),
  outputModes: z.array(z.string()).default([]),
});

/** A caller allowed in through the A2A server: its credential and what it may call. */
export const a2aPeer = z.strictObject({
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

export const a2aSection = z
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
        /**
         * The Agent Card a request without an `A2A-Version` header gets: the v1.0 card, or the v0.3-shaped one for
         * peers on a v0.3 SDK, which send no header and read only that shape (docs/a2a.md).
         */
        defaultCardVersion: z.enum(['1.0', '0.3']).default('1.0'),
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
  .prefault({});

export type A2APeerConfig = z.infer<typeof a2aPeer>;
