/**
 * Sessions: the tree of agent -> sessions -> sub-agents, filtered by text, agent and archive mark, and paged, so that
 * thousands of rows render one screen at a time.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, enc, time } from '../api.js';
import { html } from '../html.js';
import type { AgentsAnswer, SessionsAnswer } from '../../../src/http/answers.js';
import type { SessionRecord } from '../../../src/ports/sessions.js';

const PAGE = 100;
/** The most sessions read at once (the control API's largest page). */
const LIMIT = 10_000;

interface Row {
  session: SessionRecord;
  depth: number;
}

/** Each agent's top sessions, newest first, each followed by its descendants. */
function treeRows(sessions: SessionRecord[]): Map<string, Row[]> {
  const byParent = new Map<string, SessionRecord[]>();
  const keys = new Set(sessions.map((session) => session.key));
  for (const session of sessions) {
    const parent = session.parentKey && keys.has(session.parentKey) ? session.parentKey : '';
    byParent.set(parent, [...(byParent.get(parent) ?? []), session]);
  }
  const agents = new Map<string, Row[]>();
  const visit = (session: SessionRecord, depth: number, rows: Row[]) => {
    rows.push({ session, depth });
    for (const child of byParent.get(session.key) ?? []) visit(child, depth + 1, rows);
  };
  for (const top of byParent.get('') ?? []) {
    const rows = agents.get(top.agentId) ?? [];
    visit(top, 0, rows);
    agents.set(top.agentId, rows);
  }
  return agents;
}

export function SessionsPage() {
  const [sessions, setSessions] = useState<SessionRecord[] | null>(null);
  const [filter, setFilter] = useState('');
  const [agent, setAgent] = useState('');
  const [archived, setArchived] = useState(false);
  const [page, setPage] = useState(0);
  const [configured, setConfigured] = useState<string[]>([]);
  useEffect(() => {
    api<SessionsAnswer>(`/v1/sessions?limit=${LIMIT}&archived=${archived}`).then((data) => setSessions(data.sessions));
  }, [archived]);
  useEffect(() => {
    api<AgentsAnswer>('/v1/agents').then((data) => setConfigured(data.agents.map((item) => item.id)));
  }, []);
  // A conversation with any configured agent starts on its main session's page, which exists once a message is sent.
  const start = (event: Event) => {
    event.preventDefault();
    const id = new FormData(event.target as HTMLFormElement).get('agent') as string;
    if (id) location.hash = `#/session/${enc(`agent:${id}:main`)}`;
  };
  const rows = useMemo(() => {
    if (!sessions) return [];
    const needle = filter.toLowerCase();
    const all = [...treeRows(sessions).entries()].sort(([a], [b]) => a.localeCompare(b));
    return all.flatMap(([agentId, list]) =>
      agent && agent !== agentId
        ? []
        : list.filter(
            (row) => !needle || row.session.key.toLowerCase().includes(needle) || (row.session.label ?? '').toLowerCase().includes(needle),
          ),
    );
  }, [sessions, filter, agent]);
  if (!sessions) return html`<p>Loading…</p>`;
  // A new filter starts again at the first page.
  const refilter = (change: () => void) => {
    change();
    setPage(0);
  };
  const agents = [...new Set(sessions.map((session) => session.agentId))].sort();
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  const shown = rows.slice(page * PAGE, (page + 1) * PAGE);
  let lastAgent = '';
  return html`
    <h1>Sessions</h1>
    <form class="toolbar" onSubmit=${start}>
      <select name="agent" aria-label="talk to agent">${configured.map((id) => html`<option value=${id}>${id}</option>`)}</select>
      <button type="submit">Message an agent</button>
    </form>
    <div class="toolbar">
      <input placeholder="filter by key or label" value=${filter} onInput=${(e: Event) => refilter(() => setFilter((e.target as HTMLInputElement).value))} aria-label="filter" />
      <select value=${agent} onChange=${(e: Event) => refilter(() => setAgent((e.target as HTMLSelectElement).value))} aria-label="agent">
        <option value="">every agent</option>
        ${agents.map((id) => html`<option value=${id}>${id}</option>`)}
      </select>
      <label><input type="checkbox" checked=${archived} onChange=${() => refilter(() => setArchived(!archived))} /> archived</label>
      <span class="muted">${rows.length} sessions${sessions.length === LIMIT ? ` (the newest ${LIMIT} are read)` : ''}</span>
    </div>
    <table class="tree" data-testid="sessions-tree">
      <thead><tr><th>session</th><th>label</th><th>state</th><th>updated</th></tr></thead>
      <tbody>
        ${shown.map(({ session, depth }) => {
          const head = session.agentId !== lastAgent ? html`<tr class="group"><td colspan="4">${session.agentId}</td></tr>` : null;
          lastAgent = session.agentId;
          return html`${head}<tr>
            <td style=${{ paddingLeft: `${1 + depth * 1.5}em` }}><a href=${`#/session/${enc(session.key)}`}>${session.key}</a></td>
            <td>${session.label ?? ''}</td><td>${session.archivedAt ? 'archived' : session.state}</td><td>${time(session.updatedAt)}</td>
          </tr>`;
        })}
      </tbody>
    </table>
    <div class="pager">
      <button disabled=${page === 0} onClick=${() => setPage(page - 1)}>previous</button>
      <span>page ${page + 1} of ${pages}</span>
      <button disabled=${page + 1 >= pages} onClick=${() => setPage(page + 1)}>next</button>
    </div>
  `;
}
