/**
 * An A2A message at an exposed agent's door: the peer's checks (the skills its entry allows, a context of its own), and
 * the message as a durable input of its context's session, one per task and message however often it comes (the
 * idempotency key is made of both ids). Used by the executor for each message, by the task store before the SDK saves a
 * follow-up into its task's history, and by the task watch for a task saved before its message became an input.
 */
import { carriedConversation } from '../core/hops.js';
import { Role, Task, TaskState, type Message } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { SwitchboardError } from '../core/errors.js';
import { a2aSessionKey } from '../core/session-key.js';
import { matchesAny } from '../core/tool-policy.js';
import type { Accepted, Intake, Presence } from '../ports/gateway.js';
import type { A2ATaskRecord, A2ATaskStore, Clock } from '../ports/index.js';
import type { PeerUser } from './peers.js';
import { ownerOf } from './task-store.js';
import { messageText, workingEvent } from './task-outcome.js';

/** Who sent a message of a task, and whether its context must be checked (a context the client named). */
export interface MessageCall {
  taskId: string;
  contextId: string;
  owner: string;
  peer?: PeerUser['peer'];
  /** The client named the context (not a new one this server made): it must be the client's own. */
  checkContext: boolean;
}

function isHopRefusal(error: unknown): error is SwitchboardError {
  return SwitchboardError.isInstance(error) && error.code === 'HOP_LIMIT_EXCEEDED';
}

const WAITING_FOR_CLIENT = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

export class A2AAdmission {
  constructor(
    private readonly gateway: Intake & Pick<Presence, 'gatewayId'>,
    private readonly agentId: string,
    private readonly tasks: A2ATaskStore,
    private readonly clock: Clock,
  ) {}

  /**
   * A task whose first snapshot was saved before its message became an input, and whose executor is gone (the gateway
   * stopped or died in between): its message is checked as a new one is and accepted (the same input if it was, since
   * the key is the task's and the message's id), and the task is attached to it. The caller finishes the task from the
   * input's outcome. Undefined when the snapshot holds no first message to take.
   */
  async adopt(record: A2ATaskRecord, peer: PeerUser['peer']): Promise<{ inputId: string } | { refused: string } | undefined> {
    const message = Task.fromJSON(record.task).history[0];
    if (!message?.messageId) return undefined;
    const { id: taskId, contextId, owner } = record;
    const refused = await this.refusal(message, { taskId, contextId, owner, peer, checkContext: true });
    if (refused !== undefined) return { refused };
    let accepted: Awaited<ReturnType<A2AAdmission['accept']>>;
    try {
      accepted = await this.accept(message, record);
    } catch (error) {
      // Past the hop budget the task is rejected with the reason, as the executor rejects a new message.
      if (isHopRefusal(error)) return { refused: error.message };
      throw error;
    }
    const { sessionKey, input } = accepted;
    await this.tasks.attachInput(record, sessionKey, input.id, this.gateway.gatewayId, this.clock.now());
    await this.tasks.appendEvent(taskId, 'state', workingEvent(sessionKey, input.id), this.clock.now());
    return { inputId: input.id };
  }

  /**
   * A follow-up to a task that waits for the client (`input-required`, `auth-required`), as the SDK saves the task with
   * it last in its history before the executor runs: the message becomes an input first, so that no crash leaves it in
   * the history with no input (a retry reaches the same input). A message the peer may not send is left to `execute`,
   * which rejects it; a message the gateway cannot take fails the save, and so the request.
   */
  async acceptFollowUp(task: Task, context: ServerCallContext): Promise<void> {
    const message = task.history.at(-1);
    if (message?.role !== Role.ROLE_USER || !WAITING_FOR_CLIENT.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) return;
    const owner = ownerOf(context);
    const call = {
      taskId: task.id,
      contextId: task.contextId,
      owner,
      peer: (context.user as PeerUser | undefined)?.peer,
      checkContext: true,
    };
    if ((await this.refusal(message, call)) !== undefined) return;
    // A message past the hop budget is left to `execute` too, which rejects it with the reason (the save goes on).
    await this.accept(message, { id: task.id, contextId: task.contextId, owner }).catch((error: unknown) => {
      if (!isHopRefusal(error)) throw error;
    });
  }

  /** The message as an input of its context's session; one input per task and message, however often it comes. */
  accept(message: Message, task: { id: string; contextId: string; owner: string }): Promise<Accepted> {
    // The session of the peer's context (`agent:<id>:a2a:<peer>:<contextId>`), created on first use.
    const sessionKey = a2aSessionKey(this.agentId, task.owner, task.contextId);
    return this.gateway.accept(
      {
        idempotencyKey: `a2a:${task.id}:${message.messageId}`,
        mode: 'followup',
        text: messageText(message),
        provenance: { kind: 'a2a', channel: 'a2a', peer: task.owner },
        conversation: carriedConversation(message.metadata?.switchboard),
      },
      { sessionKey, agentId: this.agentId },
    );
  }

  /** Why this peer may not send this message here, if it may not: a skill it may not use, or another peer's context. */
  async refusal(message: Message, { contextId, owner, peer, checkContext }: MessageCall): Promise<string | undefined> {
    const skillId = typeof message.metadata?.skillId === 'string' ? message.metadata.skillId : undefined;
    if (peer?.skills && !(skillId && matchesAny(skillId, peer.skills))) {
      return skillId
        ? `peer "${peer.id}" may not use skill "${skillId}" (a2a.server.peers[].skills allows ${peer.skills.join(', ')})`
        : `peer "${peer.id}" may only use the skills ${peer.skills.join(', ')}; name one in the message's metadata as skillId`;
    }
    // A context belongs to the peer that opened it: another peer's id is refused, not joined.
    if (checkContext && (await this.tasks.otherContextOwner(this.agentId, contextId, owner)) !== undefined)
      return `context "${contextId}" belongs to another peer; send without a contextId to start a context of your own`;
    return undefined;
  }
}
