/**
 * A model for the durable-steps tests, behind FakeProviderServer: it reads the conversation, so that a run resumed or
 * run again gets the answer its place calls for. A task (`do task t7`) takes `STEPS` steps, each a write_file call, and
 * then answers.
 */
import type { FakeReply } from './fake-provider.js';
import type { TranscriptEntry } from '../../src/ports/index.js';

export const STEPS = 5;

interface ChatBody {
  messages: { role: string; content: unknown }[];
}

/** The task a request is for, and how many of its tools have answered (the step it is at). */
export function stepOf(body: ChatBody): { task: string; done: number } {
  const lastUser = body.messages.map((message) => message.role).lastIndexOf('user');
  const text = JSON.stringify(body.messages[lastUser]?.content ?? '');
  const task = /task (t\d+)/.exec(text)?.[1] ?? 'unknown';
  return { task, done: body.messages.slice(lastUser).filter((message) => message.role === 'tool').length };
}

export function stepperAnswer(body: ChatBody): FakeReply {
  const { task, done } = stepOf(body);
  if (done < STEPS)
    return {
      toolCall: { id: `call_${done}`, name: 'write_file', args: { path: `out/${task}/step-${done}.txt`, content: `step ${done}` } },
    };
  return { text: `finished ${task}` };
}

/**
 * A step's write as its result says it: the bytes it wrote (`step N` is 6), or, run again after a kill that landed
 * between the write and the commit of its result, that an earlier attempt wrote it (docs/tools.md).
 */
const WRITTEN = /"bytes":6|"note":"written by an earlier attempt of this run"/g;

/**
 * The transcript with the task's name taken out, so that two tasks' compare. A write a kill cut after the file was
 * written and before its result was committed answers, when run again, that an earlier attempt wrote it instead of how
 * many bytes it wrote: the one way a resumed run's transcript may differ, counted as the same write.
 */
export function transcriptShape(entries: TranscriptEntry[], task: string): string {
  return JSON.stringify(entries.map((entry) => ({ role: entry.role, content: entry.content })))
    .replaceAll(task, 'TASK')
    .replaceAll(WRITTEN, '"written":true');
}
