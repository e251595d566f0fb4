/** Step through one message: accept, lane, run, tool calls, the other session's run, the reply; each with its time. */
import { useEffect, useState } from 'preact/hooks';
import { api, duration, enc } from '../api.js';
import { html } from '../html.js';
import type { MessagePathAnswer, PathStepAnswer } from '../../../src/http/answers.js';

function Steps({ steps, start }: { steps: PathStepAnswer[]; start: number }) {
  return html`<ol class="path">
    ${steps.map(
      (step) => html`<li class=${`step ${step.kind}`} data-testid="step">
        <span class="muted">${step.at === null ? '—' : `+${duration(step.at - start)}`}</span>${' '}<b>${step.kind}</b> <a href=${`#/session/${enc(step.sessionKey)}`}>${step.sessionKey}</a>
        <div>${step.summary}</div>
        ${step.children && html`<${Steps} steps=${step.children} start=${start} />`}
      </li>`,
    )}
  </ol>`;
}

export function PathPage({ inputId }: { inputId: string }) {
  const [path, setPath] = useState<MessagePathAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<MessagePathAnswer>(`/v1/inputs/${enc(inputId)}/path`).then(setPath, (failure) => setError(failure.message));
  }, [inputId]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!path) return html`<p>Loading…</p>`;
  return html`
    <h1>Path of a message</h1>
    <blockquote>${path.input.text}</blockquote>
    <p><a href=${`#/trace?input=${enc(path.input.id)}`} data-testid="trace-link">trace</a> <span class="muted">(the same collaboration as a timeline, with tokens and cost)</span></p>
    <${Steps} steps=${path.steps} start=${path.input.createdAt} />
  `;
}
