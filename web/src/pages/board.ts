/** The board: the kanban columns live, a task page with attempts, comments and dependencies, and a person's moves. */
import { useState } from 'preact/hooks';
import { api, clip, enc, time } from '../api.js';
import { html } from '../html.js';
import { useLive } from '../live.js';
import type { BoardTasksAnswer } from '../../../src/http/answers.js';
import type { BoardTaskView } from '../../../src/ports/board.js';

type ListedTask = BoardTasksAnswer['tasks'][number];

const COLUMNS = ['triage', 'todo', 'ready', 'running', 'review', 'blocked', 'done'];
const FINISHED = new Set(['done', 'cancelled', 'archived']);
const STATES = ['triage', 'todo', 'ready', 'running', 'review', 'done', 'blocked', 'cancelled', 'archived'];

const useBoardEvents = (refresh: () => unknown, resumeKey: string) => useLive({ query: { type: 'board.' }, resumeKey, refresh });

export function BoardPage() {
  const [tasks, setTasks] = useState<ListedTask[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () =>
    api<BoardTasksAnswer>('/v1/board/tasks?limit=2000').then(
      (data) => setTasks(data.tasks),
      (failure) => setError(failure.message),
    );
  useBoardEvents(refresh, 'board');
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    const assignee = (data.get('assignee') as string).trim();
    try {
      await api('/v1/board/tasks', {
        method: 'POST',
        body: { title: data.get('title'), body: data.get('body') || undefined, assignee: assignee || null },
      });
      form.reset();
      void refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  if (error && !tasks) return html`<p class="error">${error}</p>`;
  if (!tasks) return html`<p>Loading…</p>`;
  // A task waits only while it is not finished, and only for dependencies that are not done.
  const stateOf = new Map(tasks.map((task) => [task.id, task.state]));
  const waiting = (task: ListedTask) =>
    FINISHED.has(task.state) ? 0 : task.dependsOn.filter((id: string) => stateOf.get(id) !== 'done').length;
  return html`
    <h1>Board</h1>
    <form class="toolbar" onSubmit=${create}>
      <input name="title" placeholder="new task title" aria-label="title" required />
      <input name="body" placeholder="details" aria-label="details" />
      <input name="assignee" placeholder="assignee (agent or worker)" aria-label="assignee" />
      <button type="submit">Create</button>
      ${error && html`<span class="error">${error}</span>`}
    </form>
    <div class="kanban">
      ${COLUMNS.map(
        (column) => html`<section class="column" data-testid=${`column-${column}`}>
          <h2>${column} <span class="muted">${tasks.filter((task) => task.state === column).length}</span></h2>
          ${tasks
            .filter((task) => task.state === column)
            .map(
              (task) => html`<a class="task card" href=${`#/board/${enc(task.id)}`} data-testid="task">
                <b>${task.title}</b>
                <div class="muted">${task.assignee ?? 'anyone'}${task.claimWorker ? ` · ${task.claimWorker}` : ''}${task.blockKind ? ` · ${task.blockKind}` : ''}</div>
                ${waiting(task) > 0 && html`<div class="muted">waits for ${waiting(task)}</div>`}
              </a>`,
            )}
        </section>`,
      )}
    </div>
  `;
}

export function BoardTaskPage({ id }: { id: string }) {
  const [view, setView] = useState<BoardTaskView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => api<BoardTaskView>(`/v1/board/tasks/${enc(id)}?comments=200`).then(setView, (failure) => setError(failure.message));
  useBoardEvents(refresh, `board:${id}`);
  const act = async (path: string, body: unknown) => {
    try {
      await api(`/v1/board/tasks/${enc(id)}/${path}`, { method: 'POST', body });
      setError(null);
      void refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  if (!view) return error ? html`<p class="error">${error}</p>` : html`<p>Loading…</p>`;
  const { task } = view;
  return html`
    <h1>${task.title}</h1>
    <p><span data-testid="task-state">${task.state}</span>${task.blockKind ? ` (${task.blockKind}: ${task.blockReason})` : ''} · assignee ${task.assignee ?? 'anyone'} · priority ${task.priority} · created by ${task.creator} ${time(task.createdAt)}</p>
    ${task.body && html`<pre class="body">${task.body}</pre>`}
    ${task.result && html`<h2>Result</h2><pre class="body" data-testid="task-result">${task.result}</pre>`}
    <div class="toolbar">
      <select aria-label="move to" key=${task.state} value="" onChange=${(e: Event) => act('move', { state: (e.target as HTMLSelectElement).value })}>
        <option value="">move to…</option>
        ${STATES.filter((state) => state !== task.state).map((state) => html`<option value=${state}>${state}</option>`)}
      </select>
      ${task.state === 'review' && html`<button onClick=${() => act('review', { approve: true })}>approve</button><button onClick=${() => act('review', { approve: false, comment: 'sent back from the console' })}>send back</button>`}
      ${error && html`<span class="error">${error}</span>`}
    </div>
    <h2>Dependencies</h2>
    <p>${view.dependsOn.length === 0 ? 'none' : view.dependsOn.map((dep) => html`<a href=${`#/board/${enc(dep.id)}`}>${dep.title} (${dep.state})</a> `)}</p>
    ${view.dependents.length > 0 && html`<p>needed by ${view.dependents.map((dep) => html`<a href=${`#/board/${enc(dep.id)}`}>${dep.title} (${dep.state})</a> `)}</p>`}
    <h2>Attempts</h2>
    ${view.attempts.some((attempt) => attempt.session) && html`<p><a href=${`#/trace?task=${enc(task.id)}`} data-testid="trace-link">trace</a> <span class="muted">(the attempts' runs as a timeline)</span></p>`}
    <table>
      <thead><tr><th>#</th><th>worker</th><th>started</th><th>outcome</th><th>session</th></tr></thead>
      <tbody>${view.attempts.map((attempt) => html`<tr><td>${attempt.attempt}</td><td>${attempt.worker}</td><td>${time(attempt.startedAt)}</td><td>${attempt.outcome ?? 'running'}${attempt.error ? `: ${clip(attempt.error, 100)}` : ''}</td><td>${attempt.session ? html`<a href=${`#/session/${enc(attempt.session)}`}>${attempt.session}</a>` : ''}</td></tr>`)}</tbody>
    </table>
    <h2>Comments</h2>
    <ul>${view.comments.map((comment) => html`<li><b>${comment.author}</b> <span class="muted">${time(comment.createdAt)}</span> ${comment.body}</li>`)}</ul>
    <form class="toolbar" onSubmit=${(e: Event) => {
      e.preventDefault();
      const form = e.target as HTMLFormElement;
      const body = (new FormData(form).get('body') as string).trim();
      if (body) void act('comments', { body }).then(() => form.reset());
    }}>
      <input name="body" placeholder="comment" aria-label="comment" /><button type="submit">Comment</button>
    </form>
  `;
}
