/**
 * Budgets (docs/console.md, docs/gates.md): each cap the config sets, with what it spent and what model calls under way
 * hold reserved, against its limit, in tokens and in dollars. Read again as runs move on.
 */
import { useState } from 'preact/hooks';
import { api, dollars } from '../api.js';
import { html } from '../html.js';
import { useLive } from '../live.js';
import type { BudgetAmount } from '../../../src/ports/gates.js';

/**
 * `GET /v1/budgets`: a cap as `BudgetView` of src/ports/gateway.ts declares it, written out here because that file reads
 * the config's schema, which the console's type check (no node types) cannot.
 */
interface BudgetView {
  key: string;
  source: string;
  /** An unset side is no cap. */
  limit: Partial<BudgetAmount>;
  spent: BudgetAmount;
  reserved: BudgetAmount;
}

interface BudgetsAnswer {
  budgets: BudgetView[];
}

const percent = (part: number, whole: number) => Math.min(100, Math.max(0, (part / whole) * 100));

/**
 * One side of a cap (tokens or dollars): a bar of spent and reserved against the limit, and the figures. An SVG, sized
 * by attributes: the Content-Security-Policy allows no inline style.
 */
function Gauge({
  spent,
  reserved,
  limit,
  show,
}: {
  spent: number;
  reserved: number;
  limit: number | undefined;
  show: (n: number) => string;
}) {
  if (limit === undefined)
    return html`<span class="muted">${spent || reserved ? `${show(spent)} spent, no cap` : 'no cap'}${reserved ? ` · ${show(reserved)} reserved` : ''}</span>`;
  const used = percent(spent, limit);
  const held = Math.min(100 - used, percent(reserved, limit));
  const level = spent >= limit ? 'over' : spent + reserved >= limit * 0.8 ? 'near' : 'ok';
  return html`<div class="gauge" data-testid="gauge">
    <svg class=${`bar ${level}`} viewBox="0 0 100 6" preserveAspectRatio="none" role="img" aria-label=${`${Math.floor((spent / limit) * 100)}% spent`}>
      <rect class="track" width="100" height="6" />
      <rect class="spent" width=${used} height="6" />
      <rect class="reserved" x=${used} width=${held} height="6" />
    </svg>
    <span>${show(spent)} / ${show(limit)} (${Math.floor((spent / limit) * 100)}%)${reserved ? html` · <span class="muted">${show(reserved)} reserved</span>` : ''}</span>
  </div>`;
}

const tokens = (n: number) => n.toLocaleString('en-US');

export function BudgetsPage() {
  const [budgets, setBudgets] = useState<BudgetView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Spend changes with every model call: the page reads again as runs move on, at most every two seconds.
  useLive({
    query: { type: 'run.' },
    resumeKey: 'budgets',
    refresh: () =>
      api<BudgetsAnswer>('/v1/budgets').then(
        (answer) => {
          setBudgets(answer.budgets);
          setError(null);
        },
        (failure: Error) => setError(failure.message),
      ),
    everyMs: 2000,
  });
  if (error && !budgets) return html`<p class="error">${error}</p>`;
  if (!budgets) return html`<p>Loading…</p>`;
  return html`
    <h1>Budgets</h1>
    ${error && html`<p class="error">${error}</p>`}
    ${
      budgets.length === 0
        ? html`<p data-testid="no-budgets">No budget is configured. Caps per agent per day, per session, per sub-agent tree, per board task and per A2A peer are set under <code>budgets</code> (docs/gates.md).</p>`
        : html`<table class="budgets">
            <thead><tr><th>cap</th><th>set by</th><th>tokens</th><th>cost (USD)</th></tr></thead>
            <tbody>${budgets.map(
              (budget) => html`<tr data-testid="budget">
                <td><code>${budget.key}</code></td>
                <td class="muted">${budget.source}</td>
                <td data-testid="budget-tokens"><${Gauge} spent=${budget.spent.tokens} reserved=${budget.reserved.tokens} limit=${budget.limit.tokens} show=${tokens} /></td>
                <td data-testid="budget-cost"><${Gauge} spent=${budget.spent.costMicros} reserved=${budget.reserved.costMicros} limit=${budget.limit.costMicros} show=${dollars} /></td>
              </tr>`,
            )}</tbody>
          </table>`
    }
    <p class="muted">Daily caps (per agent, per peer) count the current UTC day. Spend is settled after each model call; "reserved" is what calls under way hold until they report what they used. A model without a price counts tokens only.</p>
  `;
}
