/**
 * Hang protection and restart durability for A2A tasks (seed 004 section 6.1). A task whose executor is
 * not running in this process (the gateway restarted while it was working) is finished from its input's
 * outcome as soon as the run commits; a task with no activity past `a2a.server.taskStallSeconds` is
 * failed with a diagnostic instead of staying `working` forever. Subscribers that attached after a
 * restart get the final events on the task's event bus.
 */
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { AgentEvent, ServerCallContext, type ExecutionEventBusManager, type PushNotificationSender } from '@a2a-js/sdk/server';
import { errorMessage } from '../core/errors.js';
import type { SwitchboardConfig } from '../config/schema.js';
import type { GatewayApi } from '../gateway/gateway-api.js';
import type { A2ATaskRecord, A2ATaskStore, Clock } from '../ports/index.js';
import { agentMessage, finalOutcome, requestedInput, stalledOutcome, type FinalOutcome } from './task-outcome.js';
import { PeerUser } from './peers.js';
import { SerialTask } from '../gateway/serial-task.js';

const UNFINISHED = [taskStateToJSON(TaskState.TASK_STATE_SUBMITTED), taskStateToJSON(TaskState.TASK_STATE_WORKING)];

export interface WatchedAgent {
  isActive(taskId: string): boolean;
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

  constructor(
    private readonly gateway: GatewayApi,
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
      if (this.orphans > 0 && event.type === 'journal' && (event.event.type === 'run.completed' || event.event.type === 'input.dropped'))
        void this.passes.kick();
    });
    this.timer = setInterval(() => void this.passes.kick(), intervalMs);
    return this.passes.kick();
  }

  /** Stops watching; resolves once a pass in progress has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.passes.idle();
  }

  private async pass(): Promise<void> {
    const stallMs = this.config.a2a.server.taskStallSeconds * 1000;
    let orphans = 0;
    for (const record of await this.tasks.list({ states: UNFINISHED, limit: 10_000 })) {
      const agent = this.agents.get(record.agentId);
      if (!agent || agent.isActive(record.id)) continue;
      orphans += 1;
      // Subscribers that come after a restart need a bus to wait on.
      agent.buses.createOrGetByTaskId(record.id, this.contextOf(record));
      const outcome = record.inputId ? await this.gateway.inputOutcome(record.inputId) : undefined;
      if (outcome) {
        const question =
          outcome.status === 'completed' && outcome.run.status === 'succeeded'
            ? await requestedInput(this.gateway, outcome.run)
            : undefined;
        await this.finish(record, agent, finalOutcome(outcome, stallMs, question));
      } else if (this.clock.now() - record.lastActivityAt > stallMs) {
        if (record.inputId) await this.gateway.cancelInput(record.inputId, 'its A2A task stalled and was failed');
        await this.finish(record, agent, stalledOutcome(stallMs));
      }
    }
    this.orphans = orphans;
  }

  private contextOf(record: A2ATaskRecord): ServerCallContext {
    const peer = this.config.a2a.server.peers.find((candidate) => candidate.id === record.owner);
    return new ServerCallContext({ user: new PeerUser(peer) });
  }

  private async finish(record: A2ATaskRecord, agent: WatchedAgent, outcome: FinalOutcome): Promise<void> {
    const task = Task.fromJSON(record.task);
    const timestamp = new Date(this.clock.now()).toISOString();
    const message = agentMessage(record.id, record.contextId, outcome.text);
    const artifact = outcome.parts
      ? {
          artifactId: `answer-${record.inputId}`,
          name: 'answer',
          description: '',
          parts: outcome.parts,
          metadata: { runId: outcome.runId },
          extensions: [],
        }
      : undefined;
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
    if (artifact)
      await agent.push.send(
        {
          payload: {
            $case: 'artifactUpdate',
            value: { taskId: record.id, contextId: record.contextId, artifact, append: false, lastChunk: true, metadata: {} },
          },
        },
        context,
        task,
      );
    await agent.push.send(
      { payload: { $case: 'statusUpdate', value: { taskId: record.id, contextId: record.contextId, status: task.status, metadata: {} } } },
      context,
      task,
    );
    const bus = agent.buses.getByTaskId(record.id, context);
    if (bus) {
      try {
        if (artifact)
          bus.publish(
            AgentEvent.artifactUpdate({
              taskId: record.id,
              contextId: record.contextId,
              artifact,
              append: false,
              lastChunk: true,
              metadata: {},
            }),
          );
        bus.publish(AgentEvent.statusUpdate({ taskId: record.id, contextId: record.contextId, status: task.status, metadata: {} }));
        bus.finished();
      } catch (error) {
        this.onError(new Error(`task ${record.id}: ${errorMessage(error)}`));
      }
      agent.buses.cleanupByTaskId(record.id, context);
    }
  }
}
