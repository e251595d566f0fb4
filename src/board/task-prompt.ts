/** What a worker is given: the task, the results of the tasks it depends on, the last comments and earlier attempts. */
import type { BoardTaskView } from '../ports/index.js';
import type { WaitResult } from '../ports/gateway.js';

const MAX_DEPENDENCY_RESULT = 4000;
const MAX_COMMENTS = 10;

const HOW_TO_END =
  'When you are done, call board_complete with your result (or board_request_review to have it reviewed first). If you cannot finish, call board_block with a kind (dependency, needs_input or failed) and the reason. Ending without either counts as a failed attempt.';

/** For an agent of this gateway: the task and how its run must end, within `maxChars` (the gateway's message limit). */
export function agentTaskPrompt(view: BoardTaskView, maxChars: number): string {
  let brief = taskBrief(view);
  const room = maxChars - HOW_TO_END.length - 2;
  if (brief.length > room) {
    const note = `\n[cut at ${room} of ${brief.length} characters; all of it: switchboard board show ${view.task.id}]`;
    brief = `${brief.slice(0, Math.max(0, room - note.length))}${note}`;
  }
  return `${brief}\n\n${HOW_TO_END}`;
}

/** The task as text, for any worker (a remote A2A agent gets exactly this). */
export function taskBrief(view: BoardTaskView): string {
  const { task } = view;
  const lines = [`Board task ${task.id} (attempt ${task.attempts}): ${task.title}`];
  if (task.body) lines.push('', task.body);
  if (view.dependsOn.length > 0) {
    lines.push('', 'Results of the tasks it depends on:');
    for (const dependency of view.dependsOn) {
      const result = dependency.result ?? '(no result)';
      lines.push(
        `- ${dependency.id} "${dependency.title}" (${dependency.state}): ${result.length > MAX_DEPENDENCY_RESULT ? `${result.slice(0, MAX_DEPENDENCY_RESULT)} [cut at ${MAX_DEPENDENCY_RESULT} characters]` : result}`,
      );
    }
  }
  const comments = view.comments.slice(-MAX_COMMENTS);
  if (comments.length > 0) {
    lines.push('', 'Latest comments:');
    for (const comment of comments) lines.push(`- ${comment.author}: ${comment.body}`);
  }
  const earlier = view.attempts.filter((attempt) => attempt.attempt < task.attempts && attempt.outcome !== null);
  if (earlier.length > 0) {
    lines.push('', 'Earlier attempts:');
    for (const attempt of earlier)
      lines.push(
        `- attempt ${attempt.attempt} by ${attempt.worker}: ${attempt.outcome}${attempt.error ? ` (${attempt.error})` : attempt.summary ? ` (${attempt.summary})` : ''}`,
      );
  }
  return lines.join('\n');
}

/** Why an agent's attempt failed when its run ended without completing or blocking the task. */
export function runEndReason(outcome: Exclude<WaitResult, { status: 'timeout' }>): string {
  if (outcome.status === 'completed')
    return `run ${outcome.run.id} ${outcome.run.status} without completing or blocking the task${outcome.run.errorMessage ? ` (${outcome.run.errorMessage})` : ''}`;
  if (outcome.status === 'dropped') return `the task's input was dropped: ${outcome.input.note ?? 'no reason recorded'}`;
  return 'the task was stored in the session without a run';
}
