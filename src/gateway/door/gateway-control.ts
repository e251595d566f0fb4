/**
 * The door's Waits and Control roles: waiting for an input's reply (every wait with a deadline), and what an operator
 * changes (cancels, kills, relabels, dead outbox rows). A run is aborted wherever it runs.
 */
import { SwitchboardError } from '../../core/errors.js';
import { isTerminalRunStatus } from '../../core/run-status.js';
import type { ConfigReload } from '../../config/reload.js';
import type { SwitchboardConfig } from '../../config/schema.js';
import { waitUntil, type Wakeups } from '../../kit/wait-until.js';
import type { Control, Waits, WaitResult } from '../../ports/gateway.js';
import { directSessionKey } from '../../core/session-key.js';
import type {
  Clock,
  EventRecord,
  IdGenerator,
  NewEvent,
  OutboxRecord,
  RunRecord,
  SessionAnnotation,
  SessionRecord,
  Store,
} from '../../ports/index.js';
import type { AgentRegistry } from '../agents/registry.js';
import type { EventBus } from '../events/event-bus.js';
import type { LaneScheduler } from '../runs/lanes.js';
import type { OutboxDispatcher } from '../durability/outbox.js';
import type { Subagents } from '../subagents/subagents.js';

export interface ControlDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  agents: AgentRegistry;
  gatewayId: string;
  /** Where commits say which inputs they consumed, with the run. */
  bus: EventBus;
  /** What every wait sleeps on: journal events, the clock and the gateway stopping. */
  wakeups: Wakeups;
  lanes: LaneScheduler;
  outbox: OutboxDispatcher;
  subagents: Subagents;
  journalEvent(event: NewEvent): Promise<EventRecord>;
  /** After an input was dropped: journalled, and an exchange waiting on it told. */
  onInputDropped(inputId: string, journal?: boolean): Promise<void>;
  /** Takes a new config's reloadable sections (the gateway's own parts reload with it). */
  reloadConfig(next: SwitchboardConfig): ConfigReload;
}

export class GatewayControl implements Waits, Control {
  constructor(private readonly deps: ControlDeps) {}

  /**
   * Waits until the input has been consumed by a run that ended (or was stored, or dropped). Every
   * wait has a deadline: on timeout the input is still delivered and will still be processed. A gateway
   * that stops ends every wait the same way, at once: the input is processed after the restart.
   *
   * `fresh`: the caller created the input a moment ago and waits at once (a waited send), so it is still queued and
   * the first look needs no read. Were it settled in between, the wait would find out at its next look (a second at
   * most), never answer wrongly.
   */
  async waitForInput(inputId: string, timeoutMs: number, fresh = false): Promise<WaitResult> {
    // The commit that consumes the input hands over its run: the answer needs no read of the input and the run.
    let committed: RunRecord | undefined;
    const unsubscribe = this.deps.bus.onSettled(inputId, (run) => (committed = run));
    let skipRead = fresh;
    try {
      const check = async () => {
        if (committed) return { status: 'completed' as const, run: committed, reply: committed.finalText };
        if (!skipRead) return this.inputOutcome(inputId);
        skipRead = false;
        return undefined;
      };
      // A run taking the input changes no answer: only its end, a drop or a store does.
      const settled = await waitUntil(this.deps.clock.now() + timeoutMs, check, this.deps.wakeups, {
        keys: [`input:${inputId}`],
        test: (payload, _sessionKey, type) => {
          const about = payload as { inputIds?: string[]; inputId?: string };
          return type !== 'run.started' && (about.inputIds?.includes(inputId) === true || about.inputId === inputId);
        },
      });
      return settled ?? { status: 'timeout', input: (await this.deps.store.inputs.get(inputId))! };
    } finally {
      unsubscribe();
    }
  }

  /** The run that took an input, once one has. */
  async inputRunId(inputId: string): Promise<string | undefined> {
    return (await this.deps.store.inputs.get(inputId))?.runId ?? undefined;
  }

  /** Cancels an active run, on whichever gateway runs it: it is recorded `cancelled` with its partial output. */
  async cancelRun(runId: string): Promise<boolean> {
    const run = await this.deps.store.runs.get(runId);
    if (!run) throw new SwitchboardError('RUN_NOT_FOUND', `no run "${runId}" (list them with "switchboard runs list")`);
    if (isTerminalRunStatus(run.status)) return false;
    return this.abortRun(runId, 'cancel');
  }

  /**
   * Forks a run at `step` into a new session of its agent, `agent:<agent>:fork:direct:<first 8 of the new run's id>` (a
   * direct session of the `fork` channel: a key every tool and command takes), and wakes it: its lane resumes the new
   * run, which replays the kept steps and asks the model from `step` on (RunStepStore.fork says what is copied).
   */
  async forkRun(runId: string, step: number): Promise<{ sessionKey: string; runId: string }> {
    const run = await this.deps.store.runs.get(runId);
    if (!run) throw new SwitchboardError('RUN_NOT_FOUND', `no run "${runId}" (list them with "switchboard runs list")`);
    if (!this.deps.agents.has(run.agentId))
      throw new SwitchboardError(
        'AGENT_NOT_FOUND',
        `run ${runId} is agent "${run.agentId}"'s, which is no longer configured (agents.list): a fork of it could not run`,
      );
    const forkId = this.deps.ids.next();
    const forked = await this.deps.store.steps.fork(
      {
        fromRunId: run.id,
        step,
        sessionKey: directSessionKey(run.agentId, 'fork', forkId.slice(0, 8)),
        runId: forkId,
        owner: this.deps.gatewayId,
        newId: () => this.deps.ids.next(),
      },
      this.deps.clock.now(),
    );
    this.deps.lanes.wake(forked.sessionKey);
    return { sessionKey: forked.sessionKey, runId: forked.runId };
  }

  /**
   * Aborts a run wherever it runs: at once when it runs here; otherwise through the journal, whose every gateway
   * reads the request and the one running it aborts it (a gateway that died has its runs taken over instead).
   * False when the run is not running.
   */
  async abortRun(runId: string, reason: 'cancel' | 'interrupt'): Promise<boolean> {
    if (this.deps.lanes.abortRun(runId, reason)) return true;
    let run = await this.deps.store.runs.get(runId);
    if (run?.status === 'suspended') {
      // Suspended (in a wait, or for its resume): it is woken and aborted as it resumes, wherever it does.
      const sessionKey = await this.deps.store.runs.requestAbort(runId, reason);
      if (sessionKey) {
        this.deps.lanes.wake(sessionKey);
        return true;
      }
      // It resumed meanwhile: it is running, here or elsewhere.
      if (this.deps.lanes.abortRun(runId, reason)) return true;
      run = await this.deps.store.runs.get(runId);
    }
    if (run?.status !== 'running') return false;
    await this.deps.journalEvent({
      type: 'run.abort_requested',
      sessionKey: run.sessionKey,
      runId,
      payload: { reason, by: this.deps.gatewayId },
    });
    return true;
  }

  /** Stops what an input is doing: its active run is cancelled, or, still queued, it is dropped with `why`. */
  async cancelInput(inputId: string, why: string): Promise<void> {
    const input = await this.deps.store.inputs.get(inputId);
    const status = input?.runId ? (await this.deps.store.runs.get(input.runId))?.status : undefined;
    // A suspended run holds its inputs as a running one does: it is cancelled, not robbed of them.
    if (input?.runId && (status === 'running' || status === 'suspended')) await this.abortRun(input.runId, 'cancel');
    else if (input?.status === 'queued') {
      for (const dropped of await this.deps.store.inputs.drop([inputId], why, this.deps.clock.now()))
        await this.deps.onInputDropped(dropped);
    }
  }
  /** How an input ended (its run's outcome, dropped, or stored by notify); undefined while it is pending. */
  async inputOutcome(inputId: string): Promise<Exclude<WaitResult, { status: 'timeout' }> | undefined> {
    const input = await this.deps.store.inputs.get(inputId);
    if (!input) throw new SwitchboardError('NOT_FOUND', `no input "${inputId}"`);
    if (input.status === 'dropped') return { status: 'dropped', input };
    if (input.status === 'consumed' && !input.runId) return { status: 'stored', input };
    if (input.status === 'consumed' && input.runId) {
      const run = await this.deps.store.runs.get(input.runId);
      if (run && isTerminalRunStatus(run.status)) return { status: 'completed', run, reply: run.finalText };
    }
    return undefined;
  }

  /** A person relabels or (un)archives a session (the console, `sessions label` and `sessions archive`). */
  async annotateSession(key: string, change: SessionAnnotation): Promise<SessionRecord> {
    const session = await this.deps.store.sessions.annotate(key, change, this.deps.clock.now());
    if (!session) throw new SwitchboardError('SESSION_NOT_FOUND', `no session "${key}" (list them with "switchboard sessions list")`);
    return session;
  }

  /** Kills a sub-agent and its descendants (an operator's kill: its parent is told). */
  async killSubagent(target: string, why = 'killed by the operator'): Promise<string[]> {
    return this.deps.subagents.kill(await this.deps.subagents.find(target), why, true);
  }

  /** A dead row delivered again from its first attempt, or dropped for good. */
  settleDeadOutbox(id: string, action: 'retry' | 'drop'): Promise<OutboxRecord> {
    return this.deps.outbox.settleDead(id, action);
  }

  reloadConfig(next: SwitchboardConfig): ConfigReload {
    return this.deps.reloadConfig(next);
  }

  /** Resolves once everything the store committed so far is durable (a waited send that answers before its reply). */
  durable(): Promise<void> {
    return this.deps.store.durable();
  }

  backupStore(path: string): Promise<{ path: string; bytes: number }> {
    return this.deps.store.backup(path);
  }
}
