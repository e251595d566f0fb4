/**
 * Hang protection and restart durability for A2A tasks (seed 004 section 6.1). A task whose executor is
 * not running in this process (the gateway restarted while it was working) is finished from its input's
 * outcome as soon as the run commits; a task with no activity past `a2a.server.taskStallSeconds` is
 * failed with a diagnostic instead of staying `working` forever. Subscribers that attached after a
 * restart get the final events on the task's event bus.
 *
 * With several gateways on one database, a task whose executor runs on another gateway that is alive is that
 * executor's to finish: here, a subscriber (a resubscribe that reached this gateway) gets the final state that
 * gateway saved, once it has. A task whose executor's gateway is gone is finished here, as after a restart.
 */
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { AgentEvent, ServerCallContext, type ExecutionEventBusManager, type PushNotificationSender } from '@a2a-js/sdk/server';
import { errorMessage } from '../core/errors.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { Control, Events, Intake, Presence, Queries, Waits } from '../ports/gateway.js';
import type { A2ATaskRecord, A2ATaskStore, Clock } from '../ports/index.js';
import { agentMessage, answerUpdate, finalOutcome, requestedInput, stalledOutcome, type FinalOutcome } from './task-outcome.js';
import { PeerUser } from './peers.js';
import { SerialTask } from '../kit/serial-task.js';

const MIRROR_RECHECK_MS = 300;
const UNFINISHED = [taskStateToJSON(TaskState.TASK_STATE_SUBMITTED), taskStateToJSON(TaskState.TASK_STATE_WORKING)];

export interface WatchedAgent {
  isActive(taskId: string): boolean;
  /** Takes up a task saved before its message became an input (A2AAdmission.adopt). */
  adopt(record: A2ATaskRecord, peer: PeerUser['peer']): Promise<{ inputId: string } | { refused: string } | undefined>;
  buses: ExecutionEventBusManager;
  /** Sends the event to the task's push notification configs. */
  push: PushNotificationSender;
}

export class A2ATaskWatch {
  private timer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  /** A run that ends during a pass causes one more pass, so no task waits for the next interval. */
  private readonly passes: SerialTask;
  /**
   * Unfinished tasks the last pass found with no executor here (after a restart). Only while there are
   * some does a run's end cause a pass: the tasks of live executors are theirs to finish, and listing
   * every unfinished task on every run's end costs, under load, a scan per request.
   */
  private orphans = 0;
  /** Unfinished tasks another live gateway's executor works on, relayed to subscribers here when they end. */
  private mirrored = new Set<string>();
  private recheck?: NodeJS.Timeout;

  constructor(
    private readonly gateway: Pick<Presence, 'gatewayId' | 'gateways'> &
      Pick<Intake, 'stopping'> &
      Pick<Control, 'cancelInput'> &
      Pick<Waits, 'inputOutcome'> &
      Pick<Events, 'subscribe'> &
      Pick<Queries, 'runToolCalls'>,
    private readonly tasks: A2ATaskStore,
    private readonly config: SwitchboardConfig,
    private readonly agents: Map<string, WatchedAgent>,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void,
  ) {
    this.passes = new SerialTask(() => this.pass(), onError);
  }

  /** Resolves after the first pass. */
  start(intervalMs: number): Promise<void> {
    this.unsubscribe = this.gateway.subscribe((event) => {
      if (this.orphans === 0 || event.type !== 'journal' || (event.event.type !== 'run.completed' && event.event.type !== 'input.dropped'))
        return;
      void this.passes.kick();
      // Another gateway's executor saves its task's end a moment after the run: look again then.
      if (this.mirrored.size > 0 && !this.recheck)
        this.recheck = setTimeout(() => {
          this.recheck = undefined;
          void this.passes.kick();
        }, MIRROR_RECHECK_MS);
    });
    this.timer = setInterval(() => void this.passes.kick(), intervalMs);
    return this.passes.kick();
  }

  /** Stops watching; resolves once a pass in progress has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.recheck) clearTimeout(this.recheck);
    this.unsubscribe?.();
    await this.passes.idle();
  }

  private async pass(): Promise<void> {
    const stallMs = this.config.a2a.server.taskStallSeconds * 1000;
    const unfinished = await this.tasks.list({ states: UNFINISHED, limit: 10_000 });
    const alive = await this.liveExecutors(unfinished);
    let orphans = 0;
    const mirrored = new Set<string>();
    for (const record of unfinished) {
      const agent = this.agents.get(record.agentId);
      if (!agent || agent.isActive(record.id)) continue;
      // Subscribers that come after a restart, or to another gateway than the executor's, need a bus to wait on.
      agent.buses.createOrGetByTaskId(record.id, this.contextOf(record));
      if (record.executor && alive.has(record.executor)) {
        mirrored.add(record.id);
        continue;
      }
      orphans += 1;
      const inputId = record.inputId ?? (await this.adopt(record, agent));
      if (inputId === null) continue;
      const outcome = inputId ? await this.gateway.inputOutcome(inputId) : undefined;
      if (outcome) {
        const question =
          outcome.status === 'completed' && outcome.run.status === 'succeeded'
            ? await requestedInput(this.gateway, outcome.run)
            : undefined;
        await this.finish(record, agent, { ...finalOutcome(outcome, stallMs, question), inputId });
      } else if (this.clock.now() - record.lastActivityAt > stallMs) {
        if (inputId) await this.gateway.cancelInput(inputId, 'its A2A task stalled and was failed');
        await this.finish(record, agent, stalledOutcome(stallMs));
      }
    }
    for (const id of this.mirrored) if (!mirrored.has(id)) await this.relayEnd(id);
    this.mirrored = mirrored;
    this.orphans = orphans + mirrored.size;
  }

  /**
   * The input of a task whose executor stopped between saving the task and accepting its message: the message is
   * accepted now. Null when it was refused or could not be taken (the task is finished here as rejected or failed, as
   * the executor would have; left for the next start when the gateway is stopping), undefined when there is no message
   * to take (the task is left to the stall rule). One task's failure does not hold up the others.
   */
  private async adopt(record: A2ATaskRecord, agent: WatchedAgent): Promise<string | null | undefined> {
    const peer = this.config.a2a.server.peers.find((candidate) => candidate.id === record.owner);
    let adopted: Awaited<ReturnType<WatchedAgent['adopt']>>;
    try {
      adopted = await agent.adopt(record, peer);
    } catch (error) {
      if (this.gateway.stopping) return null;
      await this.finish(record, agent, {
        state: TaskState.TASK_STATE_FAILED,
        text: `the gateway did not accept the message: ${errorMessage(error)}`,
      });
      return null;
    }
    if (adopted && 'refused' in adopted) {
      await this.finish(record, agent, { state: TaskState.TASK_STATE_REJECTED, text: adopted.refused });
      return null;
    }
    return adopted?.inputId;
  }

  /** The other gateways that are alive, when some unfinished task's executor is one of them. */
  private async liveExecutors(unfinished: readonly A2ATaskRecord[]): Promise<Set<string>> {
    const me = this.gateway.gatewayId;
    if (!unfinished.some((record) => record.executor && record.executor !== me)) return new Set();
    const gateways = await this.gateway.gateways();
    return new Set(gateways.filter((gateway) => gateway.alive && gateway.id !== me).map((gateway) => gateway.id));
  }

  /** A task another gateway's executor ended: its subscribers here get the state (and answer) that gateway saved. */
  private async relayEnd(taskId: string): Promise<void> {
    const record = await this.tasks.get(taskId);
    const agent = record && this.agents.get(record.agentId);
    if (!record || !agent) return;
    const context = this.contextOf(record);
    const bus = agent.buses.getByTaskId(taskId, context);
    if (!bus) return;
    const task = Task.fromJSON(record.task);
    try {
      for (const artifact of task.artifacts)
        bus.publish(
          AgentEvent.artifactUpdate({ taskId, contextId: record.contextId, artifact, append: false, lastChunk: true, metadata: {} }),
        );
      if (task.status) bus.publish(AgentEvent.statusUpdate({ taskId, contextId: record.contextId, status: task.status, metadata: {} }));
      bus.finished();
    } catch (error) {
      this.onError(new Error(`task ${taskId}: ${errorMessage(error)}`));
    }
    agent.buses.cleanupByTaskId(taskId, context);
  }

  private contextOf(record: A2ATaskRecord): ServerCallContext {
    const peer = this.config.a2a.server.peers.find((candidate) => candidate.id === record.owner);
    return new ServerCallContext({ user: new PeerUser(peer) });
  }

  /** Saves and announces the task's end; an answer (`parts`) is the artifact of the input it answers. */
  private async finish(record: A2ATaskRecord, agent: WatchedAgent, outcome: FinalOutcome & { inputId?: string }): Promise<void> {
    const task = Task.fromJSON(record.task);
    const timestamp = new Date(this.clock.now()).toISOString();
    const message = agentMessage(record.id, record.contextId, outcome.text);
    const update = outcome.parts && outcome.inputId ? answerUpdate(record.id, record.contextId, outcome) : undefined;
    const artifact = update?.artifact;
    task.status = { state: outcome.state, message, timestamp };
    task.history = [...task.history, message];
    if (artifact) task.artifacts = [...task.artifacts.filter((existing) => existing.artifactId !== artifact.artifactId), artifact];
    const state = taskStateToJSON(outcome.state);
    await this.tasks.save(
      {
        id: record.id,
        agentId: record.agentId,
        contextId: record.contextId,
        owner: record.owner,
        state,
        task: Task.toJSON(task),
        statusAt: Date.parse(timestamp),
      },
      this.clock.now(),
    );
    await this.tasks.appendEvent(
      record.id,
      'state',
      { state, message: outcome.text, by: 'task watch (no live executor)' },
      this.clock.now(),
    );
    const context = this.contextOf(record);
    if (update) await agent.push.send({ payload: { $case: 'artifactUpdate', value: update } }, context, task);
    await agent.push.send(
      { payload: { $case: 'statusUpdate', value: { taskId: record.id, contextId: record.contextId, status: task.status, metadata: {} } } },
      context,
      task,
    );
    const bus = agent.buses.getByTaskId(record.id, context);
    if (bus) {
      try {
        if (update) bus.publish(AgentEvent.artifactUpdate(update));
        bus.publish(AgentEvent.statusUpdate({ taskId: record.id, contextId: record.contextId, status: task.status, metadata: {} }));
        bus.finished();
      } catch (error) {
        this.onError(new Error(`task ${record.id}: ${errorMessage(error)}`));
      }
      agent.buses.cleanupByTaskId(record.id, context);
    }
  }
}
