/**
 * The board's side of a task handed to a remote A2A agent: who follows a handed-out task, and for a remote one,
 * one poll (or the first send, under a message id the remote can dedupe) and, once the remote task ended, the board
 * task settled from it under the claim's token.
 */
import type { Conversation } from '../core/hops.js';
import type { BoardStore, Clock } from '../ports/index.js';
import { backoffDelay } from '../kit/retry.js';
import { taskBrief } from './task-prompt.js';

/** A remote A2A task as the board sees it: its state name (`completed`, `input-required`, ...) and its answer. */
export interface RemoteTaskState {
  state: string;
  taskId: string;
  text: string;
}

/** How the board reaches configured remote A2A agents (the composition root adapts the A2A client). */
export interface RemoteWorkers {
  /**
   * Sends the task; `messageId` is the same when the same attempt is sent again, so the remote can dedupe. The
   * task's conversation (the hop budget) goes with it, for a Switchboard on the far side to count.
   */
  submit(remote: string, message: string, messageId: string, conversation?: Conversation | null): Promise<RemoteTaskState>;
  poll(remote: string, taskId: string): Promise<RemoteTaskState>;
}

/** Remote task states after which nothing more will happen to it. */
export const ENDED = new Set(['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required']);

/** A task the dispatcher handed out and follows until its claim ends. */
export interface Follower {
  taskId: string;
  token: number;
  attempt: number;
  /** The agent of this gateway working on it, or the remote A2A agent. */
  agentId?: string;
  /** The task's board (known for agents' tasks). */
  board?: string;
  remote?: string;
  inputId?: string;
  remoteTaskId?: string;
  nextBeatAt: number;
  nextPollAt: number;
  polls: number;
  /** A remote's poll under way (they run beside the passes, so a slow remote holds up nothing else), since when. */
  pollingSince?: number;
  /** The remote's last poll failed: its claim is not renewed until one succeeds. */
  failing?: boolean;
}

/** A follower of a claim just taken or renewed: nothing sent, polled or renewed yet. */
export function newFollower(claim: { taskId: string; token: number; attempt: number }, who: Partial<Follower>): Follower {
  return { taskId: claim.taskId, token: claim.token, attempt: claim.attempt, ...who, nextBeatAt: 0, nextPollAt: 0, polls: 0 };
}

/** Sends the task the first time, polls it after; backed off before the call, so a failing remote is not asked at every pass. */
export async function pollRemoteTask(
  follower: Follower,
  deps: { workers: RemoteWorkers; store: BoardStore; clock: Clock; maxPollMs: number },
): Promise<RemoteTaskState> {
  const { workers, store, clock } = deps;
  const remote = follower.remote!;
  follower.polls += 1;
  follower.nextPollAt = clock.now() + backoffDelay(follower.polls, { baseDelayMs: 500, maxDelayMs: deps.maxPollMs }, Math.random());
  if (follower.remoteTaskId) return workers.poll(remote, follower.remoteTaskId);
  const view = await store.view(follower.taskId, { comments: 20 });
  const state = await workers.submit(remote, taskBrief(view!), `board-${follower.taskId}-${follower.attempt}`, view!.task.conversation);
  if (state.taskId) {
    follower.remoteTaskId = state.taskId;
    await store.noteRef(follower.taskId, follower.token, state.taskId, clock.now());
  }
  return state;
}

/** The board task as the ended remote task leaves it: completed with its answer, or blocked with why. */
export async function settleFromRemote(
  store: BoardStore,
  follower: Follower,
  state: RemoteTaskState,
  maxResultChars: number,
  now: number,
): Promise<void> {
  const from = `remote agent ${follower.remote}, task ${state.taskId || '(none)'}`;
  if (state.state === 'completed') {
    await store.complete(follower.taskId, follower.token, { result: state.text, summary: `completed by ${from}`, maxResultChars }, now);
  } else if (state.state === 'input-required' || state.state === 'auth-required') {
    await store.block(follower.taskId, follower.token, { kind: 'needs_input', reason: `${from} is ${state.state}: ${state.text}` }, now);
  } else {
    await store.block(follower.taskId, follower.token, { kind: 'failed', reason: `${from} ended ${state.state}: ${state.text}` }, now);
  }
}

/** One poll of a remote task; once it ended, the board task settled from it. True when it ended. */
export async function pollAndSettle(
  follower: Follower,
  deps: { workers: RemoteWorkers; store: BoardStore; clock: Clock; maxPollMs: number; maxResultChars: number },
): Promise<boolean> {
  const state = await pollRemoteTask(follower, deps);
  if (!ENDED.has(state.state)) return false;
  await settleFromRemote(deps.store, follower, state, deps.maxResultChars, deps.clock.now());
  return true;
}
