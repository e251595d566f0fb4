/** The contract between the gateway and the tools its agents call. */
import type { SessionKind } from '../core/session-key.js';
import type { Clock } from '../ports.js';

export interface ToolContext {
  runId: string;
  toolCallId: string;
  sessionKey: string;
  agentId: string;
  /** Workspace folder of the calling agent, when it has one. */
  workspace: string | undefined;
  /** `runId:toolCallId`: stable across a retried call, so side effects outside the gateway can dedupe. */
  idempotencyKey: string;
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
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}
