/**
 * Switchboard as an MCP server (docs/mcp-server.md): whether `/mcp` answers on the control port, who the MCP client is
 * to the gateway (its caller id, stamped on what it sends), and its limits. Part of the config schema (schema.ts);
 * every key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';
import { budgetLimit } from './schema-gates.js';

export const mcpServerSection = z
  .strictObject({
    /** Serve MCP at `/mcp` on the control port (behind the control token), and so `switchboard mcp serve`. */
    enabled: z.boolean().default(true),
    /**
     * Who the MCP client is: the peer of its inputs' provenance (channel `mcp`), and so the name in its sessions'
     * keys (`agent:<id>:mcp:direct:<caller>`), runs and traces.
     */
    caller: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: 'expected 1-64 characters [A-Za-z0-9_.-]' })
      .default('mcp'),
    /** The agents (patterns with `*`) the MCP client may send to, spawn on and read the sessions of. */
    agents: z.array(z.string().min(1)).default(['*']),
    /**
     * How long a send or a spawn waits for its answer when the call gives no `timeoutSeconds`. Under the MCP SDK
     * clients' own 60 s request timeout (`DEFAULT_REQUEST_TIMEOUT_MSEC`), so that a client left at its defaults gets the
     * `timeout` answer, which says to call again, rather than giving up on the call first.
     */
    defaultWaitSeconds: positiveInt.default(55),
    /** The longest wait a call may ask for; a longer `timeoutSeconds` is refused with this cap named. */
    maxWaitSeconds: positiveInt.default(1800),
    /** How many transcript entries the transcript resource gives (the newest). */
    transcriptLimit: positiveInt.default(200),
    /**
     * What the caller's runs may spend per UTC day (tokens, cost), as a budget (docs/gates.md): the runs of its
     * sessions and of the sub-agents spawned from them. Default: no cap of its own.
     */
    budget: budgetLimit.optional(),
  })
  .refine((section) => section.defaultWaitSeconds <= section.maxWaitSeconds, {
    error: 'defaultWaitSeconds must not be above maxWaitSeconds',
  })
  .prefault({});

export type McpServerConfig = z.infer<typeof mcpServerSection>;
