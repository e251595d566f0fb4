/**
 * The board's dispatcher (docs/board.md): one per store, by a lease in the database. Each pass takes back
 * expired claims (counted as failed attempts), follows the tasks it handed out, and hands ready tasks
 * assigned to this gateway's agents (to a session `agent:<id>:board:<taskId>`) and to configured remote
 * A2A agents (as an A2A message). A pass runs every `board.sweepIntervalMs`, and sooner when the board
 * or a board session's run changes. Every write it makes goes through the store fenced by its lease's epoch
 * (BoardStore.fenced): once another gateway took the lease, the next write is refused and this one stops.
 */
import { SwitchboardError, errorMessage } from '../core/errors.js';
import type { BoardClaim, BoardStore } from '../ports/index.js';
import type { Clock } from '../ports/index.js';
import type { Control, Events, Intake, Presence, WaitResult, Waits } from '../ports/gateway.js';
import { boardSessionKey } from '../core/session-key.js';
import { SerialTask } from '../kit/serial-task.js';
import { newFollower, pollAndSettle, type Follower, type RemoteWorkers } from './remote-follow.js';
import { agentTaskPrompt, runEndReason } from './task-prompt.js';
import { dispatcherWakeup } from './wakeups.js';
import { seatTeams, type TeamSeat } from './team-seats.js';
import { boardTraceparent, parseTraceparent, traceScope } from '../kit/trace-context.js';

export type { RemoteTaskState, RemoteWorkers } from './remote-follow.js';
export type { TeamSeat } from './team-seats.js';

const RECLAIM_BATCH = 100;

export interface DispatcherDeps {
  store: BoardStore;
  /** A getter: the dispatcher is built with the gateway's extensions, before the gateway exists. */
  gateway: () => Pick<Presence, 'config' | 'agents'> &
    Pick<Intake, 'accept'> &
    Pick<Waits, 'inputOutcome' | 'inputRunId'> &
    Pick<Control, 'cancelRun'> &
    Pick<Events, 'subscribe' | 'publishJournal'>;
  clock: Clock;
  /** This gateway's id: the dispatcher lease's owner. */
  owner: string;
  remote?: RemoteWorkers;
  /** Team members' seats, asked at each pass (docs/teams.md). */
  seats?: () => Promise<readonly TeamSeat[]>;
  /** After each pass this gateway made as the lease holder: the teams' notices. */
  afterPass?: () => Promise<void>;
  log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class BoardDispatcher {
  private readonly followers = new Map<string, Follower>();
  private readonly passes: SerialTask;
  private timer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  private leaseUntil = 0;
  /** The store as this dispatcher writes to it while it holds the lease: each write checks the lease's fence. */
  private writes?: BoardStore;
  private stopped = false;
  /** Set by a pass that wrote: the journal is published at its end. */
  private wrote = false;

  constructor(private readonly deps: DispatcherDeps) {
    this.passes = new SerialTask(
      () => this.pass(),
      (error) => deps.log('error', `board dispatcher: ${errorMessage(error)}`),
    );
  }

  private get settings() {
    return this.deps.gateway().config.board;
  }

  private get leaseMs(): number {
    return Math.max(10_000, this.settings.sweepIntervalMs * 5);
  }

  private get claimMs(): number {
    return this.settings.agentClaimTtlSeconds * 1000;
  }

  async start(): Promise<void> {
    this.unsubscribe = this.deps.gateway().subscribe((live) => {
      if (live.type !== 'journal') return;
      const { wake, cancelled } = dispatcherWakeup(live.event);
      // A followed task cancelled by hand: its claim is checked at once, and its run stopped.
      const followed = cancelled === undefined ? undefined : this.followers.get(cancelled);
      if (followed) followed.nextBeatAt = 0;
      if (wake || followed) void this.kick();
    });
    this.timer = setInterval(() => void this.kick(), this.settings.sweepIntervalMs);
    await this.kick();
  }

  /** Settles once the pass under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.passes.idle();
  }

  /** One pass soon; settles when a pass that started after the call has ended. */
  kick(): Promise<void> {
    return this.passes.kick();
  }

  private async pass(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.fencedPass();
    } catch (error) {
      if (!(SwitchboardError.isInstance(error) && error.code === 'DISPATCHER_LEASE_LOST')) throw error;
      this.leaseLost(error.message);
    }
  }

  private leaseLost(why: string): void {
    this.deps.log('warn', `board: ${why}; this gateway stops dispatching`);
    this.leaseUntil = 0;
    this.writes = undefined;
    this.followers.clear();
  }

  private async fencedPass(): Promise<void> {
    const { clock } = this.deps;
    if (!(await this.holdLease())) return;
    const store = this.writes!;
    this.wrote = false;
    for (const reclaim of await store.reclaimExpired(clock.now(), RECLAIM_BATCH)) {
      this.wrote = true;
      const follower = this.followers.get(reclaim.taskId);
      // Its own claim ran out (the task's max runtime, say): the run that held it is stopped.
      if (follower) {
        this.followers.delete(reclaim.taskId);
        await this.stopRun(follower);
      }
      this.deps.log(
        'warn',
        `board: task ${reclaim.taskId} attempt ${reclaim.attempt} by ${reclaim.worker} expired; ${reclaim.state === 'blocked' ? 'gave up (blocked)' : 'ready again'}`,
      );
    }
    for (const follower of [...this.followers.values()]) await this.check(follower);
    if (!this.stopped) await this.dispatch();
    if (!this.stopped) await this.seatTeams();
    if (this.wrote) await this.deps.gateway().publishJournal();
    await this.deps.afterPass?.().catch((error) => this.deps.log('warn', `board: teams: ${errorMessage(error)}`));
  }

  /** Each team member without a task of its team's board takes the next one it may (docs/teams.md). */
  private async seatTeams(): Promise<void> {
    await seatTeams((await this.deps.seats?.()) ?? [], {
      store: this.writes!,
      claimMs: this.claimMs,
      now: () => this.deps.clock.now(),
      stopped: () => this.stopped,
      holding: (agentId, board) =>
        [...this.followers.values()].filter((follower) => follower.agentId === agentId && follower.board === board),
      handToAgent: async (claim, agentId) => {
        this.wrote = true;
        await this.handToAgent(claim, agentId);
      },
      giveBack: (follower, why) => this.giveBack(follower, why),
    });
  }

  /** A task handed back: its run stopped, its claim released (not a failed attempt). */
  private async giveBack(follower: Follower, why: string): Promise<void> {
    this.followers.delete(follower.taskId);
    await this.stopRun(follower);
    this.wrote = true;
    await this.writes!.release(follower.taskId, follower.token, why, this.deps.clock.now()).catch((error) => {
      if (!(SwitchboardError.isInstance(error) && error.code === 'CLAIM_LOST')) throw error;
    });
  }

  /**
   * Renewed when half of it is left (the writes are fenced at the database, so nothing rests on this gateway's
   * idea of the time); on taking it, the claims it held before a restart are followed again.
   */
  private async holdLease(): Promise<boolean> {
    const now = this.deps.clock.now();
    if (this.writes && now < this.leaseUntil - this.leaseMs / 2) return true;
    const fence = await this.deps.store.holdDispatcher(this.deps.owner, this.leaseMs, now);
    if (!fence) {
      if (this.leaseUntil > 0) this.leaseLost('another gateway holds the dispatcher lease');
      return false;
    }
    const taken = !this.writes;
    this.writes = this.deps.store.fenced(fence);
    this.leaseUntil = now + this.leaseMs;
    if (taken) await this.resume();
    return true;
  }

  /**
   * Claims held for agents and remote agents (before a restart, or by the previous lease holder) are followed
   * again. They are renewed first: nobody else could take them while the dispatcher was away, and a run the
   * crash cut short is run again by recovery, not counted as a failed attempt.
   */
  private async resume(): Promise<void> {
    for (const task of await this.deps.store.list({ states: ['running'], limit: 10_000 })) {
      const worker = task.claimWorker ?? '';
      if (!worker.startsWith('agent:') && !worker.startsWith('a2a:')) continue;
      const claim = await this.writes!.heartbeat(task.id, task.token, this.claimMs, this.deps.clock.now()).catch((error) => {
        if (SwitchboardError.isInstance(error) && error.code === 'CLAIM_LOST') return undefined;
        throw error;
      });
      if (!claim) continue;
      if (worker.startsWith('agent:') && this.deps.gateway().agents.has(worker.slice('agent:'.length)))
        await this.handToAgent(claim, worker.slice('agent:'.length));
      else if (worker.startsWith('a2a:') && this.deps.remote) {
        const view = await this.deps.store.view(task.id);
        const ref = view?.attempts.at(-1)?.ref ?? undefined;
        const follower = newFollower({ ...claim, attempt: task.attempts }, { remote: worker.slice('a2a:'.length), remoteTaskId: ref });
        this.followers.set(task.id, follower);
      }
    }
  }

  private async dispatch(): Promise<void> {
    const { clock } = this.deps;
    const store = this.writes!;
    const gateway = this.deps.gateway();
    const workers = [
      ...gateway.agents.list().map((agent) => ({ id: agent.config.id, worker: `agent:${agent.config.id}`, agent: true })),
      ...(this.deps.remote
        ? gateway.config.a2a.remoteAgents.map((remote) => ({ id: remote.id, worker: `a2a:${remote.id}`, agent: false }))
        : []),
    ];
    for (const { id, worker, agent } of workers) {
      let free =
        this.settings.maxConcurrentPerAgent -
        [...this.followers.values()].filter((follower) => (agent ? follower.agentId : follower.remote) === id).length;
      while (free > 0 && !this.stopped) {
        const claim = await store.claim({ worker, assignee: id, ttlMs: this.claimMs }, clock.now());
        if (!claim) break;
        this.wrote = true;
        free -= 1;
        if (agent) await this.handToAgent(claim, id);
        else this.followers.set(claim.taskId, newFollower(claim, { remote: id }));
      }
    }
  }

  /** The task becomes an input of the agent's task session (one per attempt, so a repeat after a restart is the same input). */
  private async handToAgent(claim: BoardClaim, agentId: string): Promise<void> {
    const view = await this.deps.store.view(claim.taskId, { comments: 20 });
    if (!view) return;
    try {
      // The task's session (`agent:<id>:board:<taskId>`), created on first use; one input per attempt, whatever the retries.
      const { input } = await this.deps.gateway().accept(
        {
          idempotencyKey: `board:${claim.taskId}:${claim.attempt}`,
          mode: 'followup',
          text: agentTaskPrompt(view, this.deps.gateway().config.gateway.maxMessageChars),
          // Every attempt joins the trace of the span that created the task; a task nobody traced is a trace of its own.
          provenance: { kind: 'board', channel: 'board', peer: claim.taskId, trace: view.task.trace ?? boardTraceparent(claim.taskId) },
          // The hop budget: the conversation the task's creating run was in, one hop further (core/hops.ts).
          conversation: view.task.conversation ?? undefined,
        },
        {
          sessionKey: boardSessionKey(agentId, claim.taskId),
          agentId,
          label: `board:${claim.taskId}`,
          whenStopping: 'the board hands the task over again once it has restarted',
        },
      );
      this.followers.set(claim.taskId, newFollower(claim, { agentId, board: view.task.board, inputId: input.id }));
      // The attempt names its input, so that `board show` can name the run that took it; a claim lost meanwhile leaves it unnamed.
      await this.deps.store.noteRef(claim.taskId, claim.token, input.id, this.deps.clock.now()).catch(() => {});
    } catch (error) {
      if (SwitchboardError.isInstance(error) && error.code === 'GATEWAY_STOPPING') return;
      if (SwitchboardError.isInstance(error) && error.code === 'HOP_LIMIT_EXCEEDED') {
        // Another attempt would be refused the same way: the task waits for a person, with the reason.
        this.wrote = true;
        await this.writes!.block(claim.taskId, claim.token, { kind: 'failed', reason: error.message }, this.deps.clock.now()).catch(
          (blocked) => {
            if (!(SwitchboardError.isInstance(blocked) && blocked.code === 'CLAIM_LOST')) throw blocked;
          },
        );
        return;
      }
      await this.failQuietly(claim.taskId, claim.token, `could not hand the task to agent ${agentId}: ${errorMessage(error)}`);
    }
  }

  /** A followed task: its run's end, or the remote task's state, settles it; meanwhile its claim is kept alive. */
  private async check(follower: Follower): Promise<void> {
    const now = this.deps.clock.now();
    try {
      if (follower.inputId) {
        const outcome = await this.deps.gateway().inputOutcome(follower.inputId);
        if (outcome) return await this.settleAgentRun(follower, outcome);
      } else if (follower.remote) {
        if (follower.pollingSince === undefined && now >= follower.nextPollAt) this.pollInBackground(follower);
        // A remote that fails, or takes longer than a claim lasts, gets no renewal: its claim expires and counts.
        if (follower.failing || (follower.pollingSince !== undefined && now - follower.pollingSince > this.claimMs)) return;
      }
      if (now >= follower.nextBeatAt) {
        await this.writes!.heartbeat(follower.taskId, follower.token, this.claimMs, now);
        follower.nextBeatAt = now + this.claimMs / 3;
      }
    } catch (error) {
      if (SwitchboardError.isInstance(error) && error.code === 'CLAIM_LOST') return this.lost(follower);
      if (SwitchboardError.isInstance(error) && error.code === 'DISPATCHER_LEASE_LOST') throw error;
      this.deps.log('warn', `board: following task ${follower.taskId}: ${errorMessage(error)}`);
    }
  }

  private pollInBackground(follower: Follower): void {
    follower.pollingSince = this.deps.clock.now();
    this.pollRemote(follower)
      .then(async (ended) => {
        follower.failing = false;
        if (ended) await this.deps.gateway().publishJournal();
      })
      .catch((error) => {
        if (this.stopped) return;
        if (SwitchboardError.isInstance(error) && error.code === 'CLAIM_LOST') return this.lost(follower);
        if (SwitchboardError.isInstance(error) && error.code === 'DISPATCHER_LEASE_LOST') return this.leaseLost(error.message);
        follower.failing = true;
        this.deps.log('warn', `board: remote agent ${follower.remote} on task ${follower.taskId}: ${errorMessage(error)}`);
      })
      .finally(() => (follower.pollingSince = undefined));
  }

  /**
   * The claim ended. Under the same token the worker ended it itself (completed, blocked): its run finishes
   * its last step. A token that moved means the task was cancelled or taken back: the run, if it still runs,
   * is stopped.
   */
  private async lost(follower: Follower): Promise<void> {
    this.followers.delete(follower.taskId);
    if ((await this.deps.store.get(follower.taskId))?.token !== follower.token) await this.stopRun(follower);
  }

  private async stopRun(follower: Follower): Promise<void> {
    const runId = follower.inputId ? await this.deps.gateway().inputRunId(follower.inputId) : undefined;
    if (runId)
      await this.deps
        .gateway()
        .cancelRun(runId)
        .catch(() => {});
  }

  private async settleAgentRun(follower: Follower, outcome: Exclude<WaitResult, { status: 'timeout' }>): Promise<void> {
    this.followers.delete(follower.taskId);
    const task = await this.deps.store.get(follower.taskId);
    if (task?.state !== 'running' || task.token !== follower.token) return;
    await this.failQuietly(follower.taskId, follower.token, runEndReason(outcome));
  }

  /** True once the remote task ended and the board task was settled from it; false while it goes on. */
  private async pollRemote(follower: Follower): Promise<boolean> {
    const store = this.writes;
    // The lease was lost while the poll was under way: the next holder follows the task.
    if (!store) return false;
    // The remote agent's work joins the task's trace: the request carries its traceparent (docs/observability.md).
    const task = await this.deps.store.get(follower.taskId);
    const trace = parseTraceparent(task?.trace ?? boardTraceparent(follower.taskId));
    const ended = await traceScope.run(trace, () =>
      pollAndSettle(follower, {
        workers: this.deps.remote!,
        store,
        clock: this.deps.clock,
        maxPollMs: this.deps.gateway().config.a2a.client.maxPollSeconds * 1000,
        maxResultChars: this.settings.maxResultChars,
      }),
    );
    if (ended) this.followers.delete(follower.taskId);
    return ended;
  }

  private async failQuietly(taskId: string, token: number, why: string): Promise<void> {
    this.wrote = true;
    await this.writes!.fail(taskId, token, why, this.deps.clock.now()).catch((error) => {
      if (!(SwitchboardError.isInstance(error) && error.code === 'CLAIM_LOST')) throw error;
    });
  }
}
