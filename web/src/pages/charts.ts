/**
 * Charts (docs/console.md, "Charts"): tokens and cost per agent over the last hour, day or week, from the usage route's
 * slices (`GET /v1/usage?since=&bucket=`); and lane use and queue age over the last five minutes, from `GET /v1/status`
 * and `GET /v1/queues` read every two seconds while the page is open. Plain SVG, sized by attributes: the
 * Content-Security-Policy allows no inline style sheet.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, duration } from '../api.js';
import { html } from '../html.js';
import type { QueuesAnswer, StatusAnswer, UsageAnswer } from '../../../src/http/answers.js';

const RANGES = {
  hour: { label: 'last hour', ms: 3_600_000, bucketMs: 60_000 },
  day: { label: 'last day', ms: 86_400_000, bucketMs: 3_600_000 },
  week: { label: 'last week', ms: 7 * 86_400_000, bucketMs: 6 * 3_600_000 },
} as const;
type Range = keyof typeof RANGES;

/** How often the live charts read the gateway, and how much of what they read they keep. */
const POLL_MS = 2000;
const WINDOW_MS = 5 * 60_000;
/** Usage is read again this often (a run's tokens count when it ends). */
const USAGE_MS = 30_000;

const W = 640;
const H = 200;
const PAD = { left: 56, right: 12, top: 10, bottom: 24 };
const PLOT_W = W - PAD.left - PAD.right;
const PLOT_H = H - PAD.top - PAD.bottom;

/** The round number at or above `value` that the y axis ends at (1, 2 or 5 times a power of ten). */
function niceCeil(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 5, 10].find((step) => step * power >= value) ?? 10) * power;
}

/** Hues far apart: a chart's series (its agents, sorted, or its lanes) take them in order, so that no two of a few share one. */
const HUES = [265, 200, 25, 145, 330, 50, 180, 0, 100, 230];
const colour = (index: number) => `hsl(${HUES[index % HUES.length]} 60% 45%)`;

const clock = (ms: number, withDate: boolean) => {
  const iso = new Date(ms).toISOString();
  return withDate ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 19);
};

/** The y axis: gridlines at quarters of `max`, labelled with `format`. */
function YAxis({ max, format }: { max: number; format: (n: number) => string }) {
  return html`${[0, 0.25, 0.5, 0.75, 1].map((part) => {
    const y = PAD.top + PLOT_H * (1 - part);
    return html`<line class="grid" x1=${PAD.left} x2=${W - PAD.right} y1=${y} y2=${y} />
      <text class="tick" x=${PAD.left - 4} y=${y + 4} text-anchor="end">${format(max * part)}</text>`;
  })}`;
}

function XAxis({ from, to, withDate }: { from: number; to: number; withDate: boolean }) {
  return html`${[0, 0.5, 1].map(
    (part) =>
      html`<text class="tick" x=${PAD.left + PLOT_W * part} y=${H - 6} text-anchor=${part === 0 ? 'start' : part === 1 ? 'end' : 'middle'}>${clock(from + (to - from) * part, withDate)}</text>`,
  )}`;
}

function Legend({ names, notes = {} }: { names: string[]; notes?: Record<string, string> }) {
  return html`<p class="chart-legend">${names.map(
    (name, index) =>
      html`<span class="legend"><svg class="swatch" viewBox="0 0 10 10"><rect width="10" height="10" fill=${colour(index)} /></svg>${name}${notes[name] ? html` <span class="muted">${notes[name]}</span>` : ''}</span> `,
  )}</p>`;
}

/** A bar per slice of time, stacked by agent. */
function StackedBars({
  label,
  slots,
  bucketMs,
  series,
  format,
}: {
  label: string;
  slots: number[];
  bucketMs: number;
  series: { name: string; values: number[] }[];
  format: (n: number) => string;
}) {
  const totals = slots.map((_, slot) => series.reduce((sum, one) => sum + (one.values[slot] ?? 0), 0));
  const max = niceCeil(Math.max(0, ...totals));
  const step = PLOT_W / Math.max(1, slots.length);
  const width = Math.max(1, step - 1);
  return html`<svg class="chart" viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${label} data-testid="chart">
    <${YAxis} max=${max} format=${format} />
    ${slots.map((at, slot) => {
      let base = PAD.top + PLOT_H;
      return series.map((one, index) => {
        const value = one.values[slot] ?? 0;
        if (value <= 0) return null;
        const height = (value / max) * PLOT_H;
        base -= height;
        return html`<rect x=${PAD.left + slot * step} y=${base} width=${width} height=${height} fill=${colour(index)} data-testid="bar">
          <title>${one.name} ${clock(at, bucketMs >= 3_600_000)}: ${format(value)}</title>
        </rect>`;
      });
    })}
    <${XAxis} from=${slots[0] ?? 0} to=${(slots.at(-1) ?? 0) + bucketMs} withDate=${bucketMs >= 3_600_000} />
  </svg>`;
}

/** Lines over the last minutes (a dashed one for a second figure of the same series). */
function Lines({
  label,
  from,
  to,
  series,
  format,
}: {
  label: string;
  from: number;
  to: number;
  /** `colour`: the series' place in the chart's legend. */
  series: { colour: number; key: string; dashed?: boolean; points: [number, number][] }[];
  format: (n: number) => string;
}) {
  const max = niceCeil(Math.max(0, ...series.flatMap((one) => one.points.map(([, value]) => value))));
  const x = (at: number) => PAD.left + ((at - from) / Math.max(1, to - from)) * PLOT_W;
  const y = (value: number) => PAD.top + PLOT_H * (1 - value / max);
  return html`<svg class="chart" viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${label} data-testid="chart">
    <${YAxis} max=${max} format=${format} />
    ${series.map(
      (one) =>
        one.points.length > 0 &&
        html`<polyline class=${one.dashed ? 'line dashed' : 'line'} stroke=${colour(one.colour)} points=${one.points.map(([at, value]) => `${x(at).toFixed(1)},${y(value).toFixed(1)}`).join(' ')} data-testid=${`line-${one.key}`} />`,
    )}
    <${XAxis} from=${from} to=${to} withDate=${false} />
  </svg>`;
}

/** Tokens and cost per agent, per slice of the range. */
function Usage({ range }: { range: Range }) {
  const [usage, setUsage] = useState<UsageAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { ms, bucketMs } = RANGES[range];
  useEffect(() => {
    let current = true;
    const read = () => {
      // Slices on whole minutes or hours (UTC), so that they do not move as the page reads again.
      const since = Math.floor((Date.now() - ms) / bucketMs) * bucketMs;
      api<UsageAnswer>(`/v1/usage?since=${since}&bucket=${bucketMs}`).then(
        (answer) => {
          if (!current) return;
          setUsage(answer);
          setError(null);
        },
        (failure: Error) => current && setError(failure.message),
      );
    };
    read();
    const timer = setInterval(read, USAGE_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [range]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!usage) return html`<p>Loading…</p>`;
  const slots = Array.from({ length: Math.ceil((Date.now() - usage.since) / bucketMs) }, (_, slot) => usage.since + slot * bucketMs);
  const agents = [...new Set((usage.slices ?? []).map((slice) => slice.agentId))].sort();
  const per = (pick: (slice: NonNullable<UsageAnswer['slices']>[number]) => number) =>
    agents.map((name) => ({
      name,
      values: slots.map((at) =>
        (usage.slices ?? []).filter((slice) => slice.agentId === name && slice.at === at).reduce((sum, slice) => sum + pick(slice), 0),
      ),
    }));
  const unpriced = Object.fromEntries(
    agents
      .filter((name) => (usage.slices ?? []).some((slice) => slice.agentId === name && slice.cost === null))
      .map((name) => [name, '(a model unpriced: not in the cost)']),
  );
  if (agents.length === 0) return html`<p class="muted" data-testid="no-usage">No run started in the ${RANGES[range].label}.</p>`;
  return html`
    <h2>Tokens per agent</h2>
    <${Legend} names=${agents} />
    <${StackedBars} label="tokens per agent" slots=${slots} bucketMs=${bucketMs} series=${per((slice) => slice.inputTokens + slice.outputTokens)} format=${(n: number) => Math.round(n).toLocaleString('en-US')} />
    <h2>Cost per agent (${usage.currency})</h2>
    <${Legend} names=${agents} notes=${unpriced} />
    <${StackedBars} label="cost per agent" slots=${slots} bucketMs=${bucketMs} series=${per((slice) => slice.cost ?? 0)} format=${(n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`} />
  `;
}

interface Sample {
  at: number;
  lanes: StatusAnswer['lanes'];
  queued: number;
  oldestAgeMs: number;
}

/** Lane use and queue age, sampled while the page is open. */
function Live() {
  const [samples, setSamples] = useState<Sample[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    const read = async () => {
      if (document.hidden) return;
      try {
        const [status, queues] = await Promise.all([api<StatusAnswer>('/v1/status'), api<QueuesAnswer>('/v1/queues')]);
        if (!current) return;
        const oldest = Math.min(...queues.sessions.map((session) => session.oldestQueuedAt));
        const sample = {
          at: queues.at,
          lanes: status.lanes,
          queued: queues.sessions.length,
          oldestAgeMs: queues.sessions.length ? Math.max(0, queues.at - oldest) : 0,
        };
        setSamples((list) => [...list.filter((kept) => kept.at > sample.at - WINDOW_MS), sample]);
        setError(null);
      } catch (failure) {
        if (current) setError((failure as Error).message);
      }
    };
    void read();
    const timer = setInterval(read, POLL_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, []);
  const last = samples.at(-1);
  if (!last) return error ? html`<p class="error">${error}</p>` : html`<p>Loading…</p>`;
  const from = last.at - WINDOW_MS;
  const lanes = Object.keys(last.lanes) as (keyof StatusAnswer['lanes'])[];
  return html`
    ${error && html`<p class="error">${error}</p>`}
    <h2>Lane use</h2>
    <${Legend} names=${lanes} notes=${Object.fromEntries(lanes.map((lane) => [lane, `${last.lanes[lane].active} active, ${last.lanes[lane].waiting} waiting, cap ${last.lanes[lane].max}`]))} />
    <${Lines}
      label="runs active (solid) and sessions waiting for a slot (dashed) per lane"
      from=${from}
      to=${last.at}
      series=${lanes.flatMap((lane, index) => [
        { colour: index, key: `${lane}-active`, points: samples.map((sample) => [sample.at, sample.lanes[lane].active]) },
        { colour: index, key: `${lane}-waiting`, dashed: true, points: samples.map((sample) => [sample.at, sample.lanes[lane].waiting]) },
      ])}
      format=${(n: number) => String(Number(n.toFixed(2)))}
    />
    <p class="muted">Solid: runs active. Dashed: sessions waiting for a slot in the lane.</p>
    <h2>Queue age</h2>
    <p data-testid="queue-now">${last.queued === 0 ? 'No input waits.' : `${last.queued} session${last.queued === 1 ? '' : 's'} with queued inputs; the oldest waits ${duration(last.oldestAgeMs)}.`}</p>
    <${Lines}
      label="age of the oldest queued input"
      from=${from}
      to=${last.at}
      series=${[{ colour: 0, key: 'queue-age', points: samples.map((sample) => [sample.at, sample.oldestAgeMs / 1000]) }]}
      format=${(n: number) => `${Number(n.toFixed(2))} s`}
    />
  `;
}

export function ChartsPage() {
  const [range, setRange] = useState<Range>('day');
  return html`
    <h1>Charts</h1>
    <div class="toolbar">
      ${(Object.keys(RANGES) as Range[]).map(
        (key) => html`<button class=${key === range ? 'active' : ''} onClick=${() => setRange(key)}>${RANGES[key].label}</button>`,
      )}
    </div>
    <${Usage} key=${range} range=${range} />
    <${Live} />
  `;
}
