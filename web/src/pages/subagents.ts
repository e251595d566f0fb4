/** Sub-agents: the live board of children with agent, model, elapsed time and tokens, kill and steer, and the spawn tree. */
import { useEffect, useState } from 'preact/hooks';
import { api, duration, enc } from '../api.js';
import { html } from '../html.js';
import { useLive, useNow } from '../live.js';
import type { AgentsAnswer, KillAnswer, SubagentAnswer, SubagentsAnswer } from '../../../src/http/answers.js';

const LIVE = new Set(['pending', 'running']);

export function SubagentsPage() {
  const [children, setChildren] = useState<SubagentAnswer[] | null>(null);
  const [models, setModels] = useState<Map<string, string>>(new Map());
  const [note, setNote] = useState<string | null>(null);
  const [fetchedAt, setFetchedAt] = useState(Date.now());
  const now = useNow();
  // Read again when a sub-agent changes (its journal events), not on a timer: the list can be long.
  const refresh = () =>
    api<SubagentsAnswer>('/v1/subagents').then((data) => {
      setChildren(data.subagents);
      setFetchedAt(Date.now());
    });
  useLive({ query: { type: 'subagent.' }, resumeKey: 'subagents', refresh });
  useEffect(() => {
    api<AgentsAnswer>('/v1/agents').then((data) => setModels(new Map(data.agents.map((agent) => [agent.id, agent.model]))));
  }, []);
  if (!children) return html`<p>Loading…</p>`;
  const kill = async (child: SubagentAnswer) => {
    const answer = await api<KillAnswer>(`/v1/subagents/${enc(child.subagentId)}/kill`, { method: 'POST' });
    setNote(`killed ${answer.cancelled.length} sub-agent(s)`);
    void refresh();
  };
  const steer = async (child: SubagentAnswer, event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const message = (new FormData(form).get('message') as string).trim();
    if (!message) return;
    await api('/v1/send', { method: 'POST', body: { target: child.childSessionKey, message, mode: 'steer' } });
    form.reset();
    setNote(`steered ${child.label ?? child.subagentId.slice(0, 8)}`);
  };
  // The spawn tree: each child under its parent session, the roots first.
  const byParent = new Map<string, SubagentAnswer[]>();
  for (const child of children) byParent.set(child.parentSessionKey, [...(byParent.get(child.parentSessionKey) ?? []), child]);
  const childKeys = new Set(children.map((child) => child.childSessionKey));
  const ordered: SubagentAnswer[] = [];
  const visit = (child: SubagentAnswer) => {
    ordered.push(child);
    for (const grandchild of byParent.get(child.childSessionKey) ?? []) visit(grandchild);
  };
  for (const [parent, list] of byParent) if (!childKeys.has(parent)) list.forEach(visit);
  const live = ordered.filter((child) => LIVE.has(child.state));
  const rest = ordered.filter((child) => !LIVE.has(child.state)).slice(-200);
  const row = (child: SubagentAnswer) => html`
    <tr data-testid="subagent" data-state=${child.state}>
      <td style=${{ paddingLeft: `${child.depth}em` }}><a href=${`#/session/${enc(child.childSessionKey)}`}>${child.label ?? child.subagentId.slice(0, 8)}</a></td>
      <td>${child.agentId}</td><td>${child.model ?? models.get(child.agentId) ?? ''}${child.runtime ? ` (${child.runtime})` : ''}</td>
      <td class="state">${child.state}</td><td>${duration(child.elapsedMs + (LIVE.has(child.state) ? now - fetchedAt : 0))}</td><td>${child.tokens.input}+${child.tokens.output}</td>
      <td><a href=${`#/trace?subagent=${enc(child.subagentId)}`} data-testid="trace-link">trace</a> ${
        LIVE.has(child.state) &&
        html`<button class="danger" onClick=${() => kill(child)}>kill</button>
          <form class="inline" onSubmit=${(e: Event) => steer(child, e)}>
            <input name="message" placeholder="steer" aria-label="steer" /><button type="submit">steer</button>
          </form>`
      }</td>
    </tr>`;
  const head = html`<thead><tr><th>sub-agent</th><th>agent</th><th>model</th><th>state</th><th>elapsed</th><th>tokens</th><th></th></tr></thead>`;
  return html`
    <h1>Sub-agents</h1>
    ${note && html`<p class="muted" data-testid="note">${note}</p>`}
    <h2>Running (${live.length})</h2>
    ${live.length === 0 ? html`<p>No sub-agent is running.</p>` : html`<table>${head}<tbody>${live.map(row)}</tbody></table>`}
    <h2>Spawn tree, finished</h2>
    <table>${head}<tbody>${rest.map(row)}</tbody></table>
  `;
}
