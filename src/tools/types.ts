/** The contract between the gateway and the tools its agents call. */
import type { SessionKind } from '../core/session-key.js';
import type { z } from 'zod';
import type { Clock, NewToolCall } from '../ports.js';
import type { ToolArgs } from './schema.js';

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
  signal: AbortSignal;
  clock: Clock;
  /** The agent-to-agent conversation the run's inputs belong to, if any (for the hop budget). */
  conversation?: { id: string; hop: number };
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
  /** The arguments, once: the model is shown their JSON Schema, and `execute` gets them checked. */
  parameters: ToolArgs;
  /** Receives the arguments as `parameters` parsed them. */
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

/** A tool whose `execute` is typed by its own schema. */
export function defineTool<T extends ToolArgs>(tool: Omit<GatewayTool, 'parameters' | 'execute'> & { parameters: T; execute(args: z.infer<T>, context: ToolContext): Promise<unknown> }): GatewayTool {
  return tool as unknown as GatewayTool;
}
