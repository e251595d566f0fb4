/**
 * The contract between the gateway and the tools its agents call. Tool arguments are defined once, with
 * zod: the same schema gives the JSON Schema the model is shown and checks what the model sent, so a bad
 * argument is refused with one line naming it, as data the model can read and correct.
 */
import { WaitSuspended } from '../kit/wait-until.js';
import { z } from 'zod';
import { toSwitchboardError } from '../core/errors.js';
import type { ToolArgs, ToolContext, GatewayTool } from '../ports/tools.js';

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

/** The lookup of whether a session has spawned anyone, and whether a reply is to come to it (SessionStore.reachedOut), shared within a step. */
export const REACHED_OUT = 'reachedOut';

/** A tool whose `execute` is typed by its own schema. */
export function defineTool<T extends ToolArgs>(
  tool: Omit<GatewayTool, 'parameters' | 'execute'> & { parameters: T; execute(args: z.infer<T>, context: ToolContext): Promise<unknown> },
): GatewayTool {
  return tool as unknown as GatewayTool;
}

/**
 * A tool's failure as data the model can read and act on (the one mapping every tool that answers its failures uses):
 * a policy refusal (an error with a `layer`) is `forbidden` with its layer, any other error is `error` with its code.
 */
export function toolFailure(
  caught: unknown,
): { status: 'forbidden'; layer: unknown; error: string } | { status: 'error'; code: string; error: string } {
  // A wait that suspends its run is no failure: it goes on up to the run (kit/wait-until.ts).
  if (caught instanceof WaitSuspended) throw caught;
  const error = toSwitchboardError(caught);
  const layer = error.details?.layer;
  if (layer) return { status: 'forbidden', layer, error: error.message };
  return { status: 'error', code: error.code, error: error.message };
}

/** Runs a tool's work; a failure becomes its result (toolFailure). */
export async function asToolResult(work: () => Promise<unknown>): Promise<unknown> {
  try {
    return await work();
  } catch (caught) {
    return toolFailure(caught);
  }
}
