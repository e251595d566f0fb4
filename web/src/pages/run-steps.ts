/**
 * A run's durable steps on the session page (docs/console.md, ARCHITECTURE.md 4.7): each model call with what it cost
 * and the tools it asked for, read from `GET /v1/runs/<id>` when the list is opened, and which of them a resume
 * replayed from the store instead of asking the model again.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, enc, time } from '../api.js';
import { html } from '../html.js';
import type { RunStepView } from '../../../src/ports/answers.js';
import type { RunRecord } from '../../../src/ports/runs.js';

/** `GET /v1/runs/<id>`, as far as this page reads it. */
interface RunDetailAnswer {
  run: RunRecord;
  steps: RunStepView[];
}

/** A run's steps, read when `wanted` and again as the run moves on (a new step, a resume, its end). */
function useRunSteps(run: RunRecord, wanted: boolean): RunStepView[] | string | null {
  const [steps, setSteps] = useState<RunStepView[] | string | null>(null);
  useEffect(() => {
    if (!wanted) return;
    let current = true;
    api<RunDetailAnswer>(`/v1/runs/${enc(run.id)}`).then(
      (answer) => current && setSteps(answer.steps),
      (failure: Error) => current && setSteps(failure.message),
    );
    return () => {
      current = false;
    };
  }, [wanted, run.id, run.status, run.attempt, run.usage.steps]);
  return steps;
}

/** The run's state in words: a suspended run says what it waits for, or the step it resumes from. */
export function runState(run: RunRecord, committedSteps?: number): string {
  if (run.status !== 'suspended') return run.status;
  if (run.waitingUntil !== null) return `waiting until ${time(run.waitingUntil)}`;
  return committedSteps === undefined ? 'suspended' : `suspended, resumes from step ${committedSteps}`;
}

/** " · attempt N" for a run that resumed (after a crash, a lost lease or a wait); nothing for a first attempt. */
export function attemptNote(run: RunRecord): string {
  return run.attempt > 1 ? ` · attempt ${run.attempt}` : '';
}

function stepNotes(run: RunRecord, step: RunStepView): string {
  const notes: string[] = [];
  if (step.attempt < run.attempt) notes.push('replayed on resume, not asked again');
  if (step.state === 'answered') notes.push('results not committed');
  if (step.state === 'final') notes.push("the run's last answer");
  return notes.join('; ');
}

/** The run's steps as a list that opens on a click. */
export function RunSteps({ run }: { run: RunRecord }) {
  const [open, setOpen] = useState(false);
  const steps = useRunSteps(run, open);
  return html`
    <a class="trace-link" href=${`#/trace?run=${enc(run.id)}`} data-testid="trace-link">trace</a>
    <details class="steps" data-testid="steps" onToggle=${(event: Event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
      <summary>steps</summary>
      ${
        steps === null
          ? html`<p class="muted">Loading…</p>`
          : typeof steps === 'string'
            ? html`<p class="error">${steps}</p>`
            : steps.length === 0
              ? html`<p class="muted">No step committed.</p>`
              : html`<table>
                  <thead><tr><th>step</th><th>attempt</th><th>model</th><th>tools</th><th>tokens in</th><th>tokens out</th><th>ms</th><th></th></tr></thead>
                  <tbody>${steps.map(
                    (step) =>
                      html`<tr data-testid="step" class=${step.attempt < run.attempt ? 'replayed' : ''}><td>${step.step}</td><td>${step.attempt}</td><td>${step.model}</td><td>${step.tools.join(', ')}</td><td>${step.inputTokens}</td><td>${step.outputTokens}</td><td>${step.ms ?? ''}</td><td>${stepNotes(run, step)}</td></tr>`,
                  )}</tbody>
                </table>`
      }
    </details>
  `;
}

/** A suspended run: waiting in a wait until its deadline, or cut by a crash and resuming from its next step. */
export function SuspendedRun({ run }: { run: RunRecord }) {
  // The step it resumes from is the count of its committed steps, which only its steps say (a fork's run has no usage).
  const steps = useRunSteps(run, run.waitingUntil === null);
  return html`<div class="run suspended" data-testid="suspended">
    run ${run.id.slice(0, 8)} · <b data-testid="run-state">${runState(run, Array.isArray(steps) ? steps.length : undefined)}</b> · ${run.model}${attemptNote(run)}
    <${RunSteps} run=${run} />
  </div>`;
}
