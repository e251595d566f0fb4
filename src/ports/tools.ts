/** What a tool is to the gateway: its definition, the context a call runs in, and when it is offered (src/tools/tool-contract.ts makes one). */
import type { z } from 'zod';
import type { SessionKind } from '../core/session-key.js';
import type { Clock, NewToolCall } from './index.js';

export type ToolArgs = z.ZodObject;

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
  /**
   * Set when the call runs again in a resumed run (ARCHITECTURE.md 4.7): its step was answered at this time by an attempt
   * a crash or a wait cut before the call's result was committed. What the call took since then is its own again.
   */
  resumedAt?: number;
}

/** A call's record from an earlier attempt: its intent while `started`, its result once `completed`. */
export interface EarlierEffect {
  state: 'started' | 'completed';
  recorded: unknown;
}

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
  /**
   * What the model is told beyond the name and the parameters. Left out where the name says it all (`time_now`,
   * `sessions_history`): every character of it is sent again with every model call.
   */
  description?: string;
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
  /** What an `ask` policy sees of a call (docs/gates.md); without it, a call's subject is empty and its arguments are not editable. */
  approval?: ToolApproval;
  /** Receives the arguments as `parameters` parsed them. */
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

/** What a person asked to approve a call is shown, and what they may change. */
export interface ToolApproval {
  /** What `<tool>:<subject>` patterns match: exec's command line, a file tool's path in its workspace, an MCP tool's hint. */
  subject(args: Record<string, unknown>, context: { workspace: string | undefined }): string;
  /** What a person needs to decide: the command and folder of an exec, the diff of a file edit. */
  details?(args: Record<string, unknown>, context: { workspace: string | undefined }): Promise<Record<string, unknown>>;
  /** Approve may give other arguments (checked against the tool's schema before the call runs). */
  editable?: true;
}
