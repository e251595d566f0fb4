/** Overview: agents, lanes, live runs with their elapsed time, the outbox backlog, dead letters, stalled lanes, today's tokens and cost. */
import { useState } from 'preact/hooks';
import { api, duration, enc, type JournalEvent, time } from '../api.js';
import { html } from '../html.js';
import { useLive, useNow } from '../live.js';
import type { AgentAnswer, AgentsAnswer, OutboxAnswer, RunsAnswer, StatusAnswer, UsageAnswer } from '../../../src/http/answers.js';
import type { OutboxRecord } from '../../../src/ports/journal.js';
import type { RunRecord } from '../../../src/ports/runs.js';

interface Overview {
  status: StatusAnswer;
  agents: AgentAnswer[];
  runs: RunRecord[];
  dead: OutboxRecord[];
  usage: UsageAnswer;
}

async function load(): Promise<Overview> {
  const [status, agents, runs, usage] = await Promise.all([
    api<StatusAnswer>('/v1/status'),
    api<AgentsAnswer>('/v1/agents'),
    api<RunsAnswer>('/v1/runs?limit=200'),
    api<UsageAnswer>('/v1/usage'),
  ]);
  // The backlog is counted by the gateway; the dead letters themselves are read only when there are some.
  const dead = status.outbox.dead > 0 ? (await api<OutboxAnswer>('/v1/outbox?status=dead&limit=100')).rows : [];
  return { status, agents: agents.agents, runs: runs.runs.filter((run) => run.status === 'running'), dead, usage };
}

export function OverviewPage() {
  const [data, setData] = useState<Overview | null>(null);
  const [events, setEvents] = useState<JournalEvent[]>([]);
  const now = useNow();
  useLive({
    // The latest events are listed from the journal when the page opens, not only those published after it.
    query: { recent: 50 },
    resumeKey: 'overview',
    refresh: () => load().then(setData, () => undefined),
    onEvent: (event) => setEvents((list) => [event, ...list].slice(0, 50)),
    everyMs: 1000,
  });
  if (!data) return html`<p>Loading…</p>`;
  const { status, usage } = data;
  const usageOf = (id: string) => usage.agents.find((row) => row.agentId === id);
  return html`
    <h1>Overview</h1>
    <section class="grid">
      <div class="card"><h2>Gateway</h2><p>${status.gatewayId}</p><p>up ${duration(status.uptimeMs)}</p></div>
      <div class="card"><h2>Outbox</h2><p><b data-testid="outbox-pending">${status.outbox.pending}</b> pending</p><p><b>${status.outbox.dead}</b> dead letters</p></div>
      <div class="card"><h2>Stalled lanes</h2>${status.stalledLanes.length === 0 ? html`<p>none</p>` : status.stalledLanes.map((lane) => html`<p class="warn">${lane.sessionKey}: ${JSON.stringify(lane)}</p>`)}</div>
    </section>
    <h2>Lanes</h2>
    <table>
      <thead><tr><th>lane</th><th>active</th><th>waiting</th><th>cap</th></tr></thead>
      <tbody>${Object.entries(status.lanes).map(([name, lane]) => html`<tr><td>${name}</td><td>${lane.active}</td><td>${lane.waiting}</td><td>${lane.max}</td></tr>`)}</tbody>
    </table>
    <h2>Agents, today</h2>
    <table>
      <thead><tr><th>agent</th><th>model</th><th>runs</th><th>tokens in</th><th>tokens out</th><th>cost (${usage.currency})</th></tr></thead>
      <tbody>
        ${data.agents.map((agent) => {
          const used = usageOf(agent.id);
          return html`<tr><td><a href=${`#/session/${enc(`agent:${agent.id}:main`)}`} title="message this agent">${agent.id}</a>${agent.default ? ' (default)' : ''}</td><td>${agent.model}</td><td>${used?.runs ?? 0}</td><td>${used?.inputTokens ?? 0}</td><td>${used?.outputTokens ?? 0}</td><td>${used ? (used.cost === null ? 'unpriced' : used.cost.toFixed(4)) : '0'}</td></tr>`;
        })}
      </tbody>
    </table>
    <h2>Live runs</h2>
    ${
      data.runs.length === 0
        ? html`<p>No run is going.</p>`
        : html`<table>
            <thead><tr><th>session</th><th>agent</th><th>model</th><th>elapsed</th></tr></thead>
            <tbody>${data.runs.map((run) => html`<tr><td><a href=${`#/session/${enc(run.sessionKey)}`}>${run.sessionKey}</a></td><td>${run.agentId}</td><td>${run.model}</td><td>${duration(now - run.startedAt)}</td></tr>`)}</tbody>
          </table>`
    }
    ${data.dead.length > 0 && html`<h2>Dead letters</h2><ul>${data.dead.map((row) => html`<li>${row.kind} to ${row.target}: ${row.lastError}</li>`)}</ul>`}
    <h2>Latest events</h2>
    <ul class="events" data-testid="events">
      ${events.map((event) => html`<li><span class="muted">${time(event.createdAt)} #${event.seq}</span> <b>${event.type}</b> ${event.sessionKey && html`<a href=${`#/session/${enc(event.sessionKey)}`}>${event.sessionKey}</a>`}</li>`)}
    </ul>
  `;
}
