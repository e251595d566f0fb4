/** A2A: the tasks this gateway serves, each with its event history and its push deliveries and their attempts. */
import { useEffect, useState } from 'preact/hooks';
import { api, clip, enc, time } from '../api.js';
import { html } from '../html.js';
import type { A2ATaskAnswer, A2ATasksAnswer } from '../../../src/http/answers.js';
import type { A2ATaskEventRecord, A2ATaskRecord } from '../../../src/ports/a2a.js';

export function A2APage() {
  const [tasks, setTasks] = useState<A2ATaskRecord[] | null>(null);
  useEffect(() => {
    api<A2ATasksAnswer>('/v1/a2a/tasks?limit=500').then((data) => setTasks(data.tasks));
  }, []);
  if (!tasks) return html`<p>Loading…</p>`;
  return html`
    <h1>A2A tasks</h1>
    ${tasks.length === 0 && html`<p>No A2A task yet. Serve agents over A2A with <code>a2a.server.enabled</code> (docs/a2a.md).</p>`}
    <table>
      <thead><tr><th>task</th><th>agent</th><th>peer</th><th>state</th><th>last activity</th></tr></thead>
      <tbody>${tasks.map((task) => html`<tr><td><a href=${`#/a2a/${enc(task.id)}`}>${task.id}</a></td><td>${task.agentId}</td><td>${task.owner}</td><td>${task.state}</td><td>${time(task.lastActivityAt)}</td></tr>`)}</tbody>
    </table>
  `;
}

/** A task event's detail as words: `state working`, `peer alice`, `text "..."`, a session as a link; no raw JSON. */
function Detail({ detail }: { detail: unknown }) {
  if (detail === null || typeof detail !== 'object')
    return html`<span>${detail === undefined || detail === null ? '' : String(detail)}</span>`;
  return html`<span class="detail">${Object.entries(detail).map(([key, value], index) => {
    const shown =
      key === 'state' && typeof value === 'string'
        ? value
            .replace(/^TASK_STATE_/, '')
            .toLowerCase()
            .replace(/_/g, ' ')
        : typeof value === 'string'
          ? clip(value, 300)
          : clip(JSON.stringify(value), 200);
    return html`${index > 0 ? ' · ' : ''}<span class="field"><span class="muted">${key}</span> ${key === 'sessionKey' ? html`<a href=${`#/session/${enc(String(value))}`}>${shown}</a>` : shown}</span>`;
  })}</span>`;
}

const EventItem = ({ event }: { event: A2ATaskEventRecord }) =>
  html`<li data-testid="a2a-event"><span class="muted">${time(event.createdAt)}</span> <b>${event.type}</b> <${Detail} detail=${event.detail} /></li>`;

export function A2ATaskPage({ id }: { id: string }) {
  const [data, setData] = useState<A2ATaskAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<A2ATaskAnswer>(`/v1/a2a/tasks/${enc(id)}`).then(setData, (failure) => setError(failure.message));
  }, [id]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!data) return html`<p>Loading…</p>`;
  const pushes = data.events.filter((event) => event.type.includes('push'));
  return html`
    <h1>A2A task ${data.task.id}</h1>
    <p>agent ${data.task.agentId} · peer ${data.task.owner} · <b>${data.task.state}</b> · context ${data.task.contextId}
      ${data.task.sessionKey && html` · <a href=${`#/session/${enc(data.task.sessionKey)}`}>session</a>`}</p>
    <h2>Events</h2>
    <ol class="steps">${data.events.map((event) => html`<${EventItem} event=${event} />`)}</ol>
    <h2>Push deliveries (${pushes.length})</h2>
    ${pushes.length === 0 ? html`<p>none</p>` : html`<ol class="steps">${pushes.map((event) => html`<${EventItem} event=${event} />`)}</ol>`}
  `;
}
