/**
 * The contract between the gateway and the tools its agents call. Tool arguments are defined once, with
 * zod: the same schema gives the JSON Schema the model is shown and checks what the model sent, so a bad
 * argument is refused with one line naming it, as data the model can read and correct.
 */
import { z } from 'zod';
import type { SessionKind } from '../core/session-key.js';
import type { Clock, NewToolCall } from '../ports/index.js';

export type ToolArgs = z.ZodObject;

/** JSON Schema keywords left out of what the model is shown: they are checked, and a breach is explained. */
const UNSHOWN = new Set(['$schema', 'minimum', 'maximum', 'minItems', 'maxItems', 'additionalProperties', 'propertyNames']);

function shown(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shown);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !UNSHOWN.has(key))
      .map(([key, inner]) => [key, key === 'properties' ? mapValues(inner, shown) : shown(inner)]),
  );
}

/** Drops the properties marked `unlisted` (and their `required` entries) from an object schema. */
function listedOnly(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = schema.properties as Record<string, { unlisted?: boolean }> | undefined;
  if (!properties) return schema;
  const listed = Object.fromEntries(Object.entries(properties).filter(([, property]) => !property.unlisted));
  const required = (schema.required as string[] | undefined)?.filter((name) => name in listed);
  return { ...schema, properties: listed, ...(required?.length ? { required } : { required: undefined }) };
}

/**
 * An argument the model is not shown (every character of a schema is sent with every call), for what a
 * model rarely needs: it is still accepted and checked, and the tool's result tells where it helps.
 */
export const unlisted = <T extends z.ZodType>(schema: T): T => schema.meta({ unlisted: true }) as T;

const mapValues = (object: unknown, map: (value: unknown) => unknown) =>
  Object.fromEntries(Object.entries(object as Record<string, unknown>).map(([key, value]) => [key, map(value)]));

/**
 * What the model is shown: names, types, enums and descriptions. Ranges and sizes are left out, because
 * every character is sent again with every model call; they are checked, and a breach is explained.
 */
const schemas = new WeakMap<ToolArgs, Record<string, unknown>>();

/** Computed once per schema: converting zod to JSON Schema on every run cost more than the model call of a scripted run. */
export function toolJsonSchema(schema: ToolArgs): Record<string, unknown> {
  let json = schemas.get(schema);
  if (!json) {
    json = JSON.parse(JSON.stringify(listedOnly(shown(z.toJSONSchema(schema)) as Record<string, unknown>))) as Record<string, unknown>;
    schemas.set(schema, json);
  }
  return json;
}

/**
 * The model's arguments checked against the schema. Models send `null` or `""` for an argument they
 * mean to leave out, so those count as absent.
 */
export function parseToolArgs<T extends ToolArgs>(
  schema: T,
  args: unknown,
): { ok: true; value: z.infer<T> } | { ok: false; error: string } {
  const given =
    args && typeof args === 'object' && !Array.isArray(args)
      ? Object.fromEntries(Object.entries(args).filter(([, value]) => value !== null && value !== ''))
      : {};
  const parsed = schema.safeParse(given);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  const path = issue.path.join('.');
  return { ok: false, error: path ? `${path} ${issue.message}` : issue.message };
}

export interface ToolContext {
  runId: string;
  toolCallId: string;
  sessionKey: string;
  agentId: string;
  /** Workspace folder of the calling agent, when it has one. */
  workspace: string | undefined;
  /**
   * The call's key in the tool-call ledger: the same for the same call at the same place in a retried
   * run, so an effect written under it happens once. Tools without `effects` get the tool-call id.
   */
  idempotencyKey: string;
  /** The call's ledger row, for a tool to write in its effect's transaction (tools with `effects`). */
  call?: NewToolCall;
  /**
   * For an effect outside the store (tools with `effects`, when the gateway keeps a ledger): records the call
   * with `intent` before the effect. Undefined when the call is new; else what the earlier, crashed attempt
   * recorded, so the tool can tell whether its effect happened and never do it twice.
   */
  beginEffect?(intent: unknown): Promise<EarlierEffect | undefined>;
  signal: AbortSignal;
  clock: Clock;
  /** Why a write to this absolute path is refused now (another holds it reserved in the mailbox), or undefined. */
  writeRefusal?(path: string): Promise<string | undefined>;
  /** The agent-to-agent conversation the run's inputs belong to, if any (for the hop budget). */
  conversation?: { id: string; hop: number };
}

/** A call's record from an earlier attempt: its intent while `started`, its result once `completed`. */
export interface EarlierEffect {
  state: 'started' | 'completed';
  recorded: unknown;
}

/** The lookup of whether a session has spawned or messaged anyone (SessionStore.reachedOut), shared within a step. */
export const REACHED_OUT = 'reachedOut';

/** What an availability check is asked about; `once` shares a lookup between the checks of one step. */
export interface AvailabilityContext {
  sessionKey: string;
  agentId: string;
  /** The folder the session's file tools work in, when it has one. */
  workspace: string | undefined;
  once<T>(key: string, lookup: () => Promise<T>): Promise<T>;
}

export interface GatewayTool {
  name: string;
  /** Offered only in sessions of these kinds (e.g. `a2a_request_input` in A2A sessions); all when absent. */
  sessionKinds?: readonly SessionKind[];
  description: string;
  /**
   * Set on tools with side effects: their calls go through the tool-call ledger, and a call a crashed
   * run made runs again under the same key, so that its effect is not repeated.
   */
  effects?: true;
  /**
   * Offered at a model step only once it can succeed (a tool definition is sent with every call): e.g. no
   * `subagents` before the session's first spawn. Asked at each step until it says yes, then kept. The
   * tool policy still decides what a session may use at all, and a call the model makes anyway is run.
   */
  available?(session: AvailabilityContext): Promise<boolean>;
  /**
   * Why the tool's own settings refuse it to this session (exec that is off for the agent), or undefined. A refused
   * tool is not offered at all, as one the tool policy leaves out: `tools_load` and a call the model makes anyway are
   * answered with this reason, and `subagents show` does not list it.
   */
  refusedTo?(session: { agentId: string; sessionKey: string }): string | undefined;
  /**
   * Sent as a name in `tools_load`'s catalogue until the model loads it (or the session's history shows it loaded
   * or used): for tools most runs never need (tool-catalogue.ts).
   */
  deferred?: true;
  /** The arguments, once: the model is shown their JSON Schema, and `execute` gets them checked. */
  parameters: ToolArgs;
  /**
   * A JSON Schema shown instead of the one `parameters` gives, for a tool that checks its own arguments (an MCP
   * server's): the model's arguments then reach `execute` as it sent them, an object.
   */
  shownSchema?: Record<string, unknown>;
  /** Receives the arguments as `parameters` parsed them. */
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

/** A tool whose `execute` is typed by its own schema. */
export function defineTool<T extends ToolArgs>(
  tool: Omit<GatewayTool, 'parameters' | 'execute'> & { parameters: T; execute(args: z.infer<T>, context: ToolContext): Promise<unknown> },
): GatewayTool {
  return tool as unknown as GatewayTool;
}
