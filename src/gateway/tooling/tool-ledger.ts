/**
 * The tool-call ledger (ARCHITECTURE.md section 4.6). A retried run gets a new run id and a rerun model
 * makes new tool-call ids, so neither may key an effect. A side-effecting call is keyed instead by what
 * a retry keeps: the run's first input, the model step, the call's place in that step, the tool and a
 * hash of its arguments. The key is the effect's idempotency key: a retry at the same position finds the
 * effect and causes no second one. The call is recorded with its effect (in the effect's transaction)
 * and with its result (in the run's commit), so the ledger costs no commit of its own.
 */
import { createHash } from 'node:crypto';
import type { NewToolCall, SettledToolCall, ToolCallPosition, ToolCallStore } from '../../ports/index.js';
import type { GatewayTool } from '../../ports/tools.js';

export interface LedgerDeps {
  store: ToolCallStore;
  /** The run's first input id: a retried run claims the same inputs again. */
  scope: string;
  sessionKey: string;
  runId: string;
  /** Where the run's calls and results are collected for its commit. */
  settled: SettledToolCall[];
}

/** JSON with object keys sorted, so that the same arguments always hash the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function hashArguments(args: unknown): string {
  return createHash('sha256').update(canonical(args)).digest('hex');
}

export function toolCallKey(position: ToolCallPosition, tool: string, argsHash: string): string {
  return `tc:${position.scope}:${position.step}:${position.index}:${tool}:${argsHash.slice(0, 16)}`;
}

/**
 * Runs one call of a side-effecting tool through the ledger. `run` gets the call's key, to use as the
 * idempotency key of its effect, and the ledger row, to write in the effect's transaction where it has
 * one. A call an earlier (crashed) run made runs again under the same key: its effect is not repeated,
 * and the tool picks up from it (a wait goes on; a spawn answers the child it made).
 */
export async function throughLedger(
  deps: LedgerDeps,
  tool: Pick<GatewayTool, 'name'>,
  position: Omit<ToolCallPosition, 'scope'>,
  args: unknown,
  run: (key: string, call: NewToolCall) => Promise<unknown>,
): Promise<unknown> {
  const argsHash = hashArguments(args);
  const at = { scope: deps.scope, ...position };
  const call: NewToolCall = {
    ...at,
    key: toolCallKey(at, tool.name, argsHash),
    tool: tool.name,
    argsHash,
    sessionKey: deps.sessionKey,
    runId: deps.runId,
  };
  const rerun = (await deps.store.get(call.key)) !== undefined;
  const result = await run(call.key, call);
  deps.settled.push({ call, result, rerun });
  return result;
}
