/**
 * The console's shell: the navigation (with the count of approval requests waiting for an answer) and a hash router
 * (`#/sessions`, `#/session/<key>`, `#/trace/<traceId>`, ...).
 */
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { api } from './api.js';
import { A2APage, A2ATaskPage } from './pages/a2a.js';
import { ApprovalPage, ApprovalsPage, PendingBadge } from './pages/approvals.js';
import { BoardPage, BoardTaskPage } from './pages/board.js';
import { BudgetsPage } from './pages/budgets.js';
import { ChannelsPage } from './pages/channels.js';
import { ChartsPage } from './pages/charts.js';
import { LoginPage } from './pages/login.js';
import { MapPage } from './pages/map.js';
import { OverviewPage } from './pages/overview.js';
import { PathPage } from './pages/path.js';
import { SessionPage } from './pages/session.js';
import { SessionsPage } from './pages/sessions.js';
import { SubagentsPage } from './pages/subagents.js';
import { TracePage } from './pages/trace.js';

const NAV = [
  ['#/', 'Overview'],
  ['#/sessions', 'Sessions'],
  ['#/map', 'Map'],
  ['#/subagents', 'Sub-agents'],
  ['#/board', 'Board'],
  ['#/a2a', 'A2A'],
  ['#/channels', 'Channels'],
  ['#/approvals', 'Approvals'],
  ['#/budgets', 'Budgets'],
  ['#/charts', 'Charts'],
] as const;

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/');
  useEffect(() => {
    const changed = () => setHash(location.hash || '#/');
    addEventListener('hashchange', changed);
    // A change made between the first render and this effect fired no event we heard.
    changed();
    return () => removeEventListener('hashchange', changed);
  }, []);
  return hash;
}

function page(hash: string) {
  const [path, query = ''] = hash.slice(1).split('?');
  const parts = path.split('/').slice(1).map(decodeURIComponent);
  switch (parts[0]) {
    case '':
      return html`<${OverviewPage} />`;
    case 'login':
      return html`<${LoginPage} expired=${new URLSearchParams(query).get('link') === 'expired'} />`;
    case 'sessions':
      return html`<${SessionsPage} />`;
    case 'session':
      return html`<${SessionPage} key=${parts[1]} sessionKey=${parts[1]} />`;
    case 'map':
      return html`<${MapPage} />`;
    case 'subagents':
      return html`<${SubagentsPage} />`;
    case 'board':
      return parts[1] ? html`<${BoardTaskPage} key=${parts[1]} id=${parts[1]} />` : html`<${BoardPage} />`;
    case 'a2a':
      return parts[1] ? html`<${A2ATaskPage} key=${parts[1]} id=${parts[1]} />` : html`<${A2APage} />`;
    case 'channels':
      return html`<${ChannelsPage} />`;
    case 'approvals':
      return parts[1] ? html`<${ApprovalPage} key=${parts[1]} id=${parts[1]} />` : html`<${ApprovalsPage} />`;
    case 'budgets':
      return html`<${BudgetsPage} />`;
    case 'path':
      return html`<${PathPage} key=${parts[1]} inputId=${parts[1]} />`;
    // `#/trace/<traceId>`, or `#/trace?input=<id>` (run, subagent, task).
    case 'trace':
      return html`<${TracePage} key=${hash} traceId=${parts[1]} query=${query} />`;
    case 'charts':
      return html`<${ChartsPage} />`;
    default:
      return html`<p class="error">No page "${path}".</p>`;
  }
}

function Shell() {
  const hash = useHash();
  const current = `#/${hash.slice(2).split(/[/?]/)[0]}`;
  const logout = async () => {
    await api('/logout', { method: 'POST' });
    location.hash = '#/login';
  };
  if (hash.startsWith('#/login')) return html`<main class="login">${page(hash)}</main>`;
  return html`
    <header>
      <strong class="brand">Switchboard</strong>
      <nav>
        ${NAV.map(([href, label]) => html`<a href=${href} class=${current === href || (href !== '#/' && current.startsWith(href.replace(/s$/, ''))) ? 'active' : ''}>${label}${href === '#/approvals' && html`<${PendingBadge} />`}</a>`)}
      </nav>
      <button class="link" onClick=${logout}>Log out</button>
    </header>
    <main>${page(hash)}</main>
  `;
}

export function App() {
  return html`<${Shell} />`;
}
