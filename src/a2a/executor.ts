/**
 * The SDK's AgentExecutor for one exposed agent: an A2A message becomes a durable input of the session
 * of its context, the run's streamed text becomes artifact chunks, and the run's outcome the task's
 * final state: completed (its answer as an artifact, with a data part when the answer is JSON), failed,
 * canceled, or rejected when the peer may not use the skill it named (task-outcome.ts decides which).
 */
import { Task, TaskState, type Message, type TaskStatus } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext, type ServerCallContext } from '@a2a-js/sdk/server';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { a2aSessionKey } from '../core/session-key.js';
import type { Accepted, Control, Events, Intake, Presence, Queries, Waits, WaitResult } from '../ports/gateway.js';
import type { A2ATaskEventInput, A2ATaskStore, Clock } from '../ports/index.js';
import { ownerOf } from './task-store.js';
import {
  agentMessage,
  answerUpdate,
  CANCELED_TEXT,
  finalOutcome,
  messageEvent,
  requestedInput,
  stateEvent,
  workingEvent,
  type FinalOutcome,
} from './task-outcome.js';
import { NO_RELAY, relayDeltas, type DeltaRelay } from './delta-relay.js';
import type { PeerUser } from './peers.js';
import { A2AAdmission, type MessageCall } from './admission.js';

export { textPart } from './task-outcome.js';

/** What the executor asks of the door: taking a message in, waiting for its run, cancelling it, and watching it. */
export type ExecutorGateway = Intake &
  Pick<Presence, 'gatewayId'> &
  Pick<Waits, 'waitForInput' | 'inputRunId'> &
  Pick<Control, 'cancelInput'> &
  Pick<Events, 'subscribe' | 'watchDeltas'> &
  Pick<Queries, 'runToolCalls'>;

export class GatewayAgentExecutor implements AgentExecutor {
  private readonly cancelled = new Set<string>();
  /** Tasks this process is executing now; the task watch leaves them to the executor. */
  readonly active = new Set<string>();
  /**
   * Tasks this executor finished in the last minute, oldest first. The SDK saves the final state from the
   * events after `execute` has returned, so until then the store still says working, and the task watch
   * must not finish such a task a second time.
   */
  private readonly finishedAt = new Map<string, number>();

  /** A message's checks and its accept (admission.ts). */
  readonly admission: A2AAdmission;

  /** Whether this executor runs the task, or finished it so lately that its final state may not be saved yet. */
  handles(taskId: string): boolean {
    return this.active.has(taskId) || this.finishedAt.has(taskId);
  }

  constructor(
    private readonly gateway: ExecutorGateway,
    private readonly agentId: string,
    private readonly tasks: A2ATaskStore,
    private readonly clock: Clock,
    /** How long one message may take before its task is failed as stalled (a2a.server.taskStallSeconds). */
    private readonly stallMs: number,
    /** Calls whose client waits for the final task (a blocking SendMessage): nobody reads their chunks, so the run does not stream. */
    private readonly blockingCalls: WeakSet<ServerCallContext> = new WeakSet(),
  ) {
    this.admission = new A2AAdmission(gateway, agentId, tasks, clock);
  }

  private status(state: TaskState, taskId: string, contextId: string, text?: string): TaskStatus {
    return {
      state,
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
      timestamp: new Date(this.clock.now()).toISOString(),
    };
  }

  /** Notes that this executor finished the task now (see `finishedAt`). */
  private noteFinished(taskId: string): void {
    const now = this.clock.now();
    this.finishedAt.delete(taskId);
    this.finishedAt.set(taskId, now);
    for (const [id, at] of this.finishedAt) {
      if (now - at < 60_000) break;
      this.finishedAt.delete(id);
    }
  }

  private async finish(bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, text?: string): Promise<void> {
    this.noteFinished(taskId);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: this.status(state, taskId, contextId, text), metadata: {} }));
    await this.tasks.appendEvent(taskId, 'state', stateEvent(state, text), this.clock.now());
    bus.finished();
  }

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    // Active from before the SDK saves the task's first snapshot: until its message is an input, the task watch must
    // not take the task for one whose executor is gone (it would adopt it a second time).
    await this.track(context.taskId, () => this.executeTracked(context, bus));
  }

  private async executeTracked(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const message = context.userMessage;
    // Every execution starts with the task (the SDK requires it, follow-up messages included); the SDK
    // has already added this message to a known task's history.
    bus.publish(
      AgentEvent.task(
        context.task ?? {
          id: taskId,
          contextId,
          status: this.status(TaskState.TASK_STATE_SUBMITTED, taskId, contextId),
          artifacts: [],
          history: [message],
          metadata: {},
        },
      ),
    );
    const owner = ownerOf(context.context);
    const call: MessageCall = { taskId, contextId, owner, peer: (context.context.user as PeerUser | undefined)?.peer, checkContext: true };
    await this.tasks.appendEvent(taskId, 'message', messageEvent(message, owner), this.clock.now());
    let sessionKey = '';
    let inputId = '';
    const progress: TaskProgress = {
      relay: () =>
        this.blockingCalls.has(context.context)
          ? NO_RELAY
          : relayDeltas(this.gateway, bus, { taskId, contextId, sessionKey: a2aSessionKey(this.agentId, owner, contextId) }),
      attached: async (session, input) => {
        sessionKey = session;
        inputId = input;
        await this.tasks.attachInput(
          { id: taskId, agentId: this.agentId, contextId, owner },
          session,
          input,
          this.gateway.gatewayId,
          this.clock.now(),
        );
      },
      working: async () => {
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: this.status(TaskState.TASK_STATE_WORKING, taskId, contextId),
            metadata: {},
          }),
        );
        await this.tasks.appendEvent(taskId, 'state', workingEvent(sessionKey, inputId), this.clock.now());
      },
      end: async (outcome) => {
        if (outcome.parts && outcome.inputId) bus.publish(AgentEvent.artifactUpdate(answerUpdate(taskId, contextId, outcome)));
        await this.finish(bus, taskId, contextId, outcome.state, outcome.text);
      },
    };
    await this.process(message, call, progress);
  }

  /**
   * A blocking SendMessage of a new task, without the SDK's ResultManager (which loads and saves the whole task on
   * each event): the task is written when it starts working, with its input, and when it ends; subscribers that
   * came meanwhile (through ListTasks) get its events on `bus`. Resolves to the task as it ended.
   */
  async answerBlocking(message: Message, call: MessageCall, bus: ExecutionEventBus): Promise<Task> {
    const { taskId, contextId, owner } = call;
    const task: Task = {
      id: taskId,
      contextId,
      status: this.status(TaskState.TASK_STATE_WORKING, taskId, contextId),
      artifacts: [],
      history: [message],
      metadata: {},
    };
    // The task's replay log is written with its state: the message with the first state, each state with its save.
    const save = (events: A2ATaskEventInput[], attach: { sessionKey?: string; inputId?: string; executor?: string } = {}) =>
      this.tasks.save(
        {
          id: taskId,
          agentId: this.agentId,
          contextId,
          owner,
          state: TaskState[task.status!.state],
          task: Task.toJSON(task),
          firstMessageId: message.messageId,
          statusAt: this.clock.now(),
          ...attach,
          events,
        },
        this.clock.now(),
      );
    let unsaved = [{ type: 'message', detail: messageEvent(message, owner) }];
    let attach: { sessionKey: string; inputId: string } | undefined;
    const how = await this.track(taskId, () =>
      this.process(message, call, {
        relay: () => NO_RELAY,
        attached: async (sessionKey, inputId) => {
          attach = { sessionKey, inputId };
        },
        working: async () => {
          await save([...unsaved, { type: 'state', detail: workingEvent(attach!.sessionKey, attach!.inputId) }], {
            ...attach,
            executor: this.gateway.gatewayId,
          });
          unsaved = [];
        },
        end: async (outcome) => {
          this.noteFinished(taskId);
          task.status = this.status(outcome.state, taskId, contextId, outcome.text);
          if (task.status.message) task.history.push(task.status.message);
          const update = outcome.parts && outcome.inputId ? answerUpdate(taskId, contextId, outcome) : undefined;
          if (update?.artifact) task.artifacts.push(update.artifact);
          await save([...unsaved, { type: 'state', detail: stateEvent(outcome.state, outcome.text) }]);
          if (update) bus.publish(AgentEvent.artifactUpdate(update));
          bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: task.status, metadata: {} }));
          bus.finished();
        },
      }),
    );
    if (how === 'stopping' && !attach) throw new Error('the gateway is shutting down; send the message again once it has restarted');
    // Cancelled by the client: the cancel publishes and saves the canceled state, maybe after this answer.
    if (how === 'cancelled') task.status = this.status(TaskState.TASK_STATE_CANCELED, taskId, contextId, CANCELED_TEXT);
    // Ended here, or left working by a gateway that stops (it is finished after the restart).
    return task;
  }

  /** Runs `work` with the task counted as active here. */
  private async track<T>(taskId: string, work: () => Promise<T>): Promise<T> {
    this.active.add(taskId);
    try {
      return await work();
    } finally {
      this.active.delete(taskId);
    }
  }

  /**
   * One message of a task, from the peer's checks to the task's end: the message becomes an input of the session of its
   * context, and the input's outcome the task's final state. Resolves to how it ended here: with a final state, or not
   * at all because the client cancelled it or the gateway is stopping (it is finished after the restart).
   */
  private async process(message: Message, call: MessageCall, progress: TaskProgress): Promise<'ended' | 'cancelled' | 'stopping'> {
    const { taskId, contextId, owner } = call;
    const refusal = await this.admission.refusal(message, call);
    if (refusal !== undefined) {
      await progress.end({ state: TaskState.TASK_STATE_REJECTED, text: refusal });
      return 'ended';
    }
    const relay = progress.relay();
    try {
      let accepted: Accepted;
      try {
        accepted = await this.admission.accept(message, { id: taskId, contextId, owner });
      } catch (error) {
        // A gateway that stops takes no new input, and the message is not refused for it: a task saved already is
        // taken up at the next start (the task watch adopts it); the blocking path saved none, and says so.
        if (this.gateway.stopping) return 'stopping';
        // Past the hop budget the message is refused, as a policy refusal is: the agents were passing it around.
        if (SwitchboardError.isInstance(error) && error.code === 'HOP_LIMIT_EXCEEDED') {
          await progress.end({ state: TaskState.TASK_STATE_REJECTED, text: error.message });
          return 'ended';
        }
        await progress.end({ state: TaskState.TASK_STATE_FAILED, text: `the gateway did not accept the message: ${errorMessage(error)}` });
        return 'ended';
      }
      const { sessionKey, input } = accepted;
      // The wait begins before the task's own writes, so that the commit which consumes a new input hands its run
      // over whenever it comes: the wait reads the input only if it was there before (a retried message).
      const waiting = this.gateway.waitForInput(input.id, this.stallMs, accepted.created);
      waiting.catch(() => {});
      await progress.attached(sessionKey, input.id);
      // A cancel that came before the task knew its input could not stop the input's run: stop it now.
      if (this.cancelled.has(taskId)) await this.gateway.cancelInput(input.id, 'cancelled by the A2A client');
      await progress.working();
      relay.start(input.id);

      let result: WaitResult;
      try {
        result = await waiting;
      } finally {
        await relay.stop();
      }
      if (this.cancelled.delete(taskId)) return 'cancelled';
      // A gateway that stops ends every wait: the task stays working and is finished after the restart.
      if (result.status === 'timeout' && this.gateway.stopping) return 'stopping';
      if (result.status === 'timeout') await this.gateway.cancelInput(input.id, 'its A2A task stalled and was failed');

      const question =
        result.status === 'completed' && result.run.status === 'succeeded' ? await requestedInput(this.gateway, result.run) : undefined;
      await progress.end({ ...finalOutcome(result, this.stallMs, question), inputId: input.id });
      return 'ended';
    } finally {
      await relay.stop();
    }
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const record = await this.tasks.get(taskId);
    this.cancelled.add(taskId);
    if (record?.inputId) await this.gateway.cancelInput(record.inputId, 'cancelled by the A2A client');
    await this.finish(bus, taskId, record?.contextId ?? '', TaskState.TASK_STATE_CANCELED, CANCELED_TEXT);
  }
}

/** What `process` reports as the task moves, for the SDK's event bus or for the blocking path's own writes. */
interface TaskProgress {
  /** Where the run's text goes while it is written. */
  relay(): DeltaRelay;
  /** The message became this input of this session. */
  attached(sessionKey: string, inputId: string): Promise<void>;
  /** The task is working on its input. */
  working(): Promise<void>;
  end(outcome: FinalOutcome & { inputId?: string }): Promise<void>;
}
