/**
 * The tool-call ledger (ARCHITECTURE.md section 4.6). A retried run gets a new run id and a rerun model
 * makes new tool-call ids, so neither may key an effect. A side-effecting call is keyed instead by what
 * a retry keeps: the run's first input, the model step, the call's place in that step, the tool and a
 * hash of its arguments. The key is the effect's idempotency key, and the call and its result are
 * recorded under it, so a retry at the same position causes no second effect.
 */
import { createHash } from 'node:crypto';
import type { Clock, ToolCallPosition, ToolCallStore } from '../ports.js';
import type { GatewayTool } from '../tools/types.js';

export interface LedgerDeps {
  store: ToolCallStore;
  clock: Clock;
  /** The run's first input id: a retried run claims the same inputs again. */
  scope: string;
  sessionKey: string;
  runId: string;
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
 * Runs one call of a side-effecting tool through the ledger. `run` gets the call's key to use as the
 * idempotency key of its effect. A call completed before is answered from the ledger when the tool's
 * result is final (`replay`); a tool that waits on something (`resume`) runs again under the same key,
 * finds its effect, and picks up from there.
 */
export async function throughLedger(
  deps: LedgerDeps,
  tool: Pick<GatewayTool, 'name' | 'effects'>,
  position: Omit<ToolCallPosition, 'scope'>,
  args: unknown,
  run: (key: string) => Promise<unknown>,
): Promise<unknown> {
  const argsHash = hashArguments(args);
  const at = { scope: deps.scope, ...position };
  const key = toolCallKey(at, tool.name, argsHash);
  const { record, created } = await deps.store.begin({ ...at, key, tool: tool.name, argsHash, sessionKey: deps.sessionKey, runId: deps.runId }, deps.clock.now());
  if (!created && record.state === 'completed' && tool.effects === 'replay') return record.result;
  const result = await run(key);
  await deps.store.complete(key, deps.runId, result, deps.clock.now());
  return result;
}
