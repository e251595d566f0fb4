/**
 * One collaboration as a waterfall (docs/console.md, "Trace view"): a row per span of `GET /v1/traces`, indented under
 * its parent, its bar placed by its start and end on the trace's time. A run's bar is dark where its model worked and
 * light where it waited; a tool call that another agent's run answered is outlined and says who it waited on. Spans of
 * other gateways and remote callers (parents this store has no span for) are marked. Read again as runs end while a
 * span of it still goes on.
 */
import { useState } from 'preact/hooks';
import { api, duration, enc, time } from '../api.js';
import { html } from '../html.js';
import { useLive } from '../live.js';
import type { TraceAnswer, TraceSpanAnswer } from '../../../src/http/answers.js';

/** Where a span's bar starts and how wide it is, in percent of the trace's time. */
function place(span: TraceSpanAnswer, trace: TraceAnswer, now: number): { x: number; width: number } {
  const total = Math.max(1, trace.end - trace.start);
  const x = ((span.start - trace.start) / total) * 100;
  const end = span.end ?? Math.max(now, trace.end);
  return { x: Math.min(100, Math.max(0, x)), width: Math.min(100 - x, Math.max(0, ((end - span.start) / total) * 100)) };
}

/** Hues far apart, given to the trace's agents in the order they first appear, so that no two of a few share one. */
const HUES = [265, 200, 25, 145, 330, 50, 180, 0, 100, 230];

function tokens(span: TraceSpanAnswer): string {
  return span.inputTokens === null ? '' : `${span.inputTokens}+${span.outputTokens ?? 0} tokens`;
}

function cost(value: number | null, priced: boolean): string {
  return value === null ? (priced ? '' : 'unpriced') : `$${value.toFixed(4)}`;
}

/** The figures a bar is labelled with: how long, tokens, cost, and what it waited on. */
function figures(span: TraceSpanAnswer, waitedOn: string[]): string {
  const parts = [span.end === null ? `${span.status}…` : duration(span.end - span.start)];
  if (span.kind === 'invoke_agent' || span.kind === 'chat')
    parts.push(tokens(span), cost(span.cost, span.inputTokens === 0 && span.outputTokens === 0));
  if (waitedOn.length > 0) parts.push(`waited on ${waitedOn.join(', ')}`);
  if (span.kind === 'deliver' || (span.kind === 'invoke_agent' && span.status !== 'succeeded')) parts.push(span.status);
  return parts.filter(Boolean).join(' · ');
}

function Label({ span }: { span: TraceSpanAnswer }) {
  return html`<div class="wf-label" style=${{ paddingLeft: `${span.depth * 1.1 + 0.3}em` }} title=${JSON.stringify(span.attributes, null, 1)}>
    <b>${span.name}</b>
    ${span.kind === 'invoke_agent' && span.sessionKey && html` <a class="muted" href=${`#/session/${enc(span.sessionKey)}`}>${span.sessionKey}</a>`}
    ${span.kind === 'remote' && html` <span class="muted" data-testid="remote">span ${span.spanId} (another gateway's or a remote caller's)</span>`}
    ${span.kind === 'board_task' && html` <a class="muted" href=${`#/board/${enc(String(span.attributes['switchboard.board.task'] ?? ''))}`}>task</a>`}
  </div>`;
}

function Bar({
  span,
  trace,
  now,
  segments,
  waitedOn,
}: {
  span: TraceSpanAnswer;
  trace: TraceAnswer;
  now: number;
  segments: TraceSpanAnswer[];
  waitedOn: string[];
}) {
  const { x, width } = place(span, trace, now);
  const text = figures(span, waitedOn);
  // The figures go on the side of the bar with more room; over the bar's start when neither side has much.
  const room = { after: 100 - x - width, before: x };
  const side = room.after >= 30 || room.after >= room.before ? 'after' : room.before >= 30 ? 'before' : 'over';
  const at = { after: { x: x + width, dx: 4, anchor: 'start' }, before: { x, dx: -4, anchor: 'end' }, over: { x, dx: 4, anchor: 'start' } }[
    side
  ];
  return html`<svg class="wf-track" role="img" aria-label=${`${span.name}: ${text}`}>
    <rect class="wf-bar" x=${`${x}%`} y="4" width=${`${width}%`} height="14" rx="2" data-testid="bar" />
    ${segments.map((segment) => {
      const work = place(segment, trace, now);
      return html`<rect class="wf-work" x=${`${work.x}%`} y="4" width=${`${work.width}%`} height="14" />`;
    })}
    <text class="wf-text" x=${`${at.x}%`} dx=${at.dx} y="15" text-anchor=${at.anchor} data-testid="figures">${text}</text>
  </svg>`;
}

/** The time axis: the trace's start, a few marks, and its length. */
function Axis({ trace }: { trace: TraceAnswer }) {
  const total = trace.end - trace.start;
  return html`<div class="wf-row wf-axis">
    <div class="wf-label muted">${time(trace.start)}</div>
    <svg class="wf-track">
      ${[0, 25, 50, 75, 100].map(
        (mark) => html`<line x1=${`${mark}%`} x2=${`${mark}%`} y1="14" y2="22" />
          <text x=${`${mark}%`} y="11" text-anchor=${mark === 0 ? 'start' : mark === 100 ? 'end' : 'middle'}>${mark === 0 ? '0' : `+${duration((total * mark) / 100)}`}</text>`,
      )}
    </svg>
  </div>`;
}

export function Waterfall({ trace, now }: { trace: TraceAnswer; now: number }) {
  const byParent = new Map<string, TraceSpanAnswer[]>();
  for (const span of trace.spans)
    if (span.parentSpanId) byParent.set(span.parentSpanId, [...(byParent.get(span.parentSpanId) ?? []), span]);
  const agents = [...new Set(trace.spans.flatMap((span) => (span.agentId ? [span.agentId] : [])))];
  const hue = (agentId: string | null) => (agentId ? HUES[agents.indexOf(agentId) % HUES.length] : 215);
  return html`<div class="waterfall" data-testid="waterfall">
    <${Axis} trace=${trace} />
    ${trace.spans.map((span) => {
      const children = span.spanId ? (byParent.get(span.spanId) ?? []) : [];
      // A run's model calls are drawn dark on its bar: the light rest is where it waited (on its tools, on other agents).
      const segments = span.kind === 'invoke_agent' ? children.filter((child) => child.kind === 'chat') : [];
      // A tool call that did not end before the run it started did (a waited send; not a spawn, nor a send that did not wait).
      const waited = (child: TraceSpanAnswer) =>
        child.kind === 'invoke_agent' && (span.end === null || (child.end !== null && child.end <= span.end));
      const waitedOn = span.kind === 'execute_tool' ? [...new Set(children.filter(waited).map((child) => child.agentId ?? '?'))] : [];
      const classes = [
        'wf-row',
        `kind-${span.kind}`,
        span.spanId && span.spanId === trace.focusSpanId ? 'focus' : '',
        waitedOn.length > 0 ? 'waited' : '',
        span.end === null ? 'open' : '',
      ];
      return html`<div class=${classes.filter(Boolean).join(' ')} style=${{ '--agent-hue': String(hue(span.agentId)) }} data-testid="span" data-kind=${span.kind} data-agent=${span.agentId ?? ''}>
        <${Label} span=${span} />
        <${Bar} span=${span} trace=${trace} now=${now} segments=${segments} waitedOn=${waitedOn} />
      </div>`;
    })}
  </div>`;
}

/** `#/trace/<traceId>`, or `#/trace?input=<id>` (also `run`, `subagent`, `task`). */
export function TracePage({ traceId, query }: { traceId?: string; query: string }) {
  const [trace, setTrace] = useState<TraceAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  const path = traceId ? `/v1/traces/${enc(traceId)}` : `/v1/traces?${query}`;
  useLive(
    {
      query: { type: 'run.' },
      resumeKey: `trace:${traceId ?? query}`,
      // Read again while a span goes on (a run, a delivery): a finished trace does not change.
      refresh: () =>
        trace && !trace.spans.some((span) => span.end === null)
          ? undefined
          : api<TraceAnswer>(path).then(
              (answer) => {
                setTrace(answer);
                setNow(Date.now());
                setError(null);
              },
              (failure: Error) => setError(failure.message),
            ),
      everyMs: 1000,
    },
    [path, trace === null || trace.spans.some((span) => span.end === null)],
  );
  if (error && !trace) return html`<p class="error" data-testid="trace-error">${error}</p>`;
  if (!trace) return html`<p>Loading…</p>`;
  const { totals } = trace;
  return html`
    <h1>Trace <code data-testid="trace-id">${trace.traceId}</code></h1>
    <p data-testid="trace-summary">
      ${trace.runs} run${trace.runs === 1 ? '' : 's'} · ${duration(trace.end - trace.start)} · ${totals.inputTokens}+${totals.outputTokens} tokens ·
      ${totals.cost === null ? ' cost unknown (a model is unpriced)' : ` $${totals.cost.toFixed(4)}`} · started ${time(trace.start)}
    </p>
    ${trace.clipped && html`<p class="warn">This trace has more runs than the view reads: the first ${trace.runs} are shown.</p>`}
    <p class="muted">A run's bar is dark while its model worked and light while it waited; an outlined tool call waited on another agent's run. Hover a name for its attributes.</p>
    <${Waterfall} trace=${trace} now=${now} />
  `;
}
