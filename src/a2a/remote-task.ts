/** What the A2A client knows of a remote task: its settled states, the result a tool call gets, and its dependencies. */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, taskStateToJSON, type Message, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import type { SwitchboardConfig } from '../config/schema.js';
import type { A2ATaskStore, Clock, NewInput, NewOutboxRow } from '../ports/index.js';

export const RESULT_KIND = 'a2a.result';
/** Where remotes post push notifications for tasks this gateway follows: `<base>/a2a-callback/<taskId>`. */
export const CALLBACK_PATH = '/a2a-callback';
/** How long a send waits for the remote to create its task, whatever its own timeout. */
export const TASK_CREATION_MS = 30_000;

/** States after which a remote task needs its caller: finished, or asking something. */
export const SETTLED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

export interface RemoteRef {
  agentId?: string;
  url?: string;
}

export interface RemoteResult {
  /** The task's state, e.g. "completed", "input-required". */
  state: string;
  taskId: string;
  contextId: string;
  /** The answer: the artifacts' text, else the status message's. */
  text: string;
  data?: unknown;
}

export interface A2AClientDeps {
  config: SwitchboardConfig;
  /** Its own store port: the remote tasks it sent and follows. */
  tasks: A2ATaskStore;
  /** Whether a run still runs (the door's answer): a task whose waiting run still runs is left to it. */
  runAlive: (runId: string) => Promise<boolean>;
  clock: Clock;
  /** Stores an input in a session (idempotent by its key) and wakes it. */
  deliver: (input: Omit<NewInput, 'id'>) => Promise<void>;
  enqueue: (row: NewOutboxRow) => Promise<void>;
  log: (message: string) => void;
  random?: () => number;
  /** This gateway's id: the follower that claims the remote tasks it follows in the background. */
  gatewayId?: string;
}

export const stateName = (state: TaskState | undefined) =>
  taskStateToJSON(state ?? TaskState.TASK_STATE_UNSPECIFIED)
    .replace('TASK_STATE_', '')
    .toLowerCase()
    .replace('_', '-');

/** A user message of one text part, as the client sends it. */
export function textMessage(text: string, messageId: string, contextId = '', taskId = ''): Message {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

export function partsText(parts: Message['parts']): { text: string; data?: unknown } {
  let data: unknown;
  const text = parts
    .map((part) => {
      if (part.content?.$case === 'text') return part.content.value;
      if (part.content?.$case === 'data') data ??= part.content.value;
      return '';
    })
    .join('');
  return { text, ...(data !== undefined ? { data } : {}) };
}

export function summarizeTask(task: Task): RemoteResult {
  const fromArtifacts = partsText(task.artifacts.flatMap((artifact) => artifact.parts));
  const fromStatus = task.status?.message ? partsText(task.status.message.parts) : { text: '' };
  const answer = fromArtifacts.text || fromArtifacts.data !== undefined ? fromArtifacts : fromStatus;
  // A completed task's status message usually repeats its answer; other states explain themselves there.
  const text = task.status?.state === TaskState.TASK_STATE_COMPLETED ? answer.text : fromStatus.text || answer.text;
  return {
    state: stateName(task.status?.state),
    taskId: task.id,
    contextId: task.contextId,
    text,
    ...(answer.data !== undefined ? { data: answer.data } : {}),
  };
}

/** Folds one stream event into what is known of the task (a bare status update without the task asks for it). */
export async function applyStreamEvent(
  client: Client,
  task: Task | undefined,
  event: { payload?: { $case: string; value: unknown } },
): Promise<Task | undefined> {
  const payload = event.payload;
  if (!payload) return task;
  if (payload.$case === 'task') return payload.value as Task;
  if (payload.$case === 'statusUpdate' && task) return { ...task, status: (payload.value as { status: Task['status'] }).status };
  if (payload.$case === 'artifactUpdate' && task) {
    const update = payload.value as { artifact?: Task['artifacts'][number]; append: boolean };
    if (!update.artifact) return task;
    const existing = task.artifacts.find((artifact) => artifact.artifactId === update.artifact!.artifactId);
    const merged = existing && update.append ? { ...existing, parts: [...existing.parts, ...update.artifact.parts] } : update.artifact;
    return { ...task, artifacts: [...task.artifacts.filter((artifact) => artifact.artifactId !== merged.artifactId), merged] };
  }
  if (payload.$case === 'statusUpdate')
    return client.getTask({ tenant: '', id: (payload.value as { taskId: string }).taskId, historyLength: 0 });
  if (payload.$case === 'message') {
    const message = payload.value as Message;
    return {
      id: message.taskId || randomUUID(),
      contextId: message.contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED, message, timestamp: undefined },
      artifacts: [],
      history: [],
      metadata: {},
    };
  }
  return task;
}
