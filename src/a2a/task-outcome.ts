/**
 * An A2A task's messages and its outcome: text parts, the agent's messages, an answer as parts (with a data part
 * when it is JSON), and the final state a run's end gives the task (completed, input-required, failed, canceled).
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part, type TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import type { Queries, WaitResult } from '../ports/gateway.js';
import type { RunRecord } from '../ports/index.js';
import { REQUEST_INPUT_TOOL } from './tools.js';

/** The artifact that carries the answer to this input (its chunks while it streams). */
export const answerArtifactId = (inputId: string) => `answer-${inputId}`;

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' };
}

/** A message from the agent, as a task's status message and history entry. */
export function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The text the agent reads: text parts as they are, data parts as JSON, files by name. */
export function messageText(message: Message): string {
  return message.parts
    .map((part) => {
      const content = part.content;
      if (!content) return '';
      if (content.$case === 'text') return content.value;
      if (content.$case === 'data') return JSON.stringify(content.value);
      return `[file ${part.filename || part.mediaType || content.$case}${content.$case === 'url' ? ` at ${content.value}` : ''}]`;
    })
    .filter((text) => text !== '')
    .join('\n');
}

/** The answer's parts: its text, and its JSON as a data part when the whole answer is an object or array. */
export function answerParts(text: string): Part[] {
  const parts = [textPart(text)];
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      parts.push({ content: { $case: 'data', value: JSON.parse(trimmed) }, metadata: {}, filename: '', mediaType: 'application/json' });
    } catch {
      // Not JSON after all: the text part stands alone.
    }
  }
  return parts;
}

export interface FinalOutcome {
  state: TaskState;
  /** The status message: the answer, or what went wrong. */
  text: string;
  /** The answer artifact's parts, for a completed task. */
  parts?: Part[];
  runId?: string;
}

/** The question the run asked its caller with a2a_request_input, if it did (its last one). */
export async function requestedInput(gateway: Pick<Queries, 'runToolCalls'>, run: RunRecord): Promise<string | undefined> {
  const asked = (await gateway.runToolCalls(run)).filter((call) => call.toolName === REQUEST_INPUT_TOOL);
  const question = (asked.at(-1)?.input as { question?: unknown } | null | undefined)?.question;
  return typeof question === 'string' ? question : undefined;
}

/**
 * The task's final state for how its input ended; a `timeout` wait means the task stalled, and a
 * `question` (from a2a_request_input) makes a successful run input-required.
 */
export function finalOutcome(result: WaitResult, stallMs: number, question?: string): FinalOutcome {
  if (result.status === 'completed') {
    const run = result.run;
    if (run.status === 'succeeded' && question !== undefined)
      return { state: TaskState.TASK_STATE_INPUT_REQUIRED, text: question, runId: run.id };
    if (run.status === 'succeeded')
      return { state: TaskState.TASK_STATE_COMPLETED, text: result.reply ?? '', parts: answerParts(result.reply ?? ''), runId: run.id };
    if (run.status === 'cancelled') return { state: TaskState.TASK_STATE_CANCELED, text: 'the run was cancelled', runId: run.id };
    return {
      state: TaskState.TASK_STATE_FAILED,
      text: `the agent's run ended "${run.status}": ${run.errorMessage ?? 'no detail'}`,
      runId: run.id,
    };
  }
  if (result.status === 'dropped')
    return { state: TaskState.TASK_STATE_FAILED, text: `the message was dropped: ${result.input.note ?? 'no detail'}` };
  if (result.status === 'stored') return { state: TaskState.TASK_STATE_COMPLETED, text: '' };
  return stalledOutcome(stallMs);
}

export function stalledOutcome(stallMs: number): FinalOutcome {
  return {
    state: TaskState.TASK_STATE_FAILED,
    text: `no result within ${Math.round(stallMs / 1000)}s (a2a.server.taskStallSeconds): the run died or stalled, so the task is failed rather than left working`,
  };
}

export const CANCELED_TEXT = 'canceled by the client';

/** The entries of a task's replay log: the peer's message, and each state it took. */
export const messageEvent = (message: Message, owner: string) => ({
  role: 'user',
  messageId: message.messageId,
  peer: owner,
  text: messageText(message),
});
export const workingEvent = (sessionKey: string, inputId: string) => ({ state: 'TASK_STATE_WORKING', sessionKey, inputId });
export const stateEvent = (state: TaskState, text?: string) => ({
  state: TaskState[state],
  ...(text === undefined ? {} : { message: text }),
});

/** The answer as the final chunk of its artifact. */
export function answerUpdate(taskId: string, contextId: string, outcome: FinalOutcome & { inputId?: string }): TaskArtifactUpdateEvent {
  return {
    taskId,
    contextId,
    artifact: {
      artifactId: answerArtifactId(outcome.inputId!),
      name: 'answer',
      description: '',
      parts: outcome.parts!,
      metadata: { runId: outcome.runId },
      extensions: [],
    },
    append: false,
    lastChunk: true,
    metadata: {},
  };
}
