/**
 * The SDK's AgentExecutor for one exposed agent: an A2A message becomes a durable input of the session
 * of its context, the run's streamed text becomes artifact chunks, and the run's outcome the task's
 * final state: completed (its answer as an artifact, with a data part when the answer is JSON), failed,
 * canceled, or rejected when the peer may not use the skill it named (task-outcome.ts decides which).
 */
import { TaskState, type Message, type TaskStatus } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext, type ServerCallContext } from '@a2a-js/sdk/server';
import { errorMessage } from '../core/errors.js';
import { matchesAny } from '../core/tool-policy.js';
import { a2aSessionKey } from '../core/session-key.js';
import type { WaitResult } from '../gateway/gateway.js';
import type { GatewayApi } from '../gateway/gateway-api.js';
import type { A2ATaskStore, Clock } from '../ports/index.js';
import { ownerOf } from './task-store.js';
import { agentMessage, finalOutcome, messageText, requestedInput, textPart } from './task-outcome.js';
import type { PeerUser } from './peers.js';

export { textPart } from './task-outcome.js';

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

  /** Whether this executor runs the task, or finished it so lately that its final state may not be saved yet. */
  handles(taskId: string): boolean {
    return this.active.has(taskId) || this.finishedAt.has(taskId);
  }

  constructor(
    private readonly gateway: GatewayApi,
    private readonly agentId: string,
    private readonly tasks: A2ATaskStore,
    private readonly clock: Clock,
    /** How long one message may take before its task is failed as stalled (a2a.server.taskStallSeconds). */
    private readonly stallMs: number,
    /** Calls whose client waits for the final task (a blocking SendMessage): nobody reads their chunks, so the run does not stream. */
    private readonly blockingCalls: WeakSet<ServerCallContext> = new WeakSet(),
  ) {}

  private status(state: TaskState, taskId: string, contextId: string, text?: string): TaskStatus {
    return {
      state,
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
      timestamp: new Date(this.clock.now()).toISOString(),
    };
  }

  private async finish(bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, text?: string): Promise<void> {
    const now = this.clock.now();
    this.finishedAt.delete(taskId);
    this.finishedAt.set(taskId, now);
    for (const [id, at] of this.finishedAt) {
      if (now - at < 60_000) break;
      this.finishedAt.delete(id);
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: this.status(state, taskId, contextId, text), metadata: {} }));
    await this.tasks.appendEvent(
      taskId,
      'state',
      { state: TaskState[state], ...(text === undefined ? {} : { message: text }) },
      this.clock.now(),
    );
    bus.finished();
  }

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    this.active.add(context.taskId);
    try {
      await this.run(context, bus);
    } finally {
      this.active.delete(context.taskId);
    }
  }

  private async run(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const message = context.userMessage;
    const peer = (context.context.user as PeerUser | undefined)?.peer;
    const owner = ownerOf(context.context);
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
    const text = messageText(message);
    await this.tasks.appendEvent(taskId, 'message', { role: 'user', messageId: message.messageId, peer: owner, text }, this.clock.now());

    const skillId = typeof message.metadata?.skillId === 'string' ? message.metadata.skillId : undefined;
    if (peer?.skills && !(skillId && matchesAny(skillId, peer.skills))) {
      const why = skillId
        ? `peer "${peer.id}" may not use skill "${skillId}" (a2a.server.peers[].skills allows ${peer.skills.join(', ')})`
        : `peer "${peer.id}" may only use the skills ${peer.skills.join(', ')}; name one in the message's metadata as skillId`;
      return this.finish(bus, taskId, contextId, TaskState.TASK_STATE_REJECTED, why);
    }

    // A context belongs to the peer that opened it: another peer's id is refused, not joined.
    if ((await this.tasks.otherContextOwner(this.agentId, contextId, owner)) !== undefined) {
      return this.finish(
        bus,
        taskId,
        contextId,
        TaskState.TASK_STATE_REJECTED,
        `context "${contextId}" belongs to another peer; send without a contextId to start a context of your own`,
      );
    }

    const relay = this.blockingCalls.has(context.context)
      ? NO_RELAY
      : relayDeltas(this.gateway, bus, { taskId, contextId, sessionKey: a2aSessionKey(this.agentId, owner, contextId) });
    try {
      await this.answer(bus, message, { taskId, contextId, owner, text }, relay);
    } finally {
      await relay.stop();
    }
  }

  private async answer(
    bus: ExecutionEventBus,
    message: Message,
    { taskId, contextId, owner, text }: { taskId: string; contextId: string; owner: string; text: string },
    relay: DeltaRelay,
  ): Promise<void> {
    let accepted: Awaited<ReturnType<GatewayApi['acceptA2AMessage']>>;
    try {
      accepted = await this.gateway.acceptA2AMessage({
        agentId: this.agentId,
        contextId,
        taskId,
        messageId: message.messageId,
        text,
        peer: owner,
      });
    } catch (error) {
      return this.finish(
        bus,
        taskId,
        contextId,
        TaskState.TASK_STATE_FAILED,
        `the gateway did not accept the message: ${errorMessage(error)}`,
      );
    }
    const { sessionKey, input } = accepted;
    await this.tasks.attachInput(
      { id: taskId, agentId: this.agentId, contextId, owner },
      sessionKey,
      input.id,
      this.gateway.gatewayId,
      this.clock.now(),
    );
    // A cancel that came before the task knew its input could not stop the input's run: stop it now.
    if (this.cancelled.has(taskId)) await this.gateway.cancelInput(input.id, 'cancelled by the A2A client');
    bus.publish(
      AgentEvent.statusUpdate({ taskId, contextId, status: this.status(TaskState.TASK_STATE_WORKING, taskId, contextId), metadata: {} }),
    );
    await this.tasks.appendEvent(taskId, 'state', { state: 'TASK_STATE_WORKING', sessionKey, inputId: input.id }, this.clock.now());
    relay.start(input.id);

    let result: WaitResult;
    try {
      result = await this.gateway.waitForInput(input.id, this.stallMs);
    } finally {
      await relay.stop();
    }
    if (this.cancelled.delete(taskId)) return;
    // A gateway that stops ends every wait: the task stays working and is finished after the restart.
    if (result.status === 'timeout' && this.gateway.stopping) return;
    if (result.status === 'timeout') await this.gateway.cancelInput(input.id, 'its A2A task stalled and was failed');

    const question =
      result.status === 'completed' && result.run.status === 'succeeded' ? await requestedInput(this.gateway, result.run) : undefined;
    const outcome = finalOutcome(result, this.stallMs, question);
    if (outcome.parts) {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: answerArtifactId(input.id),
            name: 'answer',
            description: '',
            parts: outcome.parts,
            metadata: { runId: outcome.runId },
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: {},
        }),
      );
    }
    return this.finish(bus, taskId, contextId, outcome.state, outcome.text);
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const record = await this.tasks.get(taskId);
    this.cancelled.add(taskId);
    if (record?.inputId) await this.gateway.cancelInput(record.inputId, 'cancelled by the A2A client');
    await this.finish(bus, taskId, record?.contextId ?? '', TaskState.TASK_STATE_CANCELED, 'canceled by the client');
  }
}

const answerArtifactId = (inputId: string) => `answer-${inputId}`;

interface DeltaRelay {
  /** The task is working on this input: pass on its run's chunks (those written so far first). */
  start(inputId: string): void;
  /** No more chunks; resolves once those already taken are published. */
  stop(): Promise<void>;
}

const NO_RELAY: DeltaRelay = { start: () => {}, stop: async () => {} };

/**
 * The run's text as it is written, as chunks of one artifact; the final answer replaces them. Watched from
 * before the input is stored, so that its run streams and no chunk is missed, and held until the task
 * is working. Only the run that took this message counts (another task of the same context may run
 * first): a delta from a run not yet known is checked against the input's run, in order.
 */
function relayDeltas(
  gateway: GatewayApi,
  bus: ExecutionEventBus,
  { taskId, contextId, sessionKey }: { taskId: string; contextId: string; sessionKey: string },
): DeltaRelay {
  let started!: (inputId: string | undefined) => void;
  const working = new Promise<string | undefined>((resolve) => (started = resolve));
  const runs = new Map<string, boolean>();
  let chunks = 0;
  let pending = Promise.resolve();
  const unwatch = gateway.watchDeltas(sessionKey);
  const unsubscribe = gateway.subscribe((live) => {
    if (live.type !== 'delta' || live.sessionKey !== sessionKey) return;
    pending = pending.then(async () => {
      const inputId = await working;
      if (inputId === undefined) return;
      // Never reject: nobody awaits this chain until the end.
      if (!runs.has(live.runId)) runs.set(live.runId, (await gateway.inputRunId(inputId).catch(() => undefined)) === live.runId);
      if (!runs.get(live.runId)) return;
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: answerArtifactId(inputId),
            name: 'answer',
            description: '',
            parts: [textPart(live.text)],
            metadata: {},
            extensions: [],
          },
          append: chunks++ > 0,
          lastChunk: false,
          metadata: {},
        }),
      );
    });
  });
  return {
    start: (inputId) => started(inputId),
    stop: async () => {
      unsubscribe();
      unwatch();
      started(undefined);
      await pending;
    },
  };
}
