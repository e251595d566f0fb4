/**
 * Sub-agents (seed 002 sections 2.2, 5 and 7; seed 003): the state machine, the capability handle, what
 * a run's end means for the sub-agent it works for, and the completion event its parent reads. Pure:
 * the gateway and the store feed in what they read and act on the answer.
 */
import type { TerminalRunStatus } from './run-status.js';

/** pending -> running -> succeeded | failed | timed_out | cancelled | interrupted. */
export const SUBAGENT_STATES = ['pending', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'interrupted'] as const;
export type SubagentState = (typeof SUBAGENT_STATES)[number];
export type SettledSubagentState = Exclude<SubagentState, 'pending' | 'running'>;
export const LIVE_SUBAGENT_STATES: readonly SubagentState[] = ['pending', 'running'];

export const SUBAGENT_ROLES = ['leaf', 'orchestrator'] as const;
export type SubagentRole = (typeof SUBAGENT_ROLES)[number];

export function isSettled(state: SubagentState): state is SettledSubagentState {
  return state !== 'pending' && state !== 'running';
}

/** The outbox kind of a completion event, written in the commit that settles the sub-agent. */
export const COMPLETION_KIND = 'subagent.completion';

/** A wake run that answers exactly this (or nothing) keeps the answer frozen before it (seed 002 section 7.2). */
export const NO_REPLY = 'NO_REPLY';

/** The session tools and which of them each role gets (seed 002, the table in section 2.2). */
export const SESSION_TOOL_NAMES = [
  'agents_list',
  'sessions_list',
  'sessions_history',
  'session_status',
  'sessions_send',
  'sessions_wait',
  'sessions_spawn',
  'subagents',
] as const;
export const ORCHESTRATOR_TOOLS: readonly string[] = ['sessions_spawn', 'subagents', 'sessions_list', 'sessions_history'];

/** Whether a sub-agent of this role may be offered the tool: a leaf gets no session tools at all. */
export function roleAllowsTool(role: SubagentRole, tool: string): boolean {
  if (!(SESSION_TOOL_NAMES as readonly string[]).includes(tool)) return true;
  return role === 'orchestrator' && ORCHESTRATOR_TOOLS.includes(tool);
}

/** The handle sessions_spawn returns. `capability` signs every other field. */
export interface SubagentHandle {
  subagentId: string;
  parentSessionKey: string;
  correlationId: string;
  createdAt: number;
  depth: number;
  role: SubagentRole;
  capability: string;
}

export type UnsignedHandle = Omit<SubagentHandle, 'capability'>;

function handleText(handle: UnsignedHandle): string {
  return JSON.stringify([handle.subagentId, handle.parentSessionKey, handle.correlationId, handle.createdAt, handle.depth, handle.role]);
}

/**
 * The hashes core logic needs, passed in so that core stays free of I/O and node: imports (the gateway
 * gives node:crypto's). Contract: `hmacSha256` is HMAC-SHA256 as base64url, `sha256` is hex.
 */
export interface Hashing {
  hmacSha256(secret: string, text: string): string;
  sha256(text: string): string;
}

export function signHandle(hashing: Hashing, secret: string, handle: UnsignedHandle): SubagentHandle {
  return { ...handle, capability: hashing.hmacSha256(secret, handleText(handle)) };
}

/** Compares in time that depends only on the lengths, so a forger learns nothing from timing. */
function sameText(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) difference |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return difference === 0;
}

/** True when the handle is well formed and its capability matches its fields. */
export function verifyHandle(hashing: Hashing, secret: string, handle: unknown): handle is SubagentHandle {
  if (!handle || typeof handle !== 'object') return false;
  const h = handle as Record<string, unknown>;
  if (typeof h.subagentId !== 'string' || typeof h.parentSessionKey !== 'string' || typeof h.correlationId !== 'string') return false;
  if (
    typeof h.createdAt !== 'number' ||
    typeof h.depth !== 'number' ||
    !SUBAGENT_ROLES.includes(h.role as SubagentRole) ||
    typeof h.capability !== 'string'
  )
    return false;
  return sameText(signHandle(hashing, secret, h as unknown as UnsignedHandle).capability, h.capability);
}

/** What a run's end means for the sub-agent whose session it ran in. */
export type RunEndDecision =
  /** Nothing changes (the run was interrupted by a newer input; the next run goes on). */
  | { kind: 'none' }
  /** Descendants or inputs are still on their way: keep this answer and wait to be woken. */
  | { kind: 'wait'; frozenText: string | null }
  | { kind: 'settle'; state: SettledSubagentState; text: string | null; diagnostic: string | null };

export interface RunEndFacts {
  status: TerminalRunStatus;
  finalText: string | null;
  error: string | null;
  /** The answer an earlier run froze while it waited. */
  frozenText: string | null;
  /** Children whose completion has not yet reached this session. */
  liveChildren: number;
  /** Inputs already waiting in this session (delivered completions, steering). */
  queuedInputs: number;
}

const keepsFrozen = (text: string | null) => text === null || text.trim() === '' || text.trim() === NO_REPLY;

export function decideRunEnd(facts: RunEndFacts): RunEndDecision {
  if (facts.status === 'interrupted') return { kind: 'none' };
  if (facts.status !== 'succeeded') return { kind: 'settle', state: facts.status, text: facts.finalText, diagnostic: facts.error };
  const text = keepsFrozen(facts.finalText) ? facts.frozenText : facts.finalText;
  if (facts.liveChildren > 0 || facts.queuedInputs > 0) return { kind: 'wait', frozenText: text };
  return { kind: 'settle', state: 'succeeded', text, diagnostic: null };
}

/** The frozen result: capped, with the hash of what is kept and the length of what was produced. */
export function freezeResult(
  text: string | null,
  maxChars: number,
  sha256: Hashing['sha256'],
): { result: string; resultHash: string; resultChars: number; truncated: boolean } {
  const full = text ?? '';
  const result = full.length > maxChars ? full.slice(0, maxChars) : full;
  return { result, resultHash: sha256(result), resultChars: full.length, truncated: full.length > maxChars };
}

export interface SubagentUsage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  runs: number;
  durationMs: number;
}

/** The completion event (outbox payload, then the parent's input), seed 002 section 5. */
export interface CompletionEvent {
  subagentId: string;
  childSessionKey: string;
  parentSessionKey: string;
  agentId: string;
  label: string | null;
  task: string;
  runId: string | null;
  status: SettledSubagentState;
  result: string;
  resultHash: string;
  truncated: boolean;
  diagnostic: string | null;
  usage: SubagentUsage;
  worktree: { path: string; branch: string } | null;
}

/** What elapsedWithoutDowntime needs of a run. */
export interface RunSpan {
  startedAt: number;
  endedAt: number | null;
  status: string;
}

/**
 * The time from `start` to `end` less the time a gateway was down: for each run a crash interrupted, from the run's end
 * (its lease's last expiry, when it was last known alive) to the next run's start, or to `end` when none followed.
 */
export function elapsedWithoutDowntime(start: number, end: number, runs: readonly RunSpan[]): number {
  const sorted = [...runs].sort((a, b) => a.startedAt - b.startedAt);
  let down = 0;
  sorted.forEach((run, index) => {
    if (run.status !== 'interrupted' || run.endedAt === null) return;
    const resumed = Math.min(end, sorted[index + 1]?.startedAt ?? end);
    down += Math.max(0, resumed - Math.max(start, run.endedAt));
  });
  return Math.max(0, end - start - down);
}

export function statsLine(usage: SubagentUsage): string {
  const seconds = (usage.durationMs / 1000).toFixed(1);
  return `runtime ${seconds}s, tokens ${usage.inputTokens} in / ${usage.outputTokens} out (${usage.inputTokens + usage.outputTokens} total), ${usage.modelCalls} model calls in ${usage.runs} runs`;
}

/** How the parent should treat the event: an orchestrator works it in; a top-level session tells its user. */
export function replyInstruction(event: CompletionEvent, parentIsSubagent: boolean, stillRunning: number, wake: boolean): string {
  const others =
    stillRunning > 0
      ? ` ${stillRunning} other sub-agent${stillRunning === 1 ? ' is' : 's are'} still running; their results will follow.`
      : '';
  if (wake) {
    return `All your sub-agents have finished. Write your final answer from their results; reply exactly ${NO_REPLY} to keep the answer you gave before.`;
  }
  if (parentIsSubagent) return `Use this result in your own work; your final answer goes to your parent automatically.${others}`;
  const failed = event.status === 'succeeded' ? '' : ' It did not succeed: say so plainly, and decide whether to retry.';
  return `Tell your user what came of it, in your own words (they have not seen the result).${failed}${others}`;
}

const STATUS_WORDS: Record<SettledSubagentState, string> = {
  succeeded: 'succeeded',
  failed: 'failed',
  timed_out: 'timed out',
  cancelled: 'was cancelled',
  interrupted: 'was interrupted (the gateway stopped while it ran; it was not run again)',
};

export function renderCompletion(event: CompletionEvent, instruction: string): string {
  const name = event.label ? `"${event.label}"` : event.subagentId;
  const task = event.task.length > 300 ? `${event.task.slice(0, 300)}…` : event.task;
  const lines = [`[sub-agent ${name} ${STATUS_WORDS[event.status]}; session ${event.childSessionKey}]`, `Task: ${task}`];
  if (event.diagnostic) lines.push(`Diagnostic: ${event.diagnostic}`);
  lines.push(event.result.trim() ? `Result:\n${event.result}` : 'Result: (no text)');
  if (event.truncated) lines.push(`(result cut to ${event.result.length} characters; sha256 ${event.resultHash})`);
  if (event.worktree) lines.push(`Worktree: ${event.worktree.path} (branch ${event.worktree.branch})`);
  lines.push(`Stats: ${statsLine(event.usage)}`, instruction);
  return lines.join('\n');
}

/** The limits that apply to the sub-agents one agent spawns. */
export interface SubagentLimits {
  maxSpawnDepth: number;
  maxChildrenPerAgent: number;
  runTimeoutSeconds: number;
  archiveAfterMinutes: number;
  allowAgents: readonly string[];
  maxResultChars: number;
  completionMode: 'steer' | 'followup' | 'collect' | 'interrupt';
  retryInterrupted: boolean;
  allowRuntimes: readonly string[];
}

const LIMIT_KEYS = [
  'maxSpawnDepth',
  'maxChildrenPerAgent',
  'runTimeoutSeconds',
  'archiveAfterMinutes',
  'allowAgents',
  'maxResultChars',
  'completionMode',
  'retryInterrupted',
  'allowRuntimes',
] as const;

/**
 * The agent's own settings (`agents.list[].subagents`) over `agents.defaults.subagents`, and `source`,
 * which names the config key a limit came from (for refusals).
 */
export function resolveLimits(
  defaults: SubagentLimits,
  own: Partial<SubagentLimits> | undefined,
  agentId: string,
): SubagentLimits & { source: (key: keyof SubagentLimits) => string } {
  const limits = { ...defaults } as SubagentLimits;
  for (const key of LIMIT_KEYS) if (own?.[key] !== undefined) (limits as unknown as Record<string, unknown>)[key] = own[key];
  const source = (key: keyof SubagentLimits) =>
    own?.[key] !== undefined ? `agents.list[${agentId}].subagents.${key}` : `agents.defaults.subagents.${key}`;
  return { ...limits, source };
}
